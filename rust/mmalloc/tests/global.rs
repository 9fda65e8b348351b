//! mmalloc as the global allocator of a multithreaded program: every
//! allocation of this test binary (the test harness's own included) goes
//! through MmAlloc. Checks the bytes of every block it hands out.

use std::alloc::{GlobalAlloc, Layout};
use std::collections::HashMap;
use std::sync::mpsc;
use std::thread;

use mmalloc::MmAlloc;

#[global_allocator]
static GLOBAL: MmAlloc = MmAlloc;

fn live_bytes() -> u64 {
    let json = mmalloc::stats_json();
    let key = "\"total\":";
    let total = &json[json.find(key).expect("a total object") + key.len()..];
    let field = "\"live_bytes\":";
    let at = total.find(field).expect("total.live_bytes") + field.len();
    total[at..].chars().take_while(|c| c.is_ascii_digit()).collect::<String>().parse().unwrap()
}

#[test]
fn blocks_are_mmallocs() {
    let b = Box::new([7u8; 100]);
    // mm_malloc_usable_size aborts on a pointer mmalloc never handed out.
    let usable = unsafe { mmalloc::usable_size(b.as_ptr()) };
    assert!(usable >= 100);
    let before = live_bytes();
    let v: Vec<u64> = vec![3; 1 << 20];
    assert!(live_bytes() >= before + 8 * (1 << 20), "an 8 MiB vector shows in live_bytes");
    drop(v);
    assert_eq!(b[99], 7);
}

#[test]
fn cross_thread_frees_through_channels() {
    let (tx, rx) = mpsc::channel::<(u64, Vec<u64>, String, Box<[u8]>)>();
    let producers: Vec<_> = (0..4u64)
        .map(|t| {
            let tx = tx.clone();
            thread::spawn(move || {
                for i in 0..20_000u64 {
                    let n = (i * 7 + t) % 300 + 1;
                    let v: Vec<u64> = (0..n).map(|k| k ^ i ^ (t << 40)).collect();
                    let s = format!("t{}-{}", t, i);
                    let b = vec![(i % 251) as u8; (i % 5000) as usize + 1].into_boxed_slice();
                    tx.send(((t << 32) | i, v, s, b)).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let consumer = thread::spawn(move || {
        let mut seen = 0u64;
        let mut keep: HashMap<u64, Vec<u64>> = HashMap::new();
        for (id, v, s, b) in rx {
            let (t, i) = (id >> 32, id & 0xffff_ffff);
            assert_eq!(v.len() as u64, (i * 7 + t) % 300 + 1);
            assert!(v.iter().enumerate().all(|(k, &x)| x == (k as u64) ^ i ^ (t << 40)));
            assert_eq!(s, format!("t{}-{}", t, i));
            assert!(b.iter().all(|&x| x == (i % 251) as u8));
            if i % 10 == 0 {
                keep.insert(id, v); // freed later, by this thread, in another order
            }
            seen += 1;
        }
        assert_eq!(keep.len(), 4 * 2_000);
        seen
    });
    for p in producers {
        p.join().unwrap();
    }
    assert_eq!(consumer.join().unwrap(), 80_000);
}

#[test]
fn large_reallocs_keep_their_bytes() {
    let mut v: Vec<u8> = Vec::new();
    let mut len = 0usize;
    while len < (96 << 20) {
        let grow = len.max(4096);
        v.extend((0..grow).map(|k| ((len + k) % 253) as u8));
        len += grow;
        // spot checks: the start, the old end, the new end
        for &at in &[0, len / 2, len - 1, len - grow] {
            assert_eq!(v[at], (at % 253) as u8);
        }
    }
    assert!(v.iter().enumerate().step_by(4093).all(|(k, &x)| x == (k % 253) as u8));
    v.truncate(1000);
    v.shrink_to_fit();
    assert!(v.iter().enumerate().all(|(k, &x)| x == (k % 253) as u8));
}

#[test]
fn every_alignment() {
    let a = MmAlloc;
    for shift in 0..=22u32 {
        let align = 1usize << shift;
        for &size in &[1usize, 7, align, 3 * align + 5, 100_000] {
            let layout = Layout::from_size_align(size, align).unwrap();
            unsafe {
                let p = a.alloc(layout);
                assert!(!p.is_null(), "alloc {} aligned {}", size, align);
                assert_eq!(p as usize % align, 0, "alloc {} aligned {}", size, align);
                std::ptr::write_bytes(p, 0xab, size);
                let z = a.alloc_zeroed(layout);
                assert_eq!(z as usize % align, 0);
                assert!(std::slice::from_raw_parts(z, size).iter().all(|&x| x == 0));
                let q = a.realloc(p, layout, size * 2 + 1);
                assert!(!q.is_null());
                assert_eq!(q as usize % align, 0, "realloc keeps alignment {}", align);
                assert!(std::slice::from_raw_parts(q, size).iter().all(|&x| x == 0xab));
                let layout2 = Layout::from_size_align(size * 2 + 1, align).unwrap();
                let r = a.realloc(q, layout2, (size / 2).max(1));
                assert_eq!(r as usize % align, 0);
                assert!(std::slice::from_raw_parts(r, (size / 2).max(1)).iter().all(|&x| x == 0xab));
                a.dealloc(r, Layout::from_size_align((size / 2).max(1), align).unwrap());
                a.dealloc(z, layout);
            }
        }
    }
    #[repr(align(4096))]
    struct Page([u8; 4096]);
    let pages: Vec<Box<Page>> = (0..64).map(|i| Box::new(Page([i as u8; 4096]))).collect();
    for (i, p) in pages.iter().enumerate() {
        assert_eq!(&**p as *const Page as usize % 4096, 0);
        assert!(p.0.iter().all(|&x| x == i as u8));
    }
}

#[test]
fn exhausted_memory_is_null_not_abort() {
    let a = MmAlloc;
    unsafe {
        let huge = Layout::from_size_align(isize::MAX as usize - 4096, 16).unwrap();
        assert!(a.alloc(huge).is_null());
        assert!(a.alloc_zeroed(huge).is_null());
        let big_aligned = Layout::from_size_align(isize::MAX as usize / 2, 1 << 20).unwrap();
        assert!(a.alloc(big_aligned).is_null());
        let small = Layout::from_size_align(64, 16).unwrap();
        let p = a.alloc(small);
        assert!(!p.is_null());
        assert!(a.realloc(p, small, isize::MAX as usize - 4096).is_null(), "realloc fails");
        *p = 5; // still ours after the failed realloc
        a.dealloc(p, small);
    }
    // the allocator still works
    let v = vec![1u32; 1000];
    assert_eq!(v.iter().sum::<u32>(), 1000);
}

#[test]
fn options_version_and_collect() {
    assert_eq!(mmalloc::version(), (mmalloc::sys::MM_VERSION_MAJOR, mmalloc::sys::MM_VERSION_MINOR,
                                    mmalloc::sys::MM_VERSION_PATCH));
    let before = mmalloc::option_get("purge_delay_ms").expect("a known option");
    assert_eq!(mmalloc::option_set("purge_delay_ms", 250), Ok(()));
    assert_eq!(mmalloc::option_get("purge_delay_ms"), Some(250));
    assert_eq!(mmalloc::option_set("purge_delay_ms", before), Ok(()));
    assert_eq!(mmalloc::option_set("no_such_option", 1), Err(mmalloc::OptionError::Invalid));
    assert_eq!(mmalloc::option_set("heaps", 3), Err(mmalloc::OptionError::Fixed));
    assert_eq!(mmalloc::option_get("no_such_option"), None);
    assert_eq!(mmalloc::option_get("bad\0name"), None);
    let v = vec![0u8; 64 << 20];
    drop(v);
    mmalloc::collect();
    let json = mmalloc::stats_json();
    assert!(json.starts_with('{') && json.ends_with('}'), "JSON: {}", &json[..json.len().min(80)]);
    assert!(json.contains("\"version\":\"0.1.0\""));
}

#[test]
fn memory_picture() {
    // tests run in threads of one process: other tests allocate meanwhile,
    // so only what this test holds is asserted
    let before = mmalloc::memory();
    assert_eq!(before.resident, before.live + before.free_resident + before.page_slack + before.metadata);
    let v: Vec<u8> = vec![1; 64 << 20];
    let held = mmalloc::memory();
    assert!(held.huge_live >= 64 << 20, "a 64 MiB vector is a huge block: {:?}", held);
    assert!(held.live >= held.huge_live && held.resident >= held.live);
    assert!(held.committed <= held.reserved || held.reserved == 0);
    drop(v);
    mmalloc::collect();
    let after = mmalloc::memory();
    assert!(after.returned >= held.returned + (64 << 20), "the freed vector is returned: {:?}", after);
}
