/* config.h — every compile-time knob of mmalloc, in one place.
 *
 * Layer: base (included by every layer through base.h).  Values that CMake
 * sets (MM_DEBUG, MM_SECURE, MM_VALGRIND, MM_FAULT_INJECTION) arrive as -D
 * definitions; the rest are fixed here with the reason for their value.
 */
#ifndef MM_CONFIG_H
#define MM_CONFIG_H

/* Debug level (debug.h): 0 none, 1 mm_assert (preconditions a caller
 * must meet), 2 also mm_assert_internal (the allocator's own logic) and the
 * lock witness (lock.h), 3 also mm_assert_expensive: whole-structure
 * checkers on entry and exit of mutators.  Corruption checks (bad pointer,
 * double free) are on at every level. */
#ifndef MM_DEBUG
#define MM_DEBUG 0
#endif
#if MM_DEBUG < 0 || MM_DEBUG > 3
#error "MM_DEBUG must be 0, 1, 2 or 3"
#endif
/* Locks record their holder and rank, and every acquisition is checked
 * against the rank order (lock.h). */
#define MM_WITNESS (MM_DEBUG >= 2)
#ifndef MM_SECURE
#define MM_SECURE 0
#endif
#ifndef MM_VALGRIND
#define MM_VALGRIND 0
#endif
#ifndef MM_FAULT_INJECTION
#define MM_FAULT_INJECTION 0
#endif

/* Built with a sanitizer (ASan, TSan, MSan): their shadow memory takes
 * fixed ranges of the address space, where mmalloc must not ask for its
 * slots (region.c). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define MM_SANITIZED 1
#endif
#endif
#ifndef MM_SANITIZED
#define MM_SANITIZED 0
#endif

/* ---- region ---------------------------------------------------------------
 * A datablock: 4 KiB, the OS page, and the unit the local heaps manage (the
 * interval tree counts extents in datablocks).  "Page" in mmalloc means
 * something else: an extent of small objects of one size class (page.h). */
#define MM_DATABLOCK_SHIFT 12
#define MM_DATABLOCK_SIZE ((size_t)1 << MM_DATABLOCK_SHIFT)

/* A slot: 128 MiB of address space, aligned to its size, owned by one local
 * heap for its whole life.  Large enough that blocks up to a quarter of it
 * (31.5 MiB) are extents of the tree and can grow in place; small enough
 * that a process under an RLIMIT_AS of a few hundred MiB can still reserve
 * one per heap.  The slot's first MM_SLOT_META_SIZE bytes are its management
 * area (header, extent map, extent descriptors); the data area follows,
 * 2 MiB aligned so that transparent huge pages can back it. */
#define MM_SLOT_SHIFT 27
#define MM_SLOT_SIZE ((uintptr_t)1 << MM_SLOT_SHIFT)
#define MM_SLOT_META_SIZE ((uintptr_t)2 << 20)
#define MM_SLOT_DATABLOCKS (MM_SLOT_SIZE >> MM_DATABLOCK_SHIFT)
#define MM_SLOT_DATA_DATABLOCKS ((MM_SLOT_SIZE - MM_SLOT_META_SIZE) >> MM_DATABLOCK_SHIFT)

/* User space on x86-64 and AArch64 (4-level tables) is 47/48 bits; the slot
 * table covers 48 bits and anything above is not ours. */
#define MM_ADDRESS_BITS 48
#define MM_SLOT_TABLE_SIZE ((size_t)1 << (MM_ADDRESS_BITS - MM_SLOT_SHIFT))

/* Extent descriptors per slot.  Every extent in use is at least one page and
 * every free extent touches an extent in use (coalescing), so a quarter of
 * the slot's pages is ample; running out only sends an allocation to another
 * slot. */
#define MM_SLOT_EXTENTS (MM_SLOT_DATABLOCKS / 4)

/* Blocks above this size get their own mapping ("huge"), freed by munmap and
 * grown by mremap. */
#define MM_HUGE_MIN ((MM_SLOT_SIZE - MM_SLOT_META_SIZE) / 4)

/* A block that realloc grows to this size or more, and that cannot grow
 * where it is, moves to a mapping of its own (a huge block) although it is
 * below MM_HUGE_MIN: from then on it grows by mremap, without a copy, and
 * what it leaves behind in its slot is small. */
#define MM_GROW_MAP_MIN ((size_t)1 << 20)
/* A growing block that reuses a freed huge mapping keeps the mapping's
 * resident pages behind it, as room to grow into, up to this many times its
 * size; a larger cached mapping is left for a larger block. */
#define MM_HUGE_KEEP 64
/* A block of MM_GROW_MAP_MIN or more below MM_HUGE_MIN takes the head of a
 * freed huge mapping of the huge cache with at most this many times its
 * size (the rest given back) instead of fresh memory of a slot: a program
 * that frees a 50 MiB buffer and then needs two of 25 MiB holds 50 MiB,
 * not 100, and faults in half. */
#define MM_HUGE_REUSE_ROOM 4

/* Local heaps: at most this many (MMALLOC_HEAPS is clamped to it). */
#define MM_MAX_HEAPS 512

/* ---- thread heap ----------------------------------------------------------
 * Size classes: 16-byte steps to 128 B, then four classes per power of two
 * (its quarters) up to 1 KiB, and five above it up to MM_SMALL_MAX: an
 * eighth above the power, then the quarters.  Programs often ask for a
 * power of two and a small header (sqlite's 4,104-byte pages and 1,032-byte
 * cells), which the quarters alone round up by a quarter.  A block that
 * realloc grows takes the quarters only (size_class_of_growing).  Above MM_SMALL_MAX,
 * blocks are extents of the local heap. */
#define MM_SMALL_MAX ((size_t)32 << 10)
#define MM_CLASSES 45
/* The first class above 1 KiB (1,152 B: an eighth above it). */
#define MM_CLASS_FINE 20
/* Sizes up to this are mapped to a page by one table lookup. */
#define MM_DIRECT_MAX 1024
#define MM_DIRECT_SLOTS (MM_DIRECT_MAX / 16 + 1)
/* Sizes above it, to MM_SMALL_MAX, are mapped to their class by one table
 * lookup in steps of this many bytes (every class size there is a
 * multiple of it: size_class.c checks). */
#define MM_MEDIUM_STEP 128
#define MM_MEDIUM_SLOTS (MM_SMALL_MAX / MM_MEDIUM_STEP + 1)
/* Blocks carved from a fresh page per refill: about one OS page's worth, so
 * a page's memory is touched only as it is used. */
#define MM_EXTEND_BYTES 4096
/* A thread's first page of a class that is cut from a recycled (resident)
 * page block keeps this much of it resident, and at least one block; the
 * rest goes back to the OS.  A thread that uses a class lightly would
 * otherwise hold up to 512 KiB of someone else's old memory for a few
 * blocks (98 threads of the pipeline workload held 9-17 MB that way).  Its
 * later pages of the class keep all: the class is in demand there, and the
 * page will fill.  But where most first pages are carved past that head
 * anyway, by their thread or by the thread that adopts them after it
 * exits, the given-back memory is faulted in again (short-lived threads
 * that each fill pages of many classes, as in mimalloc-bench's mleak:
 * 10 times the page faults).  So the process counts, over each window of
 * MM_PAGE_FIRST_WINDOW first pages, how many were carved past the head:
 * over half, and first pages keep all for the next window; else they keep
 * the head (thread_heap.c, first_page_trial). */
#define MM_PAGE_FIRST_KEEP ((size_t)16 << 10)
#define MM_PAGE_FIRST_WINDOW 64
/* Remote frees are batched per destination heap: a batch is handed over
 * with one CAS when it reaches this many blocks (or on the slow path). */
#define MM_REMOTE_BATCH 32
/* A thread that frees into a page without an owner (that of a thread that
 * exited), mostly free, of a class it does not allocate, adopts the page
 * when this many of its frees of that class in a row went into it; before,
 * each goes into the page under its local heap's lock
 * (thread_heap_free_abandoned). */
#define MM_ADOPT_FREES 16
/* A batch is built as this many chains (block i on lane i % MM_LANES) and
 * each thread heap has one inbox per lane: the owner walks the lanes side
 * by side, so that many cache misses on blocks last written by the freeing
 * thread are in flight at once instead of one (thread_heap.c). */
#define MM_LANES 4
#define MM_REMOTE_BUCKET_BITS 3
#define MM_REMOTE_BUCKETS (1u << MM_REMOTE_BUCKET_BITS)
/* A thread heap whose owner has not run a slow path for this long while
 * remote frees reach it is idle: a thread handing it a batch takes over
 * its full pages (thread_heap.c), so that memory a blocked thread allocated
 * is reused by the threads that free it. */
#define MM_IDLE_MS 20
/* Under valgrind: bytes of freed small blocks each thread keeps from reuse
 * (memcheck's own allocator keeps 20 MB: --freelist-vol). */
#define MM_VG_QUARANTINE_BYTES ((size_t)20 << 20)

/* A pool (or a heap's size class) that holds this much takes its next page
 * blocks 2 MiB at a time, at 2 MiB boundaries, advised as transparent huge
 * pages (unless MMALLOC_HUGEPAGES=0): one fault and one TLB entry for
 * 512 datablocks of a big pool's objects (pool.c). */
#define MM_POOL_HUGE_AFTER ((size_t)8 << 20)
#define MM_POOL_HUGE_BLOCK ((size_t)2 << 20)
/* A fresh transparent huge page whose first write takes this long (the
 * kernel clearing 2 MiB, and whatever the machine below it does first) is
 * slower than the 512 faults of 4 KiB pages it replaces (0.6-0.9 ms on the
 * project's VM): mmalloc then asks for no fresh huge pages for
 * MM_HUGE_PAGE_RECHECK_MS, and probes again after (os.c). */
#define MM_HUGE_PAGE_SLOW_US 1000
#define MM_HUGE_PAGE_RECHECK_MS 1000
/* Secure mode: bytes of page blocks given back by pools and heaps (release,
 * destroy, a heap's own block freed, a raw page block freed) held filled
 * before they go back to the page manager, so that a write after the
 * release is caught (pool.c: the release quarantine). */
#define MM_POOL_QUARANTINE_BYTES ((size_t)16 << 20)

/* Empty pages a thread heap keeps (bytes of page blocks, at most), instead of
 * sending each home to its local heap's page cache as soon as its last
 * block is freed: a thread that fills and empties the same few pages over
 * and over (a batch allocated, then freed) takes them back without its
 * local heap's lock.  Pages kept idle for two heartbeats go home. */
#define MM_THREAD_EMPTY_BYTES ((size_t)512 << 10)
/* A thread whose batches are bigger than that sends pages home and takes
 * as many back in its next round: each time it needs a page from its local
 * heap after sending one home for want of room, its own bound doubles, up
 * to this (Hoard's threadtest at 2 threads, 3.2 MB a round: 0.75x the
 * time); it falls back to MM_THREAD_EMPTY_BYTES when its kept pages go
 * home idle. */
#define MM_THREAD_EMPTY_MAX ((size_t)4 << 20)
/* ... but a bound grown past MM_THREAD_EMPTY_BYTES counts only up to this
 * divided by the live threads (4 MiB each up to 4 threads, 1 MiB at 16, no
 * growth from 32): with many threads the pages they hold add up (pipeline
 * at 32 threads: peak RSS 21 -> 25 MiB with 4 MiB each). */
#define MM_THREAD_EMPTY_GROWN_TOTAL ((size_t)16 << 20)
/* ... and across all threads at most this much: each thread's share is it
 * divided by the live threads, up to its own bound (512 KiB each up to 128
 * threads; 64 KiB each at 1024). */
#define MM_THREAD_EMPTY_TOTAL ((size_t)64 << 20)
/* Medium blocks (above MM_SMALL_MAX, up to MM_MEDIUM_DATABLOCKS) a thread
 * freed, kept by it (the stash, stash.c) for its next malloc of the
 * same datablocks: a thread that allocates and frees such blocks (zlib's
 * four 64 KiB deflate buffers per call, an I/O buffer) skips its local
 * heap's lock both ways.  At most this many, and this many bytes (four of
 * the largest); they go to the local heap at a heartbeat when none was
 * taken since the one before, at a malloc they cannot serve, and at the
 * thread's exit. */
#define MM_THREAD_STASH 4
#define MM_THREAD_STASH_BYTES ((size_t)512 << 10)
/* ... and all threads' stashes at most about this much: a thread's bound
 * is it divided by the live threads, up to MM_THREAD_STASH_BYTES (512 KiB
 * each up to 8 threads, 128 KiB at 32; a size is kept only where the
 * bound holds two of it, so no 64 KiB block from 33 threads on).  Many
 * threads that each keep a few buffers hold memory the others could use
 * (pipeline at 32 threads runs 98, 32 of them calling zlib). */
#define MM_THREAD_STASH_TOTAL ((size_t)4 << 20)

/* ---- local heap -----------------------------------------------------------
 * Free page blocks kept per local heap, by size, before they go back into the
 * tree (recycled without a tree operation). */
#define MM_PAGE_CACHE_MAX 16
/* Freed medium large blocks (up to MM_MEDIUM_DATABLOCKS) kept per local
 * heap as they are, newest first, for the next request of the same size:
 * a block that comes and goes (zlib's deflate state, an I/O buffer) skips
 * the tree's carve and coalescing.  They go back to the tree after the
 * purge delay, or when the cache is full (large.c). */
#define MM_MEDIUM_CACHE_MAX 8
/* Large blocks of up to this many datablocks (128 KiB: "medium") are carved
 * from slots of their own, apart from page blocks and bigger blocks: the
 * short-lived medium blocks of a busy program (zlib's 64 KiB deflate
 * buffers, allocated and freed on every call) otherwise split, by first
 * fit, the holes that long-lived megabyte buffers and page blocks left, and
 * those then take fresh memory (pipeline at 32 threads on the 2-core VM:
 * peak RSS 34.3 -> 27.6 MiB in make bench, 5 repetitions). */
#define MM_MEDIUM_DATABLOCKS 32
/* Large blocks (LARGE extents of a heap slot) start a rotating number of
 * cache lines into their extent, their colour: MM_COLOURS offsets,
 * MM_COLOUR_STEP bytes apart, below one datablock, each block's the one
 * MM_COLOUR_STRIDE on from its heap's last.  Blocks that all started on a
 * datablock would all map to the same sets of a cache indexed by the low
 * 12 address bits, and a loop over more of them at once than the cache has
 * ways (a stencil's or a merge's arrays) would miss on every line: 16
 * arrays of 1 MiB summed element by element ran 3 times slower than with
 * jemalloc's placement (bench/results/2026-12-08-cache-colour-vm).  A
 * block's colours are the offsets its extent's slack past it allows, up to
 * MM_COLOUR_ROOM: free, as the block then touches no page it would not
 * touch at offset 0.  A size of
 * MM_COLOUR_PAD_MIN or more whose slack is below MM_COLOUR_MIN_SLACK takes
 * one datablock more (large_datablocks: a power of two from 256 KiB gets
 * all MM_COLOURS), which costs a page of the block's resident memory, at
 * most a 64th; a smaller one keeps the colours its slack has (a power of
 * two below 256 KiB: none): with a page more, each freed 64 KiB string of
 * gcstrings held 17 resident pages instead of 16, and its peak RSS grew
 * 11%.  The datablocks of a size do not depend on its colour.
 * MMALLOC_CACHE_COLOUR=0 turns it off (every large block starts on a
 * datablock).  Huge blocks (mappings of their own) are not coloured. */
#define MM_COLOUR_STEP 64
#define MM_COLOURS (MM_DATABLOCK_SIZE / MM_COLOUR_STEP)
#define MM_COLOUR_ROOM ((MM_COLOURS - 1) * MM_COLOUR_STEP)
#define MM_COLOUR_MIN_SLACK 1024
#define MM_COLOUR_PAD_MIN ((size_t)256 << 10)
#define MM_COLOUR_STRIDE 23 /* odd: all MM_COLOURS colours come before one repeats */
_Static_assert(MM_COLOUR_PAD_MIN > ((size_t)MM_MEDIUM_DATABLOCKS << MM_DATABLOCK_SHIFT),
               "a medium size is never padded: its datablocks are its size rounded up");
/* Freed huge mappings kept per local heap for reuse (until the purge delay):
 * a program that frees a 60 MiB buffer and allocates another reuses its
 * resident pages instead of faulting in fresh ones. */
#define MM_HUGE_CACHE_MAX 4
/* ... and all heaps' huge caches together hold at most this share of the
 * memory the process may use (the machine's, or its cgroup's limit when
 * lower): a freed array of gigabytes goes back at once, as glibc's does,
 * instead of waiting out the purge delay while another allocation, or a
 * program checking the memory available (numpy's tests do), finds it
 * taken. */
#define MM_HUGE_CACHE_SHARE 16
/* Default purge delay: free memory idle this long is returned to the OS. */
#define MM_PURGE_DELAY_MS_DEFAULT 100
/* A big block that takes this many datablocks (1 MiB) or more of fresh
 * memory makes its heap give back as much of its free resident memory now,
 * from free extents with at least this much of it, instead of after the
 * delay: a program that frees a 30 MiB buffer and then needs three of
 * 10 MiB, which do not all fit where it lay, holds 30 MiB, not 40.  Below
 * it, a block's fresh memory is no more than a few faults, and the memory
 * it would give back is what the program's next blocks of that size reuse
 * (cover at 32 threads, its arrays growing to 1 MiB, faulted 20% more with
 * 128 KiB counted over many blocks). */
#define MM_GROWTH_PURGE_MIN 256
/* Free memory held (all heaps) that starts the purge thread (purger.c):
 * below it a program never has one; above it, what is freed goes back one
 * purge delay later even if no thread calls the allocator again. */
#define MM_PURGE_THREAD_MIB_DEFAULT 32
/* The cgroup's memory usage and limit are read at most this often (cgroup.c). */
#define MM_CGROUP_CHECK_MS 100
/* A thread that only frees into other threads' pages runs the heartbeat
 * every this many remote frees (it has no other slow path). */
#define MM_HEARTBEAT_CALLS 64
#define MM_HEARTBEAT_MS 10

#define MM_CACHE_LINE 64

_Static_assert((MM_LANES & (MM_LANES - 1)) == 0, "MM_LANES is a power of two");
_Static_assert(MM_REMOTE_BATCH >= MM_LANES, "a full batch has a block on every lane");
_Static_assert(MM_EXTEND_BYTES / 16 <= 65536, "page.c's shuffle indexes blocks in uint16_t");
_Static_assert((MM_HEARTBEAT_CALLS & (MM_HEARTBEAT_CALLS - 1)) == 0,
               "MM_HEARTBEAT_CALLS is a power of two (a mask, not a division)");

#endif
