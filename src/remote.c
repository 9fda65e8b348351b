/* remote.c — the remote-free protocol: every touch of the inboxes and the
 * outgoing batches, the idle take-over, the sweep of dead heaps' inboxes,
 * and the heartbeat that drives them.
 *
 * Layer: remote (remote.h).
 *
 * The protocol.  A block freed by a thread that does not own its page is
 * linked into a batch per destination heap (out[], no atomics), then the
 * batch is pushed onto the owner's inbox, a lock-free stack: the last
 * block's next is set to the inbox head read, and a release CAS installs
 * the first block.  The owner takes the whole inbox with one acquire
 * exchange (pairing with those CASes, so the links are visible) and frees
 * each block as its own.
 *
 * Lanes.  Batch and inbox come in MM_LANES lanes (block i of a batch on
 * lane i % MM_LANES, one CAS per lane).  The owner's walk reads each link
 * from a line the freeing thread wrote last, a cache miss that depends on
 * the one before; walking the lanes side by side keeps MM_LANES of those
 * misses in flight instead of one.  Lane 0 is pushed last and taken first,
 * so a non-empty lane 0 is the whole "something waits" test
 * (remote_inbox_waiting).  Every walk of an inbox is inbox_drain, below.
 *
 * Invariants:
 *   a page is retired only when used == 0, and blocks in batches or inboxes
 *   still count as used, so no thread ever pushes into a retired page;
 *   every block in a batch or an inbox carries its free canary;
 *   a batch's count is the number of blocks on its lanes, and block i of
 *   the batch is on lane i % MM_LANES.
 *
 * Stale owners.  The owner read by a remote freer may be stale: if the
 * owner exited in between, the block lands in a dead heap's inbox, which
 * live threads of its local heap sweep (remote_dead_take) and whoever
 * reuses the heap takes; each such block is dispatched again by the page's
 * current owner (remote_free_block).
 *
 * Idle owners.  A thread that allocated a lot and then blocks (a loader
 * thread in pthread_join while workers free what it built and allocate
 * their own) never takes its inbox, so the memory freed into its pages is
 * lost to everyone: peak RSS doubles.  A thread handing a batch to a heap
 * whose owner has not run a slow path for MM_IDLE_MS tries that heap's
 * lock; holding it, it takes the inbox and frees every block of a FULL page
 * into that page (the owner's fast paths never touch a full page: malloc
 * does not see it, free misses on the MM_OWNER_FULL tag and then waits for
 * the lock), and abandons those pages to their local heap, where the
 * threads that allocate adopt them.  Blocks of the owner's other pages go
 * back to its inbox; one such pass per heap per MM_IDLE_MS.
 */
#include "remote.h"

/* ---- the one inbox walk --------------------------------------------------------------- */

typedef void block_visit_fn(block_t *b, extent_t *page, void *arg);

/* Take every lane of x's inbox (lane 0 first: remote_inbox_waiting) and
 * call visit(b, its page, arg) on every block, the lanes walked side by
 * side.  The caller holds x's lock (its owner, a taker of an idle x, or
 * the sweeper of a dead x holding the registry).  visit may relink b. */
MM_INLINE void inbox_drain(thread_heap_t *x, block_visit_fn *visit, void *arg) {
  block_t *cur[MM_LANES];
  for (unsigned i = 0; i < MM_LANES; i++) cur[i] = atomic_exchange_acquire(&x->xinbox[i], NULL);
  for (;;) {
    uintptr_t any = 0;
    for (unsigned i = 0; i < MM_LANES; i++) {
      block_t *b = cur[i];
      if (!b) continue;
      cur[i] = block_next(b);
      any |= (uintptr_t)cur[i];
      visit(b, page_of_block(b), arg);
    }
    if (!any) break;
  }
}

/* A chain of blocks, built by pushing at the front. */
typedef struct chain_s {
  block_t *first, *last;
} chain_t;

MM_INLINE void chain_push(chain_t *c, block_t *b) {
  block_set_next(b, c->first);
  if (!c->last) c->last = b;
  c->first = b;
}

/* ---- batches and inboxes --------------------------------------------------------------- */

/* Pushes the chain; the CAS retries it took (another sender, or the owner
 * taking its inbox, came between). */
static unsigned push_chain(thread_heap_t *dest, unsigned lane, block_t *first, block_t *last) {
  _Atomic(block_t *) *inbox = &dest->xinbox[lane];
  block_t *head = atomic_load_relaxed(inbox);
  unsigned retries = 0;
  for (;;) {
    block_set_next(last, head);
    if (atomic_cas_weak_release(inbox, &head, first)) return retries;
    retries++;
  }
}

static void take_over_full_pages(thread_heap_t *x);

/* Hand a batch to its heap; take over that heap's full pages if it is idle. */
static MM_NOINLINE void remote_flush(remote_batch_t *rb) {
  thread_heap_t *dest = rb->dest;
  /* Empty the batch before pushing any of it: a fork landing in between
   * leaves the child a batch that lost blocks (their pages are never
   * retired there), never one whose blocks are also in the inbox already,
   * which the child would free twice (lifecycle.c). */
  block_t *head[MM_LANES], *tail[MM_LANES];
  for (unsigned lane = 0; lane < MM_LANES; lane++) {
    head[lane] = rb->head[lane];
    tail[lane] = rb->tail[lane];
    rb->head[lane] = rb->tail[lane] = NULL;
  }
  rb->count = 0;
  atomic_order_stores();
  unsigned retries = 0;
  for (unsigned lane = MM_LANES; lane-- > 0;) /* lane 0 last: remote_inbox_waiting */
    if (head[lane]) retries += push_chain(dest, lane, head[lane], tail[lane]);
  local_heap_t *home = mm_thread_heap->local; /* the sender's (statistics) */
  if (home) {
    atomic_fetch_add_relaxed(&home->xremote_batches, 1);
    if (retries) atomic_fetch_add_relaxed(&home->xremote_retries, retries);
  }
  uint32_t now = os_now_ms();
  if (unlikely(time_reached(now, atomic_load_relaxed(&dest->xactive_ms) + MM_IDLE_MS)) &&
      thread_heap_trylock(dest)) {
    take_over_full_pages(dest);
    /* at most one pass per MM_IDLE_MS: what went back waits for the next */
    atomic_store_relaxed(&dest->xactive_ms, now);
    thread_heap_unlock(dest);
  }
}

void remote_flush_all(thread_heap_t *th) {
  for (unsigned i = 0; i < MM_REMOTE_BUCKETS; i++) {
    /* head[0] too: a fork may land between batch_add's link and count */
    remote_batch_t *rb = &th->out[i];
    if (rb->count || rb->head[0]) remote_flush(rb);
  }
}

void remote_send_one(thread_heap_t *owner, block_t *b) {
  remote_batch_t rb = {.dest = owner, .head = {b}, .tail = {b}, .count = 1};
  remote_flush(&rb);
}

/* The batch of th for blocks of dest's pages: a multiplicative hash of the
 * heap's address picks one of MM_REMOTE_BUCKETS (3 instructions). */
MM_INLINE remote_batch_t *remote_bucket(thread_heap_t *th, const thread_heap_t *dest) {
  uint64_t h = (uint64_t)(uintptr_t)dest * 0x9e3779b97f4a7c15ull;
  return &th->out[h >> (64 - MM_REMOTE_BUCKET_BITS)];
}

/* Append b to batch rb (block i on lane i % MM_LANES); true when the batch
 * is now full and must be flushed. */
MM_INLINE bool batch_add(remote_batch_t *rb, block_t *b) {
  unsigned lane = rb->count % MM_LANES;
  block_set_next(b, rb->head[lane]);
  if (!rb->head[lane]) rb->tail[lane] = b;
  atomic_order_stores(); /* link and tail before head: a fork may land here */
  rb->head[lane] = b;
  return ++rb->count >= MM_REMOTE_BATCH;
}

/* b into th's batch for dest; a bucket holding another heap's batch hands
 * that over first. */
static MM_NOINLINE void remote_push(thread_heap_t *th, thread_heap_t *dest, block_t *b) {
  remote_batch_t *rb = remote_bucket(th, dest);
  if (rb->dest != dest) {
    if (rb->count) remote_flush(rb);
    rb->dest = dest;
  }
  if (batch_add(rb, b)) remote_flush(rb);
}

/* ---- dispatching a block ------------------------------------------------------------------ */

void remote_free_block(thread_heap_t *th, extent_t *page, block_t *b) {
  mm_assert_internal(thread_heap_locked(th));
  for (;;) {
    thread_heap_t *owner = page_owner(page);
    if (owner == th) {
      thread_heap_free_local(th, page, b);
      return;
    }
    if (owner != NULL) {
      remote_push(th, owner, b);
      return;
    }
    /* Abandoned: th adopts it, or frees b into it where it lies
     * (thread_heap_free_abandoned); a run of MM_ADOPT_FREES frees of its
     * class into it adopts it too. */
    unsigned c = page->size_class;
    bool run = false;
    if (th->orphan[c].page == page) {
      run = ++th->orphan[c].frees >= MM_ADOPT_FREES;
    } else {
      th->orphan[c].page = page;
      th->orphan[c].frees = 1;
    }
    int done = thread_heap_free_abandoned(th, page, b, run);
    if (done == 1) return;
    if (done == 2) th->orphan[c].page = NULL; /* owner == th now: look again */
    if (done < 0) os_fatal("mmalloc: free(): double free of %p\n", (void *)b);
  }
}

/* The owner's visit: its own pages directly, anything else dispatched. */
MM_INLINE void take_visit(block_t *b, extent_t *page, void *arg) {
  thread_heap_t *th = arg;
  if (likely(page_owner(page) == th)) thread_heap_free_local(th, page, b);
  else remote_free_block(th, page, b);
}

void remote_take_inbox(thread_heap_t *th) {
  mm_assert_internal(thread_heap_locked(th));
  inbox_drain(th, take_visit, th);
  /* no check here: the fork child drains other threads' heaps, whose page
   * counts a fast path may have left one off (lifecycle.c); the slow paths
   * that take the inbox check after it (alloc.c, free.c, the heartbeat) */
}

/* ---- the idle take-over -------------------------------------------------------------------- */

typedef struct take_over_s {
  thread_heap_t *x;
  extent_list_t taken; /* x's full pages taken off its full list */
  chain_t back;        /* blocks of x's other pages: back to its inbox */
  uint64_t pages;
} take_over_t;

/* A page taken off x's full list is "taken" (page.h: xowner == x, tag 0)
 * until it is handed over, still under x's lock: its owner's free misses
 * on it, and nobody takes it for ownerless. */
MM_INLINE void take_over_visit(block_t *b, extent_t *page, void *arg) {
  take_over_t *t = arg;
  thread_heap_t *x = t->x;
  bool mine = page_owner(page) == x;
  if (mine && page_owner_is(page, x->tid, true)) {
    extent_list_remove(&x->full, page);
    extent_list_push_back(&t->taken, page);
    page_set_taken(page);
    t->pages++;
  } else if (!mine || !page_is_taken(page)) {
    chain_push(&t->back, b);
    return;
  }
  page_push_local(page, b);
  page->used--;
}

/* Holding x's lock (x idle): free the inbox's blocks of x's full pages into
 * them and hand those pages to their local heap; the rest goes back to x. */
static void take_over_full_pages(thread_heap_t *x) {
  mm_assert_internal(thread_heap_locked(x));
  take_over_t t = {x, {NULL, NULL}, {NULL, NULL}, 0};
  inbox_drain(x, take_over_visit, &t);
  if (t.back.first) push_chain(x, 0, t.back.first, t.back.last);
  extent_t *page;
  while ((page = t.taken.first) != NULL) {
    extent_list_remove(&t.taken, page);
    if (page->used == 0) thread_heap_retire_page(page);
    else thread_heap_abandon_page(page);
  }
  if (t.pages) local_heap_count_taken_over(x->local, t.pages);
}

/* ---- dead heaps' inboxes ------------------------------------------------------------------ */

MM_INLINE void chain_visit(block_t *b, extent_t *page, void *arg) {
  (void)page;
  chain_push(arg, b);
}

static void sweep_one(thread_heap_t *dead, void *arg) { inbox_drain(dead, chain_visit, arg); }

/* Blocks freed by threads that had not seen their owner exit: every lane
 * of every dead heap of a local heap, as one chain, taken under the
 * registry's lock (no thread heap lock needed: a dead heap is not reused
 * while the registry is held, and a taker of it drains it atomically too).
 * try: return NULL at once if the registry is busy. */
block_t *remote_dead_take(uint32_t heap, bool try) {
  chain_t all = {NULL, NULL};
  thread_heap_foreach_dead(heap, try, sweep_one, &all);
  return all.first;
}

/* th's lock held: free every block of a chain (remote_dead_take) like any
 * other block of th's. */
void remote_free_chain(thread_heap_t *th, block_t *b) {
  mm_assert_internal(thread_heap_locked(th));
  while (b) {
    block_t *next = block_next(b);
    remote_free_block(th, page_of_block(b), b);
    b = next;
  }
}

/* ---- the remote free --------------------------------------------------------------------- */

/* After a remote free: flush the batch if full; every MM_HEARTBEAT_CALLS
 * remote frees, the heartbeat, which a thread that only frees remotely
 * needs too (it hands over partial batches, purges due heaps). */
static MM_NOINLINE void free_remote_after(thread_heap_t *th, remote_batch_t *rb) {
  if (rb->count >= MM_REMOTE_BATCH) remote_flush(rb);
  if (th->slow_calls % MM_HEARTBEAT_CALLS == 0) {
    thread_heap_lock(th);
    thread_heap_beat(th);
    thread_heap_unlock(th);
  }
}

/* b, carrying its free canary, into th's batch for owner (not th). */
MM_INLINE void send_remote(thread_heap_t *th, thread_heap_t *owner, block_t *b) {
  remote_batch_t *rb = remote_bucket(th, owner);
  if (unlikely(rb->dest != owner)) {
    remote_push(th, owner, b); /* the bucket holds another heap's batch */
    return;
  }
  if (likely(!batch_add(rb, b) && ++th->slow_calls % MM_HEARTBEAT_CALLS != 0)) return;
  free_remote_after(th, rb);
}

/* The checked modes' free without the heap's lock (secure mode and zero on
 * free; not valgrind, which must see every block): the owner's fast free
 * or the remote free below, with the checks of their fast paths, the block
 * filled and marked (block_on_free) before anyone else can see it, and the
 * link encoded (page_push_local, batch_add).  A full, taken or abandoned
 * page, a thread without a heap and a bad pointer go on to the slow path. */
static MM_NOINLINE void free_other_checked_any(void *p, extent_t *page, const char *call) {
  thread_heap_t *th = mm_thread_heap;
  thread_heap_t *owner = page_owner(page);
  uint64_t off = (uintptr_t)p - page->page_start;
  block_t *b = p;
  if (owner && th != &mm_heap_empty && !mm_vg_rz && page_offset_is_block(page, off) &&
      !block_is_free(b) &&
      (owner != th || page_owner_is(page, th->tid, false))) { /* ours: not full, not taken */
    block_on_free(page, b);
    if (owner != th) {
      send_remote(th, owner, b);
      return;
    }
    page_push_local(page, b);
    if (likely(--page->used != 0)) return;
    thread_heap_page_empty_slow(th, page);
    return;
  }
  thread_heap_free_slow(p, call);
}

/* Secure mode chosen at start-up (MMALLOC_SECURE, the fast paths off): a
 * block of this thread's own page that is not full is checked, filled and
 * pushed as the free fast path of a build with secure mode built in does
 * it, with no call that returns (so no registers to save); everything else
 * (zero on free alone, valgrind, other owners, full pages, long bodies
 * and bad pointers) goes on to free_other_checked_any. */
static MM_NOINLINE void free_other_checked(void *p, extent_t *page, const char *call) {
  thread_heap_t *th = mm_thread_heap;
  block_t *b = p;
  uint64_t off = (uintptr_t)p - page->page_start;
  uint32_t size = page->block_size;
  if (!MM_VALGRIND && options.secure && block_body_inline(size) && page_owner(page) == th &&
      page_owner_is(page, th->tid, false) && page_offset_is_block_own(page, off) &&
      !block_is_free(b)) {
    block_on_free_sized(b, size);
    page_push_local(page, b);
    if (likely(--page->used != 0)) return;
    thread_heap_page_empty_slow(th, page);
    return;
  }
  free_other_checked_any(p, page, call);
}

/* The free fast path missed on the page's tag: p is in `page` (the caller
 * looked it up) and the page is not tagged with this thread's plain id.
 * The common case, a page of another live thread, is handled here, kept
 * small (no call on its common path, so few registers to save): the same
 * checks as the owner's fast path (block boundary of the carved part, not
 * already free), then into the batch for the page's owner.  A large block
 * goes straight to its local heap, a block of this thread's own full page
 * to thread_heap_free_block.  The checked modes go to free_other_checked;
 * an abandoned page, a thread without a heap and a bad pointer go on to
 * thread_heap_free_slow. */
void thread_heap_free_other(void *p, extent_t *page, const char *call) {
  thread_heap_t *th = mm_thread_heap;
  thread_heap_t *owner = page_owner(page);
  uintptr_t a = (uintptr_t)p;
  uint64_t off = a - page->page_start;
  block_t *b = p;
  uintptr_t canary = a ^ mm_canary_key;
  if (unlikely(mm_slow_only)) {
    free_other_checked(p, page, call);
    return;
  }
  if (likely(owner && owner != th && th != &mm_heap_empty && page_offset_is_block(page, off) &&
             b->canary != canary)) {
    b->canary = canary;
    send_remote(th, owner, b);
    return;
  }
  if (owner == th && page_offset_is_block(page, off) && b->canary != canary) {
    /* This thread's own full page (or one a taker holds): the checks the
     * slow lookup would make are made, so it is skipped. */
    b->canary = canary;
    thread_heap_free_block(th, page, b);
    return;
  }
  if (!owner && page->kind == MM_EXTENT_LARGE && a == large_block(page)) {
    /* A large block (the fast path's slot is a heap slot, never huge): the
     * slow lookup would find this extent and check no more but the mark of
     * a stashed block (thread_heap.c, the stash), which this checks. */
    if (slot_of_extent(page)->tree == MM_TREE_MEDIUM) {
      if (unlikely(thread_heap_stashed(page))) thread_heap_bad_pointer(call, p, "double free of");
      if (thread_heap_stash_put(th, page)) return;
    }
    local_heap_free_large(page, false);
    return;
  }
  thread_heap_free_slow(p, call);
}

/* ---- the heartbeat ------------------------------------------------------------------------ */

/* Every MM_HEARTBEAT_MS of slow-path activity: hand over remote batches,
 * retire current and kept pages that stayed empty, free what reached dead heaps of
 * our local heap, and purge any local heap that is due. */
MM_COLD void remote_heartbeat(thread_heap_t *th, uint32_t now) {
  mm_assert_internal(thread_heap_locked(th));
  th->last_beat_ms = now;
  remote_flush_all(th);
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    extent_t *page = th->queue[c].first;
    if (!page) continue;
    if (page->used != 0) {
      page->idle = 0;
    } else if (++page->idle >= 2) {
      extent_list_remove(&th->queue[c], page);
      thread_heap_direct_update(th, c);
      thread_heap_retire_page(page);
    }
  }
  thread_heap_fostered_release(th);
  thread_heap_empty_release(th, false);
  thread_heap_stash_beat(th);
  remote_free_chain(th, remote_dead_take(th->local->index, true)); /* try: our lock is held */
  remote_flush_all(th);
  local_heap_purge_due(now, false, NULL);
  thread_heap_check_all(th);
}

/* ---- checker -------------------------------------------------------------------------------- */

/* b is a block in flight: free (its canary), in a page, at a carved block
 * boundary of it.  The slot table names a's slot and the extent map its
 * page, so its offset there is below the page's size (page_offset_is_block's
 * condition). */
static bool in_flight_ok(const block_t *b) {
  uintptr_t a = (uintptr_t)b;
  if (slot_table_entry(a) != MM_SLOT_HEAP) return false;
  const extent_t *page = page_of_block(b);
  uint64_t off = a - page->page_start;
  return page->kind == MM_EXTENT_PAGE && page_offset_is_block(page, off) && block_is_free(b);
}

bool remote_is_valid(thread_heap_t *th, char *why, size_t why_size) {
  if (th == &mm_heap_empty) return true;
  mm_assert_internal(thread_heap_locked(th));
  for (unsigned i = 0; i < MM_REMOTE_BUCKETS; i++) {
    const remote_batch_t *rb = &th->out[i];
    uint32_t n = 0;
    for (unsigned lane = 0; lane < MM_LANES; lane++) {
      uint32_t want = rb->count / MM_LANES + (lane < rb->count % MM_LANES ? 1 : 0), got = 0;
      const block_t *last = NULL;
      for (const block_t *b = rb->head[lane]; b && got <= MM_REMOTE_BATCH; b = block_next(b)) {
        if (!in_flight_ok(b)) {
          os_format(why, why_size, "thread heap %p: batch %u holds %p, not a free block of a page",
                    (void *)th, i, (const void *)b);
          return false;
        }
        last = b;
        got++;
      }
      if (got != want || (got && rb->tail[lane] != last) || (got && !rb->dest)) {
        os_format(why, why_size, "thread heap %p: batch %u lane %u holds %u blocks, count says %u",
                  (void *)th, i, lane, got, want);
        return false;
      }
      n += got;
    }
    mm_assert_internal(n == rb->count);
  }
  /* The inbox: only this thread (holding the lock) takes from it, others
   * only push in front, so the chains below a head read stay as they are. */
  for (unsigned lane = 0; lane < MM_LANES; lane++) {
    /* every block checked; a cycle found by a second walker at double pace */
    const block_t *fast = atomic_load_acquire(&th->xinbox[lane]);
    for (const block_t *b = fast; b; b = block_next(b)) {
      if (!in_flight_ok(b)) {
        os_format(why, why_size, "thread heap %p: inbox lane %u holds %p, not a free block",
                  (void *)th, lane, (const void *)b);
        return false;
      }
      for (int step = 0; step < 2 && fast; step++) /* the slow walker reports a bad one */
        fast = in_flight_ok(fast) ? block_next(fast) : NULL;
      if (fast && fast == block_next(b)) {
        os_format(why, why_size, "thread heap %p: inbox lane %u has a cycle at %p", (void *)th,
                  lane, (const void *)b);
        return false;
      }
    }
  }
  return true;
}
