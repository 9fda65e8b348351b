/* stash.c — the stash: medium blocks a thread freed, kept for its next
 * malloc of the same size.
 *
 * Layer: thread heap (the stash's fields and its inline take and put are
 * in thread_heap.h; the registry, which says how many threads share
 * MM_THREAD_STASH_TOTAL, is thread_heap.c's).
 *
 * A medium block (a LARGE extent of a medium slot, above MM_SMALL_MAX, up
 * to MM_MEDIUM_DATABLOCKS) freed by a thread of its own local heap stays
 * with that thread, marked (thread_heap_stashed), for its next malloc of
 * exactly its datablocks: neither that free nor that malloc takes the
 * local heap's lock, where each took it once before (a malloc+free pair of
 * 40-100 KB: 396 instructions before, 169 now; mimalloc and tcmalloc,
 * which keep such blocks per thread too, 222 and 167).
 *
 * Only sizes the thread has asked malloc for twice since its last unused
 * heartbeat (stash_sizes) are kept: a block that realloc grew through many
 * sizes (an array), or a buffer whose size varies, is not asked for again,
 * and kept it would only hide its memory from first fit.  At most
 * MM_THREAD_STASH blocks and stash_cap bytes (MM_THREAD_STASH_BYTES, less
 * when many live threads share MM_THREAD_STASH_TOTAL; brought up to date
 * at the thread's start, at each heartbeat and at each medium malloc that
 * reaches the local heap), and a size only where stash_cap holds two of it
 * (thread_heap_stash_put): the oldest goes to the local heap to make room.
 * All of it goes there at a heartbeat when the thread took nothing from it
 * since the heartbeat before (so a thread that stopped using it keeps
 * nothing long), at a medium malloc of a size it holds none of (first fit
 * must see that memory, as the local heap's medium cache lets it), at
 * mm_collect and at exit.  A thread that blocks without another call keeps
 * its stash, at most MM_THREAD_STASH_BYTES, until it calls again or exits:
 * the purge thread cannot take it.
 *
 * Only the owner touches its stash, holding no lock (its heartbeat and
 * mm_collect hold th's lock, which nobody else takes for the stash).  In a
 * forked child the other threads' stashes are dropped with their heaps
 * (one may have been half changed by a free that fork interrupted): at
 * most MM_THREAD_STASH_BYTES per thread is lost to the child.
 *
 * The mark is what tells a stashed block from a live one when it is freed
 * again, by its thread or another, or passed to realloc: the canary of a
 * free small block at its start, cleared when it leaves the stash.
 * Statistics count a stashed block as freed memory (thread_heap_stash_sum),
 * though the local heap counts it in its large_live_bytes; the blocks a
 * stash hands out and takes in are counted per thread, added to the local
 * heap's large_allocs and large_frees by the statistics, and for good at
 * the thread's exit. */
#include <string.h>

#include "thread_heap.h"

/* A thread's share of MM_THREAD_STASH_TOTAL among the live threads, up to
 * MM_THREAD_STASH_BYTES. */
static uint32_t stash_cap(void) {
  uint32_t live = thread_heap_live_count();
  size_t cap = MM_THREAD_STASH_TOTAL / (live ? live : 1);
  return (uint32_t)(cap < MM_THREAD_STASH_BYTES ? cap : MM_THREAD_STASH_BYTES);
}


/* An empty stash for a new thread, its cap its share now. */
void thread_heap_stash_init(thread_heap_t *th) {
  th->stash_count = 0;
  th->stash_takes = 0;
  th->stash_seen = th->stash_sizes = 0;
  th->stash_cap = stash_cap();
  atomic_store_relaxed(&th->xstash_bytes, 0);
  atomic_store_relaxed(&th->xstash_allocs, 0);
  atomic_store_relaxed(&th->xstash_frees, 0);
}

/* Out of the stash and back to the local heap (no lock held). */
static void stash_release(extent_t *e) {
  thread_heap_stash_mark(e, false);
  local_heap_free_large(e, false);
}

/* The stash is full, or e would take it over its cap (which holds two of
 * e): the oldest go home until e fits, and e goes in
 * (thread_heap_stash_put). */
MM_NOINLINE bool thread_heap_stash_put_slow(thread_heap_t *th, extent_t *e) {
  uint32_t bytes = (uint32_t)(e->node.ndatablocks << MM_DATABLOCK_SHIFT);
  uint32_t total = atomic_load_relaxed(&th->xstash_bytes);
  while (th->stash_count &&
         (th->stash_count == MM_THREAD_STASH || total + bytes > th->stash_cap)) {
    extent_t *old = th->stash[0];
    th->stash_count--;
    memmove(&th->stash[0], &th->stash[1], th->stash_count * sizeof(th->stash[0]));
    total -= (uint32_t)(old->node.ndatablocks << MM_DATABLOCK_SHIFT);
    atomic_store_relaxed(&th->xstash_bytes, total);
    stash_release(old);
  }
  thread_heap_stash_insert(th, e, total + bytes);
  return true;
}

/* A medium malloc the stash has nothing of its size for: the sizes vary,
 * so everything goes home, where first fit sees it. */
MM_NOINLINE void *thread_heap_stash_miss(thread_heap_t *th) {
  thread_heap_stash_flush(th);
  return NULL;
}

/* Everything to the local heap, oldest first (so the newest ends first in
 * its medium cache). */
void thread_heap_stash_flush(thread_heap_t *th) {
  uint32_t n = th->stash_count;
  th->stash_count = 0;
  atomic_store_relaxed(&th->xstash_bytes, 0);
  for (uint32_t i = 0; i < n; i++) stash_release(th->stash[i]);
}

/* In a forked child, the stash of a thread that is not there: forgotten,
 * its blocks lost to the child (see the top of this file). */
void thread_heap_stash_drop(thread_heap_t *th) {
  th->stash_count = 0;
  atomic_store_relaxed(&th->xstash_bytes, 0);
}

/* A malloc (not a realloc) of a medium block of `datablocks` went to the
 * local heap: the second time, the size is one the stash keeps from now
 * on; and the cap is brought up to date with the live threads (threads
 * started after this one lower it; this path takes a local heap lock
 * anyway). */
void thread_heap_stash_want(thread_heap_t *th, size_t datablocks) {
  uint64_t bit = (uint64_t)1 << datablocks;
  th->stash_sizes |= th->stash_seen & bit;
  th->stash_seen |= bit;
  th->stash_cap = stash_cap();
}

/* At a heartbeat: everything goes home if nothing was taken since the
 * last one, or if it is over the cap, which follows the live threads. */
void thread_heap_stash_beat(thread_heap_t *th) {
  th->stash_cap = stash_cap();
  if (th->stash_takes == 0) th->stash_seen = th->stash_sizes = 0; /* asked for again first */
  if (th->stash_takes == 0 || atomic_load_relaxed(&th->xstash_bytes) > th->stash_cap)
    thread_heap_stash_flush(th);
  th->stash_takes = 0;
}

/* What the stashes of the live threads of local heap `heap` hold, and
 * the blocks they handed out and took in. */
static void sum_visit(thread_heap_t *th, void *arg) {
  thread_heap_stash_sum_t *sum = arg;
  sum->bytes += atomic_load_relaxed(&th->xstash_bytes);
  sum->allocs += atomic_load_relaxed(&th->xstash_allocs);
  sum->frees += atomic_load_relaxed(&th->xstash_frees);
}

void thread_heap_stash_sum(uint32_t heap, thread_heap_stash_sum_t *sum) {
  *sum = (thread_heap_stash_sum_t){0, 0, 0};
  thread_heap_foreach_live(heap, sum_visit, sum);
}

/* th's thread is leaving (its stash went home or was dropped): its counts
 * go to its local heap's for good. */
void thread_heap_stash_retire(thread_heap_t *th) {
  local_heap_t *h = th->local;
  local_heap_lock(h);
  h->large_allocs += atomic_load_relaxed(&th->xstash_allocs);
  h->large_frees += atomic_load_relaxed(&th->xstash_frees);
  local_heap_unlock(h);
  atomic_store_relaxed(&th->xstash_allocs, 0);
  atomic_store_relaxed(&th->xstash_frees, 0);
}
