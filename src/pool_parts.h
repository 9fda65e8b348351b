/* pool_parts.h — what pool.c and heap.c share of a pool: its structure.
 * Private to the pool layer (test/structure/check_layers.py keeps it so).
 *
 * Layer: pool (pool.h).
 */
#ifndef MM_POOL_PARTS_H
#define MM_POOL_PARTS_H

#include "pool.h"

MM_HIDDEN_BEGIN

typedef struct pool_s {
  struct mm_pool_s pub; /* key, cache: what the inline calls read */
  mm_spin_t lock;
  uint32_t size;        /* object size */
  uint32_t ndatablocks; /* per page block (without a guard), until the pool is big */
  uint32_t capacity;    /* objects per such page block (a 2 MiB block: its own) */
  uint32_t limit;       /* a thread's list limit */
  uint64_t magic;
  /* The depot: free objects any thread may take.  Whole lists a thread
   * gave up (batches, moved in and out without a walk), and loose objects
   * (from threads without a list, or when the batches are full). */
  struct pool_batch_s {
    void *head;
    uint64_t count;
  } *batch;              /* batch_cap slots (pool_meta_alloc), NULL at first */
  uint32_t nbatches, batch_cap;
  void *loose;
  uint64_t depot_count; /* objects in batches and loose */
  extent_list_t blocks; /* POOL extents, the one being carved last */
  uint64_t nblocks;
  uint64_t bytes;       /* the blocks' usable bytes */
  uint64_t carved;      /* objects carved from all blocks */
  uint32_t serial;      /* lock order at fork */
  _Atomic(uint64_t) xslow; /* every slow call (statistics; the checker's cadence) */
  struct pool_s *next, *prev; /* every pool (pools_lock) */
  struct heap_s *heap;  /* the heap whose size class (or large blocks) this is, or NULL */
  char name[32];
} pool_t;

/* off = address - the block's page_start: below the bytes carved from a
 * pool block so far (xlimit; any thread may ask, relaxed).  A pool block
 * keeps bytes there, not a page's xcarved: the inline calls of mmalloc.h
 * read it so. */
MM_INLINE bool pool_offset_carved(const extent_t *e, uint64_t off) {
  return off < atomic_load_relaxed(&e->xlimit);
}

#define CACHE_OFFSET (((sizeof(pool_t) + MM_CACHE_LINE - 1) / MM_CACHE_LINE) * MM_CACHE_LINE)
#define POOL_BYTES (CACHE_OFFSET + MM_POOL_THREADS * sizeof(mm_pool_cache_t))

/* The local heap a pool takes its next page block from: the calling
 * thread's (pool_set_home), so that the blocks a thread's pools give back
 * are the ones they take again; the calling CPU's before it is known. */
MM_INLINE local_heap_t *pool_local_heap(void) {
  local_heap_t *h = mm_pool_home;
  return likely(h) ? h : &mm_heaps[(unsigned)os_current_cpu() % mm_nheaps];
}

/* Zeroed memory for a pool's or a heap's structure (a LARGE block of the
 * local heaps), and back; NULL with errno ENOMEM. */
void *pool_meta_alloc(size_t size);
void pool_meta_free(void *p);
/* A pool for objects of size bytes aligned to align (both checked by the
 * caller), named name, part of heap (or NULL); NULL with errno ENOMEM. */
pool_t *pool_new(size_t size, size_t align, const char *name, struct heap_s *heap);
/* The POOL extent that holds p, or NULL (any thread; no lock). */
extent_t *pool_block_at(const void *p);
/* Claim a page block as a POOL extent of pl (local_heap_take_page_block's
 * claim; arg is pl, NULL for a raw block). */
void pool_claim_block(extent_t *e, void *arg);
/* Check p as an object of pl that may be freed now, or abort with one line
 * naming call (and what the object's owner is named by owner_name). */
void pool_check_free(const pool_t *pl, const void *p, const char *call);
/* Free p, checked, into pl (the calling thread's list, or the depot). */
void pool_free_checked(pool_t *pl, void *p, const char *call);
/* An object of pl (the calling thread's list, the depot, or carved);
 * NULL with errno ENOMEM. */
void *pool_alloc_any(pool_t *pl);

/* pool_quarantine.c's lock at fork, inside the pools' list lock. */
void pool_quarantine_fork_prepare(void);
void pool_quarantine_fork_parent(void);
void pool_quarantine_fork_child(void);

MM_HIDDEN_END

#endif
