/* remote.h — blocks freed by one thread into another thread's pages: the
 * batches, the inboxes and their lanes, the idle take-over, the dead-heap
 * sweep and the heartbeat (remote.c).
 *
 * Layer: remote (above the thread heap, whose structure holds the inboxes
 * and batches; below the slow paths, which call it).  remote.c is the only
 * file that touches xinbox[] or out[].
 */
#ifndef MM_REMOTE_H
#define MM_REMOTE_H

#include "thread_heap.h"

MM_HIDDEN_BEGIN

/* The page of a free block (any thread: the extent map names every
 * datablock of a page exactly). */
MM_INLINE extent_t *page_of_block(const block_t *b) {
  uintptr_t a = (uintptr_t)b;
  return slot_extent_of(slot_of_address(a), a);
}

/* Something waits in th's inboxes (a hint).  Lane 0 alone tells: every
 * chain pushed holds a block on lane 0, and its lanes are pushed from the
 * last to lane 0 (remote_flush), so a block on another lane belongs to a
 * chain whose lane-0 part is in the inbox or still to come; the owner takes
 * lane 0 first (acquire), then the others, which by then hold the rest of
 * every chain whose lane 0 it took. */
MM_INLINE bool remote_inbox_waiting(const thread_heap_t *th) {
  return atomic_load_relaxed(&th->xinbox[0]) != NULL;
}

/* th's lock held: free everything in th's inboxes (every lane). */
void remote_take_inbox(thread_heap_t *th);
/* Hand every non-empty batch of th to its destination. */
void remote_flush_all(thread_heap_t *th);
/* Free b (its canary set) into page, from thread heap th (never the empty
 * heap, its lock held), whoever owns the page. */
void remote_free_block(thread_heap_t *th, extent_t *page, block_t *b);
/* A thread without a heap (out of memory) frees b into owner's inbox. */
void remote_send_one(thread_heap_t *owner, block_t *b);
/* The blocks that reached the inboxes of a local heap's dead heaps, as one
 * chain (try: NULL if the registry is busy; a caller holding a thread heap
 * lock must try, the registry ranks lower), and the chain freed by th
 * (its lock held). */
block_t *remote_dead_take(uint32_t heap, bool try);
void remote_free_chain(thread_heap_t *th, block_t *b);
/* th's lock held: every MM_HEARTBEAT_MS of slow-path activity. */
MM_COLD void remote_heartbeat(thread_heap_t *th, uint32_t now);
/* Owner, lock held: every batch and every inbox block is a free block of a
 * page, batch counts match their lanes.  O(blocks in flight to and from th). */
bool remote_is_valid(thread_heap_t *th, char *why, size_t why_size);

/* Every slow path of the owner, holding its lock: take the inbox if lane 0
 * says something waits, note the time (an idle heap's full pages are taken
 * over by other threads, remote.c), and now and then the heartbeat. */
MM_INLINE void thread_heap_beat(thread_heap_t *th) {
  mm_assert_internal(thread_heap_locked(th));
  if (remote_inbox_waiting(th)) remote_take_inbox(th);
  uint32_t now = os_now_ms();
  if (atomic_load_relaxed(&th->xactive_ms) != now) atomic_store_relaxed(&th->xactive_ms, now);
  if ((uint32_t)(now - th->last_beat_ms) >= MM_HEARTBEAT_MS) remote_heartbeat(th, now);
}

/* MM_DEBUG 3: the heap, its pages, and what is in flight to and from it. */
#define thread_heap_check_all(th)                                        \
  do {                                                                   \
    thread_heap_check(th);                                               \
    MM_CHECK(3, "remote frees", remote_is_valid((th), MM_WHY));                  \
  } while (0)

MM_HIDDEN_END

#endif
