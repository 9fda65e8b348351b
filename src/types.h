/* types.h — the main structures of mmalloc.  Read this file first.
 *
 * Glossary (bottom layer first):
 *
 *   datablock    4 KiB of address space, the unit the local heaps manage
 *                (MM_PAGE_SIZE; the Mmalloc paper's "datablock").
 *   slot         128 MiB of address space, aligned to its size, owned by one
 *                local heap.  Its management area holds the slot header, the
 *                page map and the extent descriptors; its data area holds
 *                nothing but user data.  The slot table maps the high bits of
 *                any address to the slot's owner, so free() knows from the
 *                pointer alone whether the memory is ours.
 *   page map     per slot, one uint32 per datablock: where the descriptor of
 *                the extent that covers it lies (exact for every datablock of a page,
 *                and for the first and last datablock of other extents).
 *   extent       a run of datablocks inside one slot, described by an
 *                extent_t in the slot's management area.  An extent is FREE
 *                (a node of its local heap's interval tree), a PAGE (small
 *                objects of one size class, owned by a thread heap), LARGE
 *                (one block handed to the user), or CACHED (a free page
 *                block parked in the local heap's page cache).
 *   huge block   a block bigger than MM_HUGE_MIN: a slot-aligned mapping of
 *                its own laid out like a slot with one LARGE extent.
 *   local heap   one of C (= number of CPUs): an interval tree of free
 *                extents over its slots, a cache of free page blocks, the
 *                pages abandoned by exited threads, and a lock.  There is no
 *                global heap.
 *   thread heap  per thread: size-class page queues for the malloc/free fast
 *                path (no lock, no atomic read-modify-write), an inbox for
 *                blocks other threads free, and outgoing batches of blocks
 *                this thread frees on behalf of others.
 *   block        one small object inside a page.  While free, its first two
 *                words are the free-list link and a canary (its address xor
 *                a per-process secret) that catches double frees.
 */
#ifndef MM_TYPES_H
#define MM_TYPES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic.h"
#include "config.h"
#include "interval_tree.h"

struct thread_heap_s;
struct local_heap_s;

/* A free small object.  Both words belong to the user once the block is
 * handed out; malloc clears the canary word so that only a free can set it. */
typedef struct block_s {
  struct block_s *next;
  uintptr_t canary; /* (uintptr_t)block ^ mm_canary_key while free */
} block_t;

typedef enum extent_kind_e {
  MM_EXTENT_UNUSED = 0, /* descriptor on its slot's free list */
  MM_EXTENT_FREE,       /* node of the local heap's interval tree */
  MM_EXTENT_PAGE,       /* small objects of one class */
  MM_EXTENT_LARGE,      /* one user block */
  MM_EXTENT_CACHED,     /* free page block in the local heap's page cache */
} extent_kind_t;

/* Page ownership.  A page owned by a thread carries two names of it:
 * xowner, its thread heap (where remote frees go), and xowner_tid, the
 * thread's id (its thread pointer, one instruction to read) which the free
 * fast path compares.  xowner_tid has MM_OWNER_FULL set while the page has no
 * free block (it then sits on the heap's full list, and the owner's free
 * fast path misses on purpose, to put it back in its queue).  Both are 0
 * while the page is abandoned (its thread exited; its home local heap's lock
 * guards it). */
#define MM_OWNER_FULL ((uintptr_t)1)
/* Set in every xowner_tid while the fast paths are off (secure mode,
 * valgrind): no thread id has it, so the free fast path always misses. */
#define MM_OWNER_SLOW ((uintptr_t)2)

/* The descriptor of an extent: three cache lines, in the slot's management
 * area, never next to user data.
 *
 * Who touches what:
 *   line 0, PAGE:   the owner thread (free, local_free, used); xlimit:
 *                   written by the owner, read by any thread (relaxed);
 *                   xowner, xowner_tid: any thread reads (relaxed), written by
 *                   the owner or under the home heap's lock; page_start,
 *                   magic, block_size: const while the extent is a page.
 *   line 1:         kind: home heap's lock (or the owner as it turns its
 *                   page); PAGE reserved, capacity, size_class, idle: owner;
 *                   FREE/CACHED flags, freed_at, dirty: home heap's lock;
 *                   next/prev: the owner (page queues) or the lock.
 *   line 2:         node.start, node.npages: const while in use; the tree
 *                   links: home heap's lock.
 *
 * Page invariant: used + |free| + |local_free| == reserved <= capacity and
 * xlimit == reserved * block_size; blocks in other threads' outgoing batches
 * or in the owner's inbox still count as used.
 */
typedef struct extent_s {
  /* line 0: the page fast paths */
  block_t *free;                 /* blocks malloc hands out next */
  block_t *local_free;           /* blocks the owner freed since the last refill */
  _Atomic(uintptr_t) xowner_tid; /* owner's thread id | MM_OWNER_FULL, or 0 */
  uintptr_t page_start;          /* == node.start, kept on this line for free() */
  _Atomic(uint64_t) xlimit;      /* bytes carved so far, from page_start */
  uint64_t magic;                /* ceil(2^64 / block_size): divisibility test */
  uint32_t used;                 /* blocks handed out and not freed back */
  uint32_t block_size;
  _Atomic(struct thread_heap_s *) xowner; /* owning thread heap, or NULL */
  /* line 1 */
  uint32_t reserved; /* blocks carved so far (lazy extension) */
  uint32_t capacity; /* blocks that fit in the page */
  uint8_t kind;      /* extent_kind_t */
  uint8_t size_class;
  uint8_t flags;     /* MM_EXTENT_ZERO, MM_EXTENT_GUARD */
  uint8_t idle;      /* PAGE: heartbeats in a row it was seen empty */
  uint32_t freed_at; /* FREE/CACHED: when it became free, ms */
  struct extent_s *next; /* page queue / full list / abandoned / cache */
  struct extent_s *prev;
  uint32_t dirty;    /* FREE/CACHED: pages that may be resident (<= npages) */
  uint32_t unused_line1[7];
  /* line 2 */
  itree_node_t node; /* node.start, node.npages: the extent, for every kind */
  uint64_t reserved_line2[2];
} extent_t;

/* extent_t.flags */
#define MM_EXTENT_ZERO 2u  /* every byte reads as zero (fresh or purged) */
#define MM_EXTENT_GUARD 4u /* PAGE/LARGE/CACHED: its last datablock is a guard */
#define MM_EXTENT_UNMAPPED 8u /* FREE: its address space was given back (munmap) */

_Static_assert(sizeof(extent_t) == 192, "extent descriptor is three lines");
_Static_assert(offsetof(extent_t, xowner) + sizeof(void *) == 64,
               "the free fast path reads only line 0");

/* The slot header, at the start of the slot's management area:
 *
 *   slot base (128 MiB aligned)
 *   +0        slot_t (its first 64 bytes are always zero)   1 datablock
 *   +4 KiB    uint32_t page_map[MM_SLOT_PAGES]            128 KiB
 *   +132 KiB  extent_t extents[MM_SLOT_EXTENTS]           1.5 MiB
 *   +2 MiB    data area ......................................... 126 MiB
 *
 * page_map[i] is the byte offset from the slot base of the extent covering
 * datablock i, or 0.  An offset of 0 names the slot header's zero prefix,
 * which reads as an extent with no owner, so the free fast path can follow
 * any entry without a test and still miss.
 * The management area is committed (made read-write) on reservation; the
 * data area is committed from the bottom up, to `committed`. */
typedef struct slot_s {
  uint64_t zero[8];   /* reads as an unowned extent's line 0 */
  uint32_t heap;      /* owning local heap, const */
  uint32_t huge;      /* 1 for a huge block's own mapping, const */
  uintptr_t size;     /* bytes reserved (MM_SLOT_SIZE, or more when huge) */
  uintptr_t committed;/* data area is read-write below base + committed */
  extent_t *desc_free;/* descriptor free list */
  uint32_t desc_top;  /* descriptors ever handed out */
  uint32_t desc_used; /* descriptors in use */
  uint32_t holes;     /* some free extents were unmapped in place: commit
                         exactly what is carved, not a prefix */
  struct slot_s *next;/* the heap's slot list */
} slot_t;

#define MM_SLOT_MAP_OFFSET ((uintptr_t)4096)
#define MM_SLOT_EXTENTS_OFFSET \
  ((MM_SLOT_MAP_OFFSET + MM_SLOT_PAGES * sizeof(uint32_t) + 63) & ~(uintptr_t)63)
_Static_assert(sizeof(slot_t) <= 4096, "slot header fits its datablock");
_Static_assert(MM_SLOT_EXTENTS_OFFSET + MM_SLOT_EXTENTS * sizeof(extent_t) <=
                   MM_SLOT_META_SIZE,
               "management area fits before the data area");

/* Slot table entries (one byte per slot-sized piece of address space). */
#define MM_SLOT_NONE 0      /* not mmalloc's */
#define MM_SLOT_HEAP 1      /* a local heap's slot */
#define MM_SLOT_HUGE 2      /* first slot of a huge block's mapping */
#define MM_SLOT_HUGE_TAIL 3 /* the rest of it */
#define MM_SLOT_HUGE_AT 4   /* a huge block starts at this slot's first byte
                               (alignment >= MM_SLOT_SIZE); header one slot below */

/* A size class: objects of `size` bytes in pages of `npages` datablocks. */
typedef struct size_class_s {
  uint32_t size;
  uint32_t npages;
  uint32_t capacity;
  uint32_t align; /* largest power of two dividing size (block alignment) */
  uint64_t magic; /* ceil(2^64 / size) */
} size_class_t;

/* A doubly linked list of pages (extent_t.next/prev). */
typedef struct page_queue_s {
  extent_t *first;
  extent_t *last;
} page_queue_t;

/* Blocks freed by this thread into another thread's pages, waiting to be
 * handed to that thread's inbox as one chain. */
typedef struct remote_batch_s {
  struct thread_heap_s *dest;
  block_t *head[MM_LANES]; /* block i of the batch is on lane i % MM_LANES */
  block_t *tail[MM_LANES];
  uint32_t count;
} remote_batch_t;

typedef enum thread_heap_state_e {
  MM_THREAD_LIVE = 1,
  MM_THREAD_DEAD, /* its thread exited; waits in its local heap for reuse */
} thread_heap_state_t;

/* A thread heap.  Its owner thread touches it freely on the fast paths;
 * its slow paths hold xlock.  Another thread touches it only through xinbox[]
 * (push a chain), xactive_ms (read), and, holding xlock, `full` and the
 * pages on it (thread_heap.c: taking over an idle heap's full pages); once
 * the heap is dead, under its local heap's lock.
 *
 * Invariants (owner):
 *   direct[k] is the first page of queue[class of 16k] or &mm_page_empty;
 *   every page in queue[c] has class c, xowner == this heap, xowner_tid ==
 *   tid; every page on `full` has xowner == this heap and xowner_tid ==
 *   tid | MM_OWNER_FULL. */
typedef struct thread_heap_s {
  extent_t *direct[MM_DIRECT_SLOTS];
  uintptr_t tid; /* the owner thread's id (mm_thread_id()) */
  page_queue_t queue[MM_CLASSES];
  page_queue_t full;
  _Atomic(block_t *) xinbox[MM_LANES]; /* any thread pushes chains; owner takes all */
  _Atomic(uint32_t) xactive_ms; /* when the owner last ran a slow path */
  _Atomic(uint32_t) xlock;      /* owner's slow paths; a taker of its full pages */
  remote_batch_t out[MM_REMOTE_BUCKETS];
  struct local_heap_s *local;
  struct thread_heap_s *next_in_local; /* all heaps of the local heap */
  struct thread_heap_s *next_dead;     /* the local heap's reuse list */
  uint32_t state;                      /* thread_heap_state_t */
  uint32_t slow_calls;
  uint32_t last_beat_ms;
  /* Under valgrind only: small blocks freed by this thread, oldest first,
   * kept from reuse so that memcheck still sees a late use after free */
  block_t *quarantine_first, *quarantine_last;
  size_t quarantine_bytes;
} thread_heap_t;

/* A local heap.  Everything is guarded by `lock` except xpurge_at.
 *
 * Invariants (under lock):
 *   the tree holds every FREE extent of the heap's slots, coalesced: no two
 *   free extents touch;
 *   dirty_pages == sum of dirty over FREE and CACHED extents (an upper bound
 *   on their resident pages: a freed extent counts whole, a merge adds, a
 *   carve gives each remainder at most its size);
 *   xpurge_at == 0 iff dirty_pages == 0, else the time (ms) at which the
 *   oldest dirty extent becomes due for purging. */
typedef struct local_heap_s {
  pthread_mutex_t lock;
  uint32_t index;
  uint32_t nslots;
  itree_t tree;
  slot_t *slots;
  page_queue_t cache;                   /* CACHED page blocks, newest first */
  uint32_t cache_count;
  page_queue_t huge_cache;              /* freed huge mappings (CACHED), newest first */
  uint32_t huge_cache_count;
  page_queue_t abandoned[MM_CLASSES];   /* pages of exited threads */
  thread_heap_t *threads;               /* every thread heap bound here */
  thread_heap_t *dead;                  /* dead ones, ready for reuse */
  /* Counts mirrored for lock-free peeks (written under lock, read by any
   * thread, relaxed: a stale zero only delays the work to the next look). */
  _Atomic(uint64_t) xabandoned_classes; /* bit c: abandoned[c] is not empty */
  _Atomic(uint32_t) xdead;              /* heaps on the dead list */
  _Atomic(uint32_t) xhuge_cached;       /* entries in huge_cache */
  _Atomic(uint32_t) xcached;            /* cache_count */
  _Atomic(uint64_t) xpages_taken_over;  /* stats: full pages taken from idle threads */
  size_t dirty_pages;
  _Atomic(uint64_t) xpurge_at; /* 0, or (1 << 32) | deadline in ms */
  char *meta_next;             /* bump allocator for thread heaps */
  size_t meta_left;
  /* statistics (under lock) */
  uint64_t large_allocs, large_frees, large_live_bytes;
  uint64_t realloc_in_place, realloc_moved;
  uint64_t purged_bytes, purges;
  uint64_t pages_out, pages_back;
  uint64_t huge_allocs, huge_live_bytes;
} __attribute__((aligned(MM_CACHE_LINE))) local_heap_t;

#endif
