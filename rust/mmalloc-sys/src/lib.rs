//! Raw bindings to mmalloc, a memory allocator for many-core machines,
//! built from source by this crate's build script (a C compiler is all it
//! needs). Use the `mmalloc` crate for a `#[global_allocator]` and safe
//! wrappers; this crate only declares the C API of `include/mmalloc.h`.
//!
//! Every function is the allocator's own `mm_`-prefixed name, which never
//! clashes with the C library's `malloc`; with the `override` feature the
//! static library also defines the malloc family and the C++ operators, so
//! that C and C++ code in the same program allocate from mmalloc too.
#![no_std]

use core::ffi::{c_char, c_int, c_long, c_void};

/// The version of the C sources this crate builds (major, minor, patch).
pub const MM_VERSION_MAJOR: u32 = 0;
pub const MM_VERSION_MINOR: u32 = 1;
pub const MM_VERSION_PATCH: u32 = 0;

/// The memory picture in bytes (`mm_memory_t`; the JSON total's `*_bytes`
/// of the same names, and its `reserved` and `committed`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub struct mm_memory_t {
    pub live: usize,
    pub resident: usize,
    pub free_resident: usize,
    pub page_slack: usize,
    pub metadata: usize,
    pub huge_live: usize,
    pub returned: usize,
    pub reserved: usize,
    pub committed: usize,
}

extern "C" {
    pub fn mm_malloc(size: usize) -> *mut c_void;
    pub fn mm_calloc(count: usize, size: usize) -> *mut c_void;
    pub fn mm_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    pub fn mm_reallocarray(p: *mut c_void, count: usize, size: usize) -> *mut c_void;
    pub fn mm_free(p: *mut c_void);
    pub fn mm_posix_memalign(out: *mut *mut c_void, alignment: usize, size: usize) -> c_int;
    pub fn mm_aligned_alloc(alignment: usize, size: usize) -> *mut c_void;
    pub fn mm_memalign(alignment: usize, size: usize) -> *mut c_void;
    pub fn mm_malloc_usable_size(p: *const c_void) -> usize;
    /// Collect this thread's pending remote frees and give every heap's free
    /// memory back to the OS now.
    pub fn mm_collect();
    /// Statistics on stderr.
    pub fn mm_stats_print();
    /// Statistics as one JSON object; returns the length needed (without the
    /// NUL), as `snprintf` does.
    pub fn mm_stats_json(buf: *mut c_char, size: usize) -> usize;
    /// The memory picture as numbers (walks every heap's pages).
    pub fn mm_memory(out: *mut mm_memory_t);
    /// 0, or `EINVAL` / `EBUSY`.
    pub fn mm_option_set(name: *const c_char, value: c_long) -> c_int;
    /// The value in force, or -1 for an unknown name.
    pub fn mm_option_get(name: *const c_char) -> c_long;
    /// major * 10000 + minor * 100 + patch of the library linked.
    pub fn mm_version() -> c_int;
}
