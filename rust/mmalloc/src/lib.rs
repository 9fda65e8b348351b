//! mmalloc as Rust's global allocator.
//!
//! ```
//! #[global_allocator]
//! static GLOBAL: mmalloc::MmAlloc = mmalloc::MmAlloc;
//! # fn main() { let v = vec![1u8; 1 << 20]; assert_eq!(v.len(), 1 << 20); }
//! ```
//!
//! mmalloc is built from its C sources by the `mmalloc-sys` crate (a C
//! compiler is all it needs) and linked statically; its internal names are
//! local to it, so it lives beside any other C code. Per-thread heaps serve
//! the common sizes without a lock or an atomic read-modify-write; a block
//! freed by another thread goes back to its owner in batches; `realloc`
//! grows large buffers in place, and buffers past 1 MiB by `mremap`, without
//! a copy. Free memory goes back to the OS a purge delay (100 ms) after it
//! went idle, even if the program makes no further call.
//!
//! Besides the allocator: [`stats_json`] (what the allocator holds, per
//! local heap), [`collect`] (give free memory back now), [`option_set`] /
//! [`option_get`] (the run-time options of the C library's
//! `MMALLOC_*` environment variables) and [`version`].
//!
//! Features: `secure` builds the hardened allocator; `override` also
//! exports the C `malloc` family and the C++ operators, so that C and C++
//! code linked into the same program allocates from mmalloc too.
#![no_std]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use core::alloc::{GlobalAlloc, Layout};
use core::ffi::{c_char, c_void};
use core::ptr;

pub use mmalloc_sys as sys;

/// Every block mmalloc hands out is aligned to at least this.
const MIN_ALIGN: usize = 16;

/// The global allocator. `#[global_allocator] static GLOBAL: MmAlloc = MmAlloc;`
#[derive(Clone, Copy, Debug, Default)]
pub struct MmAlloc;

unsafe impl GlobalAlloc for MmAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= MIN_ALIGN {
            sys::mm_malloc(layout.size()) as *mut u8
        } else {
            sys::mm_aligned_alloc(layout.align(), layout.size()) as *mut u8
        }
    }

    /// Through calloc where the alignment allows: memory that is fresh from
    /// the OS is known to be zero and is not cleared again.
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= MIN_ALIGN {
            sys::mm_calloc(1, layout.size()) as *mut u8
        } else {
            let p = sys::mm_aligned_alloc(layout.align(), layout.size()) as *mut u8;
            if !p.is_null() {
                ptr::write_bytes(p, 0, layout.size());
            }
            p
        }
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, _layout: Layout) {
        sys::mm_free(p as *mut c_void);
    }

    /// mmalloc's realloc where the alignment allows (large blocks grow in
    /// place, buffers past 1 MiB by mremap); a block aligned beyond 16
    /// bytes stays where it is while it fits, else moves to a new block of
    /// the same alignment.
    #[inline]
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= MIN_ALIGN {
            return sys::mm_realloc(p as *mut c_void, new_size) as *mut u8;
        }
        if new_size <= sys::mm_malloc_usable_size(p as *const c_void) {
            return p;
        }
        let q = sys::mm_aligned_alloc(layout.align(), new_size) as *mut u8;
        if !q.is_null() {
            ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
            sys::mm_free(p as *mut c_void);
        }
        q
    }
}

/// The allocator's statistics as one JSON object: per local heap and in
/// total the bytes live, resident and returned to the OS, the parts of the
/// overhead and the counters behind them; the purge thread; the cgroup.
pub fn stats_json() -> String {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let cap = buf.capacity().max(4096);
        buf.reserve(cap);
        let cap = buf.capacity();
        let need = unsafe { sys::mm_stats_json(buf.as_mut_ptr() as *mut c_char, cap) };
        if need < cap {
            unsafe { buf.set_len(need) };
            return String::from_utf8_lossy(&buf).into_owned();
        }
        buf.reserve(need + 1);
    }
}

/// The memory picture in bytes: live (blocks handed out), resident (live
/// plus free_resident, page_slack and metadata), huge_live (of live, the
/// blocks in mappings of their own), returned (to the OS since start-up),
/// reserved and committed address space. The same numbers as the
/// statistics' total; reading them walks every heap's pages, so sample
/// them, do not read them per allocation.
pub type Memory = sys::mm_memory_t;

/// The memory picture now (see [`Memory`]).
pub fn memory() -> Memory {
    let mut m = Memory::default();
    unsafe { sys::mm_memory(&mut m) };
    m
}

/// Print the statistics table on stderr (what `MMALLOC_STATS=1` prints at exit).
pub fn stats_print() {
    unsafe { sys::mm_stats_print() }
}

/// Collect this thread's pending remote frees and give every heap's free
/// memory back to the OS now, ignoring the purge delay.
pub fn collect() {
    unsafe { sys::mm_collect() }
}

/// Why [`option_set`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionError {
    /// An unknown name, a name longer than 63 bytes, or a value out of range.
    Invalid,
    /// `heaps` and `secure` are fixed at start-up (set them in the
    /// environment: `MMALLOC_HEAPS`, `MMALLOC_SECURE`).
    Fixed,
}

fn c_name(name: &str, buf: &mut [u8; 64]) -> Option<*const c_char> {
    let bytes = name.as_bytes();
    if bytes.len() >= buf.len() || bytes.contains(&0) {
        return None;
    }
    buf[..bytes.len()].copy_from_slice(bytes);
    buf[bytes.len()] = 0;
    Some(buf.as_ptr() as *const c_char)
}

/// Set a run-time option by name, as in the environment without the
/// `MMALLOC_` prefix: `"verbose"`, `"stats"`, `"hugepages"`,
/// `"purge_delay_ms"`, `"purge_thread_mib"`.
pub fn option_set(name: &str, value: i64) -> Result<(), OptionError> {
    let mut buf = [0u8; 64];
    let cname = c_name(name, &mut buf).ok_or(OptionError::Invalid)?;
    let value = core::ffi::c_long::try_from(value).map_err(|_| OptionError::Invalid)?;
    match unsafe { sys::mm_option_set(cname, value) } {
        0 => Ok(()),
        16 => Err(OptionError::Fixed), // EBUSY
        _ => Err(OptionError::Invalid),
    }
}

/// The value of an option in force, or None for an unknown name.
pub fn option_get(name: &str) -> Option<i64> {
    let mut buf = [0u8; 64];
    let cname = c_name(name, &mut buf)?;
    match unsafe { sys::mm_option_get(cname) } {
        -1 => None,
        v => Some(v as i64),
    }
}

/// The version of the mmalloc library linked: (major, minor, patch).
pub fn version() -> (u32, u32, u32) {
    let v = unsafe { sys::mm_version() } as u32;
    (v / 10000, v / 100 % 100, v % 100)
}

/// The bytes usable in a block this allocator handed out (at least the
/// size asked for).
///
/// # Safety
/// `p` must be a live block of this allocator: mmalloc reports anything
/// else on stderr and aborts.
pub unsafe fn usable_size(p: *const u8) -> usize {
    sys::mm_malloc_usable_size(p as *const c_void)
}
