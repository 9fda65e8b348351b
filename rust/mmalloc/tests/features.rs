//! The crate's features, checked from inside a program built with them
//! (make test runs `cargo test` twice: default features, and
//! `--features secure,override`).

use mmalloc::MmAlloc;

#[global_allocator]
static GLOBAL: MmAlloc = MmAlloc;

fn option(name: &str) -> i64 {
    mmalloc::option_get(name).expect("a known option")
}

/// With `override`, C code in the same program (here, the C library's own
/// `malloc` symbol as a C caller sees it) allocates from mmalloc.
#[cfg(feature = "override")]
#[test]
fn override_makes_c_malloc_mmallocs() {
    extern "C" {
        fn malloc(size: usize) -> *mut u8;
        fn free(p: *mut u8);
    }
    unsafe {
        let p = malloc(100);
        assert!(!p.is_null());
        // aborts with a one-line error if p were not mmalloc's
        assert!(mmalloc::usable_size(p) >= 100);
        free(p);
    }
}

/// Without `override`, the crate exports only the mm_ API: C code keeps
/// the C library's malloc, which mmalloc does not know.
#[cfg(not(feature = "override"))]
#[test]
fn without_override_c_malloc_is_the_c_librarys() {
    extern "C" {
        fn malloc(size: usize) -> *mut u8;
        fn free(p: *mut u8);
        fn malloc_usable_size(p: *mut u8) -> usize;
    }
    unsafe {
        let p = malloc(100);
        assert!(!p.is_null());
        assert!(malloc_usable_size(p) >= 100); // glibc's, answering for its own block
        free(p);
    }
    let json = mmalloc::stats_json();
    assert!(json.contains("\"secure\":"), "the options are in the statistics");
}

#[test]
fn secure_feature_is_the_secure_build() {
    // MMALLOC_SECURE at run time can switch the checks on in any build; the
    // feature compiles them in, which the option then reports as on.
    if cfg!(feature = "secure") {
        assert_eq!(option("secure"), 1, "built with --features secure");
    } else if std::env::var_os("MMALLOC_SECURE").is_none() {
        assert_eq!(option("secure"), 0);
    }
    let v: Vec<u64> = (0..100_000).collect();
    assert_eq!(v.iter().sum::<u64>(), 4_999_950_000);
}
