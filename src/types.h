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
 *                pointer alone whether the memory is ours and whose it is.
 *   page map     per slot, one uint16 per datablock: the descriptor of the
 *                extent that covers it (exact for every datablock of a page,
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

/* xowner of a page: the owning thread heap's address, with MM_OWNER_FULL set
 * while the page has no free block (it then sits on the heap's full list and
 * the owner's free fast path misses on purpose, to put it back in its queue);
 * 0 while abandoned (its thread exited; the home local heap's lock guards it). */
#define MM_OWNER_FULL ((uintptr_t)1)

/* The descriptor of an extent: two cache lines, in the slot's management
 * area, never next to user data.
 *
 * Who touches what:
 *   line 0, PAGE:   owner thread only (free, local_free, used, reserved);
 *                   xowner: any thread reads (relaxed), written by the owner
 *                   or under the home heap's lock; block_size, capacity,
 *                   magic, size_class: const while the extent is a page.
 *   line 0, FREE/CACHED: flags, freed_at: home heap's lock.
 *   line 1:         node.start, node.npages: const while in use; tree links,
 *                   next/prev: home heap's lock or owner (page queues).
 *   kind:           home heap's lock (or the owner when it turns its page).
 *
 * Page invariant: used == capacity' - |free| - |local_free|, where capacity'
 * = reserved (blocks carved so far); blocks in other threads' outgoing
 * batches or in the owner's inbox are still counted as used.
 */
typedef struct extent_s {
  /* line 0: the page fast path */
  block_t *free;             /* blocks malloc hands out next */
  block_t *local_free;       /* blocks the owner freed since the last refill */
  _Atomic(uintptr_t) xowner; /* thread_heap_t* | MM_OWNER_FULL, or 0 */
  uint64_t magic;            /* 2^40 / block_size + 1: offset -> index */
  uintptr_t page_start;      /* == node.start, kept on this line for free() */
  uint32_t used;             /* blocks handed out and not freed back */
  uint32_t block_size;
  uint32_t reserved; /* blocks carved so far (lazy extension) */
  uint32_t capacity; /* blocks that fit in the page */
  uint8_t kind;      /* extent_kind_t */
  uint8_t size_class;
  uint8_t flags;     /* FREE/CACHED: MM_EXTENT_DIRTY, MM_EXTENT_ZERO */
  uint8_t idle;      /* PAGE: heartbeats in a row it was seen empty */
  uint32_t freed_at; /* FREE/CACHED: when it became free, ms */
  /* line 1 */
  itree_node_t node; /* node.start, node.npages: the extent, for every kind */
  struct extent_s *next; /* page queue / full list / abandoned / cache */
  struct extent_s *prev;
} extent_t;

/* extent_t.flags */
#define MM_EXTENT_DIRTY 1u /* pages touched since the last purge */
#define MM_EXTENT_ZERO 2u  /* every byte reads as zero (fresh or purged) */

_Static_assert(sizeof(extent_t) == 128, "extent descriptor is two lines");

/* The slot header, at the start of the slot's management area:
 *
 *   slot base (128 MiB aligned)
 *   +0        slot_t                                      1 datablock
 *   +4 KiB    uint16_t page_map[MM_SLOT_PAGES]            64 KiB
 *   +68 KiB   extent_t extents[MM_SLOT_EXTENTS]           1 MiB
 *   +2 MiB    data area ......................................... 126 MiB
 *
 * page_map[i] == k > 0 means extents[k] covers datablock i; extents[0] is a
 * sentinel that is never an extent (its xowner is 0), so the free fast path
 * can follow a 0 entry without a test and still miss.
 * The management area is committed (made read-write) on reservation; the
 * data area is committed from the bottom up, to `committed`. */
typedef struct slot_s {
  uint32_t heap;      /* owning local heap, const */
  uint32_t huge;      /* 1 for a huge block's own mapping, const */
  uintptr_t size;     /* bytes reserved (MM_SLOT_SIZE, or more when huge) */
  uintptr_t committed;/* data area is read-write below base + committed */
  extent_t *desc_free;/* descriptor free list */
  uint32_t desc_top;  /* descriptors ever handed out */
  uint32_t desc_used; /* descriptors in use */
  struct slot_s *next;/* the heap's slot list */
} slot_t;

#define MM_SLOT_MAP_OFFSET ((uintptr_t)4096)
#define MM_SLOT_EXTENTS_OFFSET                                                 \
  ((MM_SLOT_MAP_OFFSET + MM_SLOT_PAGES * sizeof(uint16_t) + 127) & ~(uintptr_t)127)
_Static_assert(sizeof(slot_t) <= 4096, "slot header fits its datablock");
_Static_assert(MM_SLOT_EXTENTS_OFFSET + MM_SLOT_EXTENTS * sizeof(extent_t) <=
                   MM_SLOT_META_SIZE,
               "management area fits before the data area");
_Static_assert(MM_SLOT_EXTENTS < 65535, "page map entries are uint16");

/* Slot table entries: 0 = not mmalloc's; else kind in the top two bits and
 * the owning local heap in the rest. */
#define MM_SLOT_KIND_HEAP 0x4000u
#define MM_SLOT_KIND_HUGE 0x8000u
#define MM_SLOT_KIND_HUGE_TAIL 0xC000u
#define MM_SLOT_KIND_MASK 0xC000u
#define MM_SLOT_HEAP_MASK 0x3FFFu

/* A size class: objects of `size` bytes in pages of `npages` datablocks. */
typedef struct size_class_s {
  uint32_t size;
  uint32_t npages;
  uint32_t capacity;
  uint32_t align; /* largest power of two dividing size (block alignment) */
  uint64_t magic; /* 2^40 / size + 1 */
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
  block_t *head;
  block_t *tail;
  uint32_t count;
} remote_batch_t;

typedef enum thread_heap_state_e {
  MM_THREAD_LIVE = 1,
  MM_THREAD_DEAD, /* its thread exited; waits in its local heap for reuse */
} thread_heap_state_t;

/* A thread heap.  Everything but xinbox is touched by its owner thread
 * only (and, once it is dead, under its local heap's lock).
 *
 * Invariants (owner):
 *   direct[k] is the first page of queue[class of 16k] or &mm_page_empty;
 *   every page in queue[c] has class c and xowner == this heap;
 *   every page on `full` has xowner == this heap | MM_OWNER_FULL. */
typedef struct thread_heap_s {
  extent_t *direct[MM_DIRECT_SLOTS];
  page_queue_t queue[MM_CLASSES];
  page_queue_t full;
  _Atomic(block_t *) xinbox; /* any thread pushes a chain; owner takes all */
  remote_batch_t out[MM_REMOTE_BUCKETS];
  struct local_heap_s *local;
  struct thread_heap_s *next_in_local; /* all heaps of the local heap */
  struct thread_heap_s *next_dead;     /* the local heap's reuse list */
  uint32_t state;                      /* thread_heap_state_t */
  uint32_t slow_calls;
  uint32_t last_beat_ms;
  uint64_t pages_taken;  /* stats: pages this heap took from its local heap */
  uint64_t remote_sent;  /* stats: blocks freed into other threads' pages */
  uint64_t remote_received;
} thread_heap_t;

/* A local heap.  Everything is guarded by `lock` except xpurge_at.
 *
 * Invariants (under lock):
 *   the tree holds every FREE extent of the heap's slots, coalesced: no two
 *   free extents touch;
 *   dirty_pages == sum of npages over FREE and CACHED extents with dirty set;
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
  page_queue_t abandoned[MM_CLASSES];   /* pages of exited threads */
  thread_heap_t *threads;               /* every thread heap bound here */
  thread_heap_t *dead;                  /* dead ones, ready for reuse */
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
