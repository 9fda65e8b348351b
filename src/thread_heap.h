/* thread_heap.h — thread heaps, and the malloc and free fast paths.
 *
 * Layer: thread heap (above the page layer; below remote.h, the slow paths
 * and the api).  The fast paths are here, at the bottom of this file:
 * thread_heap_malloc_fast and thread_heap_free_fast.  What they fall back
 * to is declared here too and lives in the files named in the tree.
 *
 * Call tree, fast path first (test/structure/check_call_tree.py checks that
 * every function named between the two rules exists in src/):
 *
 * ---- call tree ----
 *   malloc(n)                                             override.c, api.c
 *   └ thread_heap_malloc_fast                   MM_FAST_PATH, this file
 *       n <= 1 KiB and direct[(n+15)/16]->free != NULL: page_take_block
 *       (secure mode built in: page_pop_secure; a body over 16 steps of
 *       16 bytes checked out of line, page_pop_checked_any)
 *     ├ thread_heap_malloc_medium          n > 1 KiB, alloc.c, noinline
 *     │   the first page of its class has a free block: page_take_block;
 *     │   or local frees: refill_quick (below)
 *     │   └ thread_heap_alloc_class_slow   none: as below, class known
 *     ├ thread_heap_malloc_stashed   n > 32 KiB and th's stash holds a
 *     │   block: up to 128 KiB, one of n's datablocks from the stash
 *     │   (thread_heap_stash_take, no lock; but every
 *     │   MM_HEARTBEAT_CALLS-th slow call, as below); none of them: the
 *     │   whole stash goes home (thread_heap_stash_miss), as below
 *     └ thread_heap_malloc_slow                  MM_SLOW_PATH, alloc.c
 *         the current page has local frees: refill_quick, no lock (they
 *           become its free list); every MM_HEARTBEAT_CALLS-th time, as
 *           below instead, so that the heart beats
 *         checked modes (secure, zero on free): malloc_checked, the
 *           class's first page (refill_quick if it ran out) popped
 *           without the lock by page_pop_checked (secure mode and a body
 *           of up to 16 steps: page_pop_secure, as built in); else
 *           alloc_checked
 *         first call of a thread: thread_heap_init_current (lifecycle.c)
 *         32 KiB < n <= 128 KiB: thread_heap_alloc_big with no lock of
 *           th (but every MM_HEARTBEAT_CALLS-th slow call, as below)
 *         holding the heap's lock (thread_heap_lock):
 *         thread_heap_beat (remote.h): take the inbox if lane 0 says so
 *           (remote_take_inbox); every MM_HEARTBEAT_MS remote_heartbeat:
 *           hand over batches, retire idle pages (current or kept
 *           empty), give fostered pages back
 *           (thread_heap_fostered_release), send an unused stash home
 *           (thread_heap_stash_beat),
 *           free what reached dead
 *           heaps' inboxes (remote_dead_take), local_heap_purge_due
 *         n <= 32 KiB: alloc_class
 *             walk queue[c]: page_refill (local frees, then fresh blocks)
 *             or move to the full list; none left: thread_heap_new_page
 *             (adopt an abandoned page, take a kept page of its class
 *             (or size) off the empty list, or local_heap_take_page_block)
 *         else thread_heap_alloc_big: local_heap_alloc_large (from
 *             1 MiB local_heap_alloc_huge_cached first: a freed huge
 *             mapping's head) or local_heap_alloc_huge, after the lock is
 *             released
 *
 *   free(p)
 *   └ thread_heap_free_fast                     MM_FAST_PATH, this file
 *       p in a heap slot, its page's tag is this thread's id, p at a carved
 *       block boundary and not already free: push on the page's local free
 *       list, used-- (secure mode built in: block_on_free fills it first,
 *       and page_push_local encodes the link; a body over 16 steps:
 *       thread_heap_free_own_big, out of line)
 *       used reached 0: thread_heap_page_empty_slow (keep the page on
 *       the heap's empty list, unless it is its class's current one)
 *     ├ thread_heap_free_other      (page's tag not ours) remote.c, noinline
 *     │   page of another live thread, p at a carved block boundary and
 *     │   not already free: batch_add to the batch for that thread;
 *     │   a full batch goes to its inbox, one CAS per lane (remote_flush)
 *     │   a LARGE extent starting at p: a medium one not in a stash
 *     │   (else: double free) goes into this thread's stash
 *     │   (thread_heap_stash_put, no lock; the oldest goes home if it is
 *     │   full), others to local_heap_free_large
 *     │   this thread's full page, p checked the same way:
 *     │   thread_heap_free_block (below, without the lookup)
 *     │   checked modes: free_other_checked (secure mode, this thread's
 *     │   page, a body of up to 16 steps: filled and pushed as built in)
 *     │   or free_other_checked_any, the same two frees without the
 *     │   lock, the block filled (block_on_free), links encoded
 *     └ thread_heap_free_slow      MM_SLOW_PATH, free.c; also from above
 *         thread_heap_lookup: not ours / interior / double free -> abort
 *         LARGE: local_heap_free_large; huge: local_heap_free_huge
 *         thread_heap_free_block: remote_free_block (remote.c),
 *         holding the heap's lock:
 *           page ours but full: thread_heap_free_local puts it back in
 *           its queue; page abandoned: thread_heap_free_abandoned
 *           adopts it (into th's queue if th has a page of its class;
 *           onto th's fostered list if most of it is in use, or on the
 *           MM_ADOPT_FREES-th free into it in a row), then local; or
 *           frees into it where it lies, under its local heap's lock;
 *           page of another thread: remote_push onto its batch
 *
 *   posix_memalign, aligned_alloc, memalign (align > 16)           api.c
 *   └ thread_heap_malloc_aligned_fast           MM_FAST_PATH, this file
 *       align <= 4 KiB, size <= 32 KiB: thread_heap_malloc_fast for the
 *       size of the smallest class whose size is a multiple of align
 *       (size_class_aligned)
 *     └ thread_heap_malloc_aligned     (the rest) alloc.c: alloc_any, or
 *         alloc_checked in the checked modes
 *
 *   malloc_usable_size(p)                                 override.c, api.c
 *   └ thread_heap_usable_size_fast              MM_FAST_PATH, this file
 *       p in a heap slot, its extent names an owning thread heap (a
 *       page), p at a carved block boundary and not already free: the
 *       page's block size
 *     └ thread_heap_usable_size     (anything else) realloc.c: the lookup
 *         of free's slow path (thread_heap_lookup), its one-line reports
 * ---- end of call tree ----
 *
 * Pages of a thread heap.  A page it owns is on exactly one of its lists:
 * queue[c] (pages of class c that may have a free block; direct[] names
 * the first of each small class), `full` (no free block: its tag has
 * MM_OWNER_FULL, so the owner's free misses the fast path and puts it back
 * in its queue), `fostered` (pages of threads that exited, adopted by
 * freeing into them, not allocated from; page->fostered says so; they go
 * back to the abandoned lists at the next heartbeat, mm_collect or exit)
 * or `empty` (no block in use, not its class's current
 * page: kept, up to the heap's empty_limit (MM_THREAD_EMPTY_BYTES, growing
 * to MM_THREAD_EMPTY_MAX for a thread whose batches need more; less when
 * many threads share MM_THREAD_EMPTY_TOTAL), for the next page this thread needs
 * of its class, or of a class with page blocks of its size).  Pages come from the local heap (thread_heap_new_page,
 * under that heap's lock for the hand-over), and go back to it empty
 * (thread_heap_retire_page: to the page cache; from the empty list when it
 * overflows, or when a page stayed there two heartbeats) or, at thread exit or when
 * an idle heap's full pages are taken over, with blocks in use
 * (thread_heap_abandon_page: to the abandoned list of their home heap,
 * where any thread adopts them).
 *
 * Locking.  The owner's fast paths take no lock and do no atomic
 * read-modify-write.  Every other change to the heap's lists runs under
 * its lock (thread_heap_lock, an mm_spin_t of rank MM_RANK_THREAD_HEAP):
 * the owner's slow paths, the fast free that retires a page, another
 * thread taking over this idle heap's full pages (try-lock only,
 * remote.c), and fork (lifecycle.c), which holds every thread heap's lock
 * so that the child sees no list half changed.  Lock order: a thread heap
 * lock, then local heap locks; another thread heap's lock only by
 * try-lock; the registry (thread_heap.c) before either, or by try-lock.
 */
#ifndef MM_THREAD_HEAP_H
#define MM_THREAD_HEAP_H

#include "local_heap.h"
#include "page.h"

MM_HIDDEN_BEGIN

/* Blocks freed by this thread into another thread's pages, waiting to be
 * handed to that thread's inbox as one chain per lane (remote.c). */
typedef struct remote_batch_s {
  struct thread_heap_s *dest;
  block_t *head[MM_LANES]; /* block i of the batch is on lane i % MM_LANES */
  block_t *tail[MM_LANES];
  uint32_t count;
} remote_batch_t;

typedef enum thread_heap_state_e {
  MM_THREAD_LIVE = 1,
  MM_THREAD_DEAD, /* its thread exited; waits in the registry for reuse */
} thread_heap_state_t;

/* A thread heap.  Its owner thread touches it freely on the fast paths;
 * its slow paths hold `lock`.  Another thread touches it only through
 * xinbox[] (push a chain), xactive_ms (read), and, holding `lock` (taken
 * by try-lock), `full` and the pages on it (remote.c); registry fields
 * under the registry's lock (thread_heap.c).
 *
 * Invariants (owner, or `lock` held; thread_heap_is_valid checks them):
 *   direct[k] is the first page of queue[class of 16k] or &mm_page_empty
 *   (always &mm_page_empty while the fast paths are off);
 *   every page in queue[c] has class c and is owned by this heap (page.h),
 *   tag without MM_OWNER_FULL; every page on `full` is owned by this heap
 *   with MM_OWNER_FULL; every page on `empty` is owned by this heap, tag
 *   without MM_OWNER_FULL, with no block in use, and empty_bytes sums their
 *   sizes; no page is on two lists; none is "taken";
 *   remote batches (out[]) hold count blocks in all, block i on lane
 *   i % MM_LANES, each a free block of some page (remote_is_valid);
 *   stash[0..stash_count) are LARGE extents of medium slots of `local`, of
 *   at most MM_MEDIUM_DATABLOCKS, each marked stashed (thread_heap_stashed),
 *   none twice, xstash_bytes their bytes,
 *   at most stash_cap (<= MM_THREAD_STASH_BYTES) but just after the cap
 *   fell (the next put or beat trims it); a LARGE extent outside a stash
 *   is never marked. */
typedef struct thread_heap_s {
  extent_t *direct[MM_DIRECT_SLOTS]; /* the malloc fast path reads only this */
  uintptr_t tid;                     /* the owner thread's id (mm_thread_id()) */
  extent_list_t queue[MM_CLASSES];
  extent_list_t full;
  extent_list_t fostered; /* pages adopted by freeing into them, not allocated from */
  struct {
    const extent_t *page; /* the ownerless page of this class th last freed into */
    uint32_t frees;       /* how many of th's frees in a row went there */
  } orphan[MM_CLASSES];
  extent_list_t empty;  /* pages with no block in use, kept for reuse, newest first */
  uint32_t empty_bytes; /* their page blocks' bytes, <= MM_THREAD_EMPTY_MAX (and
                           <= empty_limit but just after it fell back) */
  uint32_t empty_limit; /* this thread's bound on them (thread_heap.c), from
                           MM_THREAD_EMPTY_BYTES up to MM_THREAD_EMPTY_MAX */
  bool empty_overflowed; /* a page went home for want of room since the
                            last page this heap took from its local heap */
  _Atomic(block_t *) xinbox[MM_LANES]; /* any thread pushes chains; owner takes all */
  _Atomic(uint32_t) xactive_ms;        /* when the owner last ran a slow path */
  mm_spin_t lock;                      /* owner's slow paths; a taker of its full pages */
  remote_batch_t out[MM_REMOTE_BUCKETS];
  local_heap_t *local;
  struct thread_heap_s *next_in_local; /* registry: every heap of the local heap */
  struct thread_heap_s *next_dead;     /* registry: the dead ones, for reuse */
  uint32_t state;                      /* thread_heap_state_t (registry's lock) */
  uint32_t slow_calls;
  uint32_t last_beat_ms;
  uint64_t classes_paged; /* bit c: this heap has taken a page block for class c */
  /* The stash: medium blocks this thread freed, oldest first, for its next
   * malloc of their datablocks (owner only, no lock; stash.c) */
  extent_t *stash[MM_THREAD_STASH];
  uint32_t stash_count;
  uint32_t stash_takes; /* blocks taken from it since the last heartbeat */
  uint32_t stash_cap;   /* its bound in bytes now (thread_heap_stash_beat) */
  uint64_t stash_seen;  /* bit n: this thread malloc'ed a medium block of n datablocks */
  uint64_t stash_sizes; /* ... and did so again: the sizes its stash keeps */
  _Atomic(uint32_t) xstash_bytes; /* their bytes: owner writes, statistics read */
  /* blocks it handed out and took in since the thread began (statistics
   * add them to the local heap's large_allocs and large_frees, and the
   * thread's exit adds them there for good) */
  _Atomic(uint64_t) xstash_allocs, xstash_frees;
  /* Under valgrind only: small blocks freed by this thread, oldest first,
   * kept from reuse so that memcheck still sees a late use after free */
  block_t *quarantine_first, *quarantine_last;
  size_t quarantine_bytes;
} thread_heap_t;

/* The calling thread's heap (initial-exec TLS: one load). */
extern __thread thread_heap_t *mm_thread_heap __attribute__((tls_model("initial-exec")));
/* The heap of a thread that has not allocated yet: every direct[] entry is
 * mm_page_empty, a page with no free block and no owner, so both fast paths
 * miss on it. */
extern thread_heap_t mm_heap_empty;
extern extent_t mm_page_empty;
/* Under valgrind: bytes of no-access red zone after each block (0 else). */
extern size_t mm_vg_rz;

MM_INLINE void thread_heap_lock(thread_heap_t *th) { spin_lock(&th->lock); }
MM_INLINE bool thread_heap_trylock(thread_heap_t *th) { return spin_trylock(&th->lock); }
MM_INLINE void thread_heap_unlock(thread_heap_t *th) { spin_unlock(&th->lock); }
/* For assertions (true when the lock witness is off). */
MM_INLINE bool thread_heap_locked(const thread_heap_t *th) { return spin_held(&th->lock); }

/* ---- thread_heap.c: pages and structures ------------------------------------------- */

void thread_heap_direct_update(thread_heap_t *th, unsigned c);
/* the registry */
void thread_heap_registry_init(uint32_t n);
thread_heap_t *thread_heap_create(void);
void thread_heap_init_fresh(thread_heap_t *th);
void thread_heap_mark_dead(thread_heap_t *th);
void thread_heap_counts(uint32_t heap, uint64_t *live, uint64_t *dead);
bool thread_heap_foreach_dead(uint32_t heap, bool try, void (*visit)(thread_heap_t *, void *),
                              void *arg);
void thread_heap_foreach_live(uint32_t heap, void (*visit)(thread_heap_t *, void *), void *arg);
uint32_t thread_heap_live_count(void);
void thread_heap_registry_lock_all(void);
void thread_heap_registry_unlock_all(void);
void thread_heap_registry_reinit_all(void);
void thread_heap_foreach(void (*visit)(thread_heap_t *th, void *arg), void *arg);
/* pages */
extent_t *thread_heap_new_page(thread_heap_t *th, unsigned c);
void thread_heap_first_page_carved(extent_t *page);
void thread_heap_retire_page(extent_t *page);
void thread_heap_abandon_page(extent_t *page);
int thread_heap_free_abandoned(thread_heap_t *th, extent_t *page, block_t *b, bool run);
void thread_heap_fostered_release(thread_heap_t *th);
void thread_heap_page_empty(thread_heap_t *th, extent_t *page);
/* Every page on th's empty list (all: true), or those that stayed there two
 * heartbeats, home to the page cache (th's lock held). */
void thread_heap_empty_release(thread_heap_t *th, bool all);
MM_SLOW_PATH void thread_heap_page_empty_slow(thread_heap_t *th, extent_t *page);
/* Secure mode built in: the owner's free of a block whose body is not
 * block_body_inline (fill, link, count, the page emptied). */
void thread_heap_free_own_big(extent_t *page, block_t *b);
bool thread_heap_is_valid(thread_heap_t *th, char *why, size_t why_size);
/* the census: every page of a local heap by owner (thread_heap.c) */
typedef struct thread_heap_census_s {
  uint64_t pages;     /* PAGE extents in the local heap's slots */
  uint64_t owned;     /* owned by a live thread heap */
  uint64_t abandoned; /* without owner, on an abandoned list */
  uint64_t lost;      /* owned by a dead thread heap: on no list (always 0) */
  uint64_t pages_out, pages_back; /* the local heap's counts */
  uint64_t lent;                  /* its page blocks lent out whole (pool.h) */
} thread_heap_census_t;
void thread_heap_census(uint32_t heap, thread_heap_census_t *c);
bool thread_heap_census_is_valid(char *why, size_t why_size);
/* the stash (stash.c): a freed medium block kept by the thread that
 * frees it.  Its mark is the canary of a free small block (its first
 * bytes read as a block_t), written when it goes in and cleared when it
 * comes out, so that free, realloc and malloc_usable_size report a second
 * free of it from any thread. */
MM_INLINE bool thread_heap_stashed(const extent_t *e) {
  const block_t *b = (const block_t *)e->node.start;
  return b->canary == block_canary_of(b);
}
MM_INLINE void thread_heap_stash_mark(extent_t *e, bool in) {
  block_t *b = (block_t *)e->node.start;
  b->canary = in ? block_canary_of(b) : 0;
}
void *thread_heap_malloc_stashed(thread_heap_t *th, size_t size);
void *thread_heap_stash_alloc(thread_heap_t *th, size_t size, size_t align, bool zero);
bool thread_heap_stash_put_slow(thread_heap_t *th, extent_t *e);
void *thread_heap_stash_miss(thread_heap_t *th);
void thread_heap_stash_init(thread_heap_t *th);
void thread_heap_stash_flush(thread_heap_t *th);
void thread_heap_stash_drop(thread_heap_t *th);
void thread_heap_stash_beat(thread_heap_t *th);
void thread_heap_stash_want(thread_heap_t *th, size_t datablocks);
typedef struct thread_heap_stash_sum_s {
  uint64_t bytes, allocs, frees;
} thread_heap_stash_sum_t;
void thread_heap_stash_sum(uint32_t heap, thread_heap_stash_sum_t *sum);
void thread_heap_stash_retire(thread_heap_t *th);

/* e goes in, marked, the stash's bytes now `total`. */
MM_INLINE void thread_heap_stash_insert(thread_heap_t *th, extent_t *e, uint32_t total) {
  thread_heap_stash_mark(e, true);
  th->stash[th->stash_count++] = e;
  atomic_store_relaxed(&th->xstash_bytes, total);
  atomic_store_relaxed(&th->xstash_frees, atomic_load_relaxed(&th->xstash_frees) + 1);
}

/* e: a LARGE extent of a medium slot at the pointer being freed, checked,
 * not marked.  True when th keeps it in its stash (the oldest making room
 * if need be): only a size this thread has asked malloc for twice
 * (stash_sizes), never a block that realloc grew in place past the
 * medium sizes, and only where the cap holds two of it (a thread that
 * frees its few buffers together and could keep one would only swap them
 * through the stash: pipeline at 32 threads, whose 98 threads' caps hold
 * one of zlib's 64 KiB buffers, took 10% more page faults and 3 MiB more
 * peak RSS). */
MM_INLINE bool thread_heap_stash_put(thread_heap_t *th, extent_t *e) {
  if (th == &mm_heap_empty || e->node.ndatablocks > MM_MEDIUM_DATABLOCKS ||
      !((th->stash_sizes >> e->node.ndatablocks) & 1) ||
      slot_of_extent(e)->heap != th->local->index || (e->flags & MM_EXTENT_GUARD))
    return false;
  uint32_t bytes = (uint32_t)(e->node.ndatablocks << MM_DATABLOCK_SHIFT);
  uint32_t total = atomic_load_relaxed(&th->xstash_bytes);
  if (2 * bytes > th->stash_cap) return false; /* room for one only: it would churn */
  if (unlikely(th->stash_count == MM_THREAD_STASH || total + bytes > th->stash_cap))
    return thread_heap_stash_put_slow(th, e);
  thread_heap_stash_insert(th, e, total + bytes);
  return true;
}

/* A block of size bytes aligned to align (0: none): the newest stashed
 * extent of exactly its datablocks (th's stash not empty), unmarked, at
 * its colour where that fits the size and the alignment, else at the
 * highest that does (large_colour_room); else NULL, after the whole stash
 * went to the local heap. */
MM_INLINE void *thread_heap_stash_take(thread_heap_t *th, size_t size, size_t align) {
  size_t datablocks = large_datablocks(size);
  uint32_t i = th->stash_count;
  while (i-- > 0) {
    extent_t *e = th->stash[i];
    if (e->node.ndatablocks != datablocks) continue;
    uint32_t n = --th->stash_count;
    for (; i < n; i++) th->stash[i] = th->stash[i + 1]; /* keep the order: oldest first */
    atomic_store_relaxed(&th->xstash_bytes, atomic_load_relaxed(&th->xstash_bytes) -
                                                (uint32_t)(datablocks << MM_DATABLOCK_SHIFT));
    th->stash_takes++;
    atomic_store_relaxed(&th->xstash_allocs, atomic_load_relaxed(&th->xstash_allocs) + 1);
    thread_heap_stash_mark(e, false);
    size_t room = large_colour_room(extent_usable(e), size, align);
    if (e->offset > room) e->offset = (uint32_t)room;
    return (void *)large_block(e);
  }
  return thread_heap_stash_miss(th);
}
#define thread_heap_check(th) MM_CHECK(3, "thread heap", thread_heap_is_valid((th), MM_WHY))

/* Free b (its canary set) into page, which th owns (holding th's lock).
 * A full page comes back into its queue; an empty one may go home. */
MM_INLINE void thread_heap_free_local(thread_heap_t *th, extent_t *page, block_t *b) {
  mm_assert_internal(thread_heap_locked(th) && page_owner(page) == th && page->used > 0);
  page_push_local(page, b);
  if (page_is_full(page)) {
    unsigned c = page->size_class;
    extent_list_remove(&th->full, page);
    extent_list_push_back(&th->queue[c], page);
    page_set_full(page, th->tid, false);
    if (th->queue[c].first == page) thread_heap_direct_update(th, c);
  }
  if (--page->used == 0) thread_heap_page_empty(th, page);
}

/* ---- the slow paths: alloc.c, free.c, realloc.c, remote.c, lifecycle.c ---------------- */

void *thread_heap_malloc_medium(thread_heap_t *th, size_t size);
MM_SLOW_PATH void *thread_heap_alloc_class_slow(thread_heap_t *th, unsigned c);
MM_SLOW_PATH void *thread_heap_malloc_slow(thread_heap_t *th, size_t size);
void *thread_heap_malloc_aligned(size_t size, size_t align, bool zero);
void *thread_heap_alloc_big(thread_heap_t *th, size_t size, size_t align, bool zero, bool room);
void thread_heap_free_other(void *p, extent_t *page, const char *call);
MM_SLOW_PATH void thread_heap_free_slow(void *p, const char *call);
MM_SLOW_PATH void thread_heap_free_block(thread_heap_t *th, extent_t *page, block_t *b);
extent_t *thread_heap_lookup(const void *p, const char *call);
MM_COLD MM_NORETURN void thread_heap_bad_pointer(const char *call, const void *p, const char *what);
void thread_heap_quarantine_drain(thread_heap_t *th, size_t keep);
size_t thread_heap_usable_size(const void *p, const char *call);
void *thread_heap_realloc(void *p, size_t size);
void thread_heap_process_init(void);
thread_heap_t *thread_heap_current(void);
MM_NOINLINE thread_heap_t *thread_heap_init_current(void);
void thread_heap_abandon(thread_heap_t *th);
void thread_heap_collect(void);

/* ---- the fast paths ----------------------------------------------------------------------
 * Force-inlined into api.c and override.c; everything they call is out of
 * line.  Instruction counts per malloc+free pair are in the README. */

MM_FAST_PATH void *thread_heap_malloc_fast(size_t size) {
  thread_heap_t *th = mm_thread_heap;
  if (likely(size <= MM_DIRECT_MAX)) {
    extent_t *page = th->direct[(size + 15) >> 4];
    block_t *b = page->free;
    if (likely(b != NULL)) return mm_fast_checked ? page_pop_secure(page) : page_take_block(page, b, b->next);
    return thread_heap_malloc_slow(th, size);
  }
  return thread_heap_malloc_medium(th, size);
}

MM_FAST_PATH void thread_heap_free_fast(void *p, const char *call) {
  uintptr_t a = (uintptr_t)p;
  uintptr_t slot = slot_heap_base(a);
  if (likely(slot != 0)) {
    extent_t *page = slot_extent_of((slot_t *)slot, a);
    if (likely(mm_thread_id_is(atomic_load_relaxed(&page->xowner_tid)))) {
      /* a carved block boundary of this page, not already free */
      uint64_t off = a - page->page_start;
      block_t *b = p;
      uintptr_t canary = a ^ mm_canary_key;
      if (likely(page_offset_is_block_own(page, off) && b->canary != canary)) {
        if (mm_fast_checked) { /* secure mode built in: filled, link encoded */
          uint32_t size = page->block_size;
          if (unlikely(!block_body_inline(size))) {
            thread_heap_free_own_big(page, b); /* filled by memset, out of line */
            return;
          }
          block_on_free_sized(b, size);
          page_push_local(page, b);
        } else {
          b->next = page->local_free; /* plain link */
          b->canary = canary;
          atomic_order_stores(); /* link before head: a fork may land here */
          page->local_free = b;
        }
        if (likely(--page->used != 0)) return;
        thread_heap_page_empty_slow(mm_thread_heap, page);
        return;
      }
    } else {
      thread_heap_free_other(p, page, call); /* not this thread's page, or full */
      return;
    }
  }
  thread_heap_free_slow(p, call);
}

/* posix_memalign, aligned_alloc, memalign with an alignment above 16.  A
 * page's blocks start at multiples of its class's size from a datablock
 * boundary, so every block of a class whose size is a multiple of the
 * alignment (up to a datablock) has it: the request takes the malloc fast
 * path of the smallest such class that holds it (size_class_aligned; the
 * slow path, thread_heap_malloc_aligned, takes the same class under the
 * lock).  Not in the checked modes, whose malloc adds valgrind's red zone
 * to the size. */
MM_FAST_PATH void *thread_heap_malloc_aligned_fast(size_t size, size_t align) {
  if (likely(!mm_slow_only && align <= MM_DATABLOCK_SIZE)) {
    unsigned c = size_class_aligned(size, align);
    if (likely(c < MM_CLASSES)) return thread_heap_malloc_fast(mm_size_classes[c].size);
  }
  return thread_heap_malloc_aligned(size, align, false);
}

/* The page of p when p is a block in use of a page of any owner, by free's
 * lookup and checks (at a carved block boundary, not already free), else
 * NULL: a large or huge block, a block of an abandoned page, or a pointer
 * that fails a check, which the caller sends through thread_heap_lookup
 * for its one-line report.  Only a PAGE names an owning thread heap
 * (xowner: NULL on every other extent and on the slot header's zero
 * prefix, which local_heap_is_valid checks), so one load tells a page from
 * a large block without the descriptor's second line.  malloc_usable_size
 * (thread_heap_usable_size_fast) and realloc start with it. */
MM_INLINE extent_t *thread_heap_page_of_block(const void *p) {
  uintptr_t a = (uintptr_t)p;
  uintptr_t slot = slot_heap_base(a);
  if (likely(slot != 0)) {
    extent_t *page = slot_extent_of((slot_t *)slot, a);
    if (likely(atomic_load_relaxed(&page->xowner) != NULL)) {
      uint64_t off = a - page->page_start;
      if (likely(page_offset_is_block(page, off) && !block_is_free(p))) return page;
    }
  }
  return NULL;
}
MM_FAST_PATH size_t thread_heap_usable_size_fast(const void *p, const char *call) {
  const extent_t *page = thread_heap_page_of_block(p);
  if (likely(page != NULL)) return page->block_size - mm_vg_rz;
  return thread_heap_usable_size(p, call);
}

MM_HIDDEN_END

#endif
