/* thread_heap.c — thread heaps: the malloc and free fast paths and every path
 * they fall back to.
 *
 * Layer: thread heap (above the local heaps; below api.c and override.c).
 *
 * Call tree, fast path first:
 *
 *   malloc(n)                                      api.c, override.c
 *   └ thread_heap_malloc_fast              internal.h, force-inlined
 *       n <= 1 KiB and direct[(n+15)/16]->free != NULL: pop it    (~10 insns)
 *     └ thread_heap_malloc_slow                              noinline
 *         first call of a thread: thread_heap_init_current
 *         medium class whose first page has a free block: pop it
 *         thread_heap_beat: take the inbox; now and then the heartbeat
 *             (flush remote batches, retire idle pages, purge due heaps)
 *         n <= 32 KiB: thread_heap_alloc_class
 *             walk queue[c]: refill (local frees, then fresh blocks) or
 *             move to the full list; none left: adopt an abandoned page or
 *             take a page from the local heap
 *         else thread_heap_alloc_big: local_heap_alloc_large / _huge
 *
 *   free(p)
 *   └ thread_heap_free_fast                internal.h, force-inlined
 *       p in a heap slot, its page owned by this thread, p at a carved block
 *       boundary and not already free: push on local_free, used--   (~25)
 *       used reached 0: thread_heap_page_empty (retire unless current)
 *     ├ thread_heap_free_remote      (p in a heap slot, page not ours) noinline
 *     │   page of another live thread, p at a carved block boundary, not
 *     │   already free: batch_add onto the batch for that thread    (~55)
 *     │   a full batch: to its inbox, one CAS per lane (remote_flush)
 *     └ thread_heap_free_slow       (anything else, also from the above)
 *         thread_heap_lookup: not ours / interior / double free -> abort
 *         LARGE: local_heap_free_large; huge: local_heap_free_huge
 *         thread_heap_free_block:
 *           page ours but full: local free, back into its queue
 *           page abandoned: adopt it, then local free
 *           page of another thread: append to that thread's remote batch;
 *           a full batch goes to its inbox with one CAS
 *
 * Remote-free protocol.  A block freed by a thread that does not own its page
 * is linked into a batch per destination heap (no atomics), then the batch
 * is pushed onto the owner's inbox, a lock-free stack: the last block's next
 * is set to the inbox head read, and a release CAS installs the first block.
 * The owner takes the whole inbox with one acquire exchange (pairing with
 * those CASes, so the links are visible) and frees each block as its own.
 * Batch and inbox come in MM_LANES lanes (block i of a batch on lane i %
 * MM_LANES, one CAS per lane): the owner's walk reads each link from a line
 * the freeing thread wrote last, a cache miss, and walking the lanes side
 * by side keeps MM_LANES of those misses in flight instead of one.
 * A page is retired only when used == 0, and blocks in batches or inboxes
 * still count as used, so no thread ever pushes into a retired page.
 * The owner read by a remote freer may be stale: if the owner exited in
 * between, the block lands in a dead heap's inbox, which live threads of its
 * local heap sweep (local_heap_take_dead_inboxes) and whoever reuses the
 * heap takes over; each such block is dispatched again by its page's
 * current owner.
 *
 * Thread exit (pthread key destructor) and fork (in the child, for every
 * other thread's heap): thread_heap_abandon gives empty pages back and parks
 * the others in their home local heap, where allocating threads of that heap
 * adopt them and a thread freeing into one adopts it.
 *
 * Idle owners.  A thread that allocated a lot and then blocks (a loader
 * thread in pthread_join while workers free what it built and allocate
 * their own) never takes its inbox, so the memory freed into its pages is
 * lost to everyone: peak RSS doubles.  So a thread heap's slow paths run
 * under its lock, xlock (an uncontended exchange; the fast paths never take
 * it), and record when they ran (xactive_ms).  A thread handing a batch to a
 * heap whose owner has not run a slow path for MM_IDLE_MS tries that lock;
 * holding it, it takes the inbox and frees every block of a FULL page into
 * that page (the owner's fast paths never touch a full page: malloc does
 * not see it, free misses on the MM_OWNER_FULL tag and then waits for the
 * lock), and gives those pages to their local heap as abandoned, where the
 * threads that allocate adopt them.  Blocks of the owner's other pages go
 * back to its inbox; one such pass per heap per MM_IDLE_MS.  Lock order: a
 * thread heap's lock, then a local heap's lock; the lock of another thread
 * heap only by try-lock, so no thread ever waits for another's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "internal.h"

#if MM_VALGRIND
#include <valgrind/memcheck.h>
#define VG_RZ 16 /* bytes after each block that memcheck sees as no-access */
#else
#define VG_RZ 0
#endif

__thread thread_heap_t *mm_thread_heap __attribute__((tls_model("initial-exec"))) =
    &mm_heap_empty;

/* The page every direct[] entry of an empty heap points to: no free block,
 * no owner, so both fast paths miss on it. */
extent_t mm_page_empty;

/* The heap of a thread that has not allocated yet. */
thread_heap_t mm_heap_empty = {.direct = {[0 ... MM_DIRECT_SLOTS - 1] = &mm_page_empty}};

/* The red zone after each block: VG_RZ when running on valgrind, else 0. */
static size_t vg_rz;

static pthread_key_t thread_key;
static _Atomic(int) process_state; /* 0 none, 1 initialising, 2 ready */
static int cpu_count;

static void thread_heap_exit_cb(void *arg);
static void fork_prepare(void) { local_heap_fork_prepare(); }
static void fork_parent(void) { local_heap_fork_parent(); }
static void fork_child(void);

/* ---- the slow-path lock ---------------------------------------------------------- */

static void owner_lock(thread_heap_t *th) {
  for (unsigned spins = 0; atomic_exchange_acquire(&th->xlock, 1) != 0; spins++)
    if (spins >= 64) sched_yield(); /* a taker holds it: a bounded walk of our inbox */
}

static void owner_unlock(thread_heap_t *th) { atomic_store_release(&th->xlock, 0); }

static bool owner_trylock(thread_heap_t *th) {
  return atomic_load_relaxed(&th->xlock) == 0 && atomic_exchange_acquire(&th->xlock, 1) == 0;
}

/* ---- start-up --------------------------------------------------------------- */

/* Once per process, from the first allocation (or the library constructor).
 * Nothing here may allocate: a recursive malloc would wait on itself.
 * pthread_atfork may allocate, so it runs after the state says ready. */
void thread_heap_process_init(void) {
  if (likely(atomic_load_acquire(&process_state) == 2)) return;
  int expected = 0;
  if (atomic_cas_strong_acq_rel(&process_state, &expected, 1)) {
    os_init();
    options_init();
    size_class_init();
    mm_canary_key = (uintptr_t)os_random() | 1;
    cpu_count = os_cpu_count();
    /* Secure mode and valgrind switch the fast paths off: every call comes
     * through the checked slow paths (see page.c). */
#if MM_VALGRIND
    vg_rz = RUNNING_ON_VALGRIND ? VG_RZ : 0;
#endif
    mm_slow_only = options.secure || options.zero_on_free || vg_rz;
    if (options.secure) mm_list_key = (uintptr_t)os_random() | 1;
    local_heap_init_all((uint32_t)(options.heaps > 0 ? options.heaps : cpu_count));
    options.heaps = mm_nheaps;
    pthread_key_create(&thread_key, thread_heap_exit_cb);
    atomic_store_release(&process_state, 2);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    if (options.verbose) options_print();
  } else {
    while (atomic_load_acquire(&process_state) != 2) sched_yield();
  }
}

static void direct_update(thread_heap_t *th, unsigned c) {
  const size_class_t *sc = &mm_size_classes[c];
  if (sc->size > MM_DIRECT_MAX) return;
  extent_t *page = th->queue[c].first && !mm_slow_only ? th->queue[c].first : &mm_page_empty;
  unsigned lo = c ? mm_size_classes[c - 1].size / 16 + 1 : 0;
  for (unsigned k = lo; k <= sc->size / 16; k++) th->direct[k] = page;
}

/* Reset a thread heap for a new thread (its inbox is kept: blocks there are
 * still to be freed). */
void thread_heap_init_fresh(thread_heap_t *th, local_heap_t *local) {
  for (unsigned k = 0; k < MM_DIRECT_SLOTS; k++) th->direct[k] = &mm_page_empty;
  memset(th->queue, 0, sizeof(th->queue));
  memset(&th->full, 0, sizeof(th->full));
  memset(th->out, 0, sizeof(th->out));
  th->local = local;
  th->tid = mm_thread_id();
  th->slow_calls = 0;
  th->last_beat_ms = os_now_ms();
  atomic_store_relaxed(&th->xactive_ms, th->last_beat_ms);
}

/* Bind the calling thread to the local heap of its CPU (threads on
 * neighbouring CPUs share one when there are fewer heaps than CPUs). */
static MM_NOINLINE thread_heap_t *thread_heap_init_current(void) {
  thread_heap_process_init();
  unsigned cpu = (unsigned)os_current_cpu() % (unsigned)cpu_count;
  unsigned idx = (unsigned)((uint64_t)cpu * mm_nheaps / (unsigned)cpu_count);
  local_heap_t *lh = &mm_heaps[idx % mm_nheaps];
  thread_heap_t *th = local_heap_thread_heap_new(lh);
  if (!th) return NULL;
  owner_lock(th); /* a taker may still be at its previous thread's inbox */
  thread_heap_init_fresh(th, lh);
  owner_unlock(th);
  mm_thread_heap = th;
  pthread_setspecific(thread_key, th); /* after the TLS: it may allocate */
  return th;
}

thread_heap_t *thread_heap_current(void) {
  thread_heap_t *th = mm_thread_heap;
  if (unlikely(th == &mm_heap_empty)) th = thread_heap_init_current();
  return th;
}

/* ---- checker ------------------------------------------------------------------ */

/* The invariants of thread_heap_t (types.h) and of every page it owns.
 * Owner thread only.  O(pages + blocks). */
bool thread_heap_is_valid(thread_heap_t *th, char *why, size_t why_size) {
  if (th == &mm_heap_empty) return true;
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    const page_queue_t *q = &th->queue[c];
    extent_t *want = q->first && !mm_slow_only ? q->first : &mm_page_empty;
    for (unsigned k = 0; k < MM_DIRECT_SLOTS; k++)
      if (mm_direct_class[k] == c && th->direct[k] != want) {
        os_format(why, why_size, "thread heap %p: direct[%u] is not the head of queue %u",
                  (void *)th, k, c);
        return false;
      }
    extent_t *prev = NULL;
    for (extent_t *p = q->first; p; prev = p, p = p->next) {
      if (p->prev != prev || p->size_class != c || atomic_load_relaxed(&p->xowner) != th ||
          atomic_load_relaxed(&p->xowner_tid) != page_owner_tid(th, false)) {
        os_format(why, why_size, "thread heap %p: queue %u holds page %p that is not its own",
                  (void *)th, c, (void *)p->page_start);
        return false;
      }
      if (!page_is_valid(p, why, why_size)) return false;
    }
    if (q->last != prev) {
      os_format(why, why_size, "thread heap %p: queue %u has a wrong tail", (void *)th, c);
      return false;
    }
  }
  for (extent_t *p = th->full.first; p; p = p->next) {
    if (atomic_load_relaxed(&p->xowner) != th ||
        atomic_load_relaxed(&p->xowner_tid) != page_owner_tid(th, true)) {
      os_format(why, why_size, "thread heap %p: full page %p not marked full", (void *)th,
                (void *)p->page_start);
      return false;
    }
    if (!page_is_valid(p, why, why_size)) return false;
  }
  return true;
}

#if MM_DEBUG >= 3
static void thread_heap_check(thread_heap_t *th) {
  char why[200] = "";
  if (!thread_heap_is_valid(th, why, sizeof(why)))
    os_fatal("mmalloc: internal error: %s\n", why);
}
#else
static inline void thread_heap_check(thread_heap_t *th) { (void)th; }
#endif

/* ---- remote frees -------------------------------------------------------------- */

/* The page of a free block (any thread: the page map names a page in use). */
MM_INLINE extent_t *page_of_block(const block_t *b) {
  uintptr_t a = (uintptr_t)b;
  return slot_extent_of(slot_of_address(a), a);
}

static void push_chain(thread_heap_t *dest, unsigned lane, block_t *first, block_t *last) {
  _Atomic(block_t *) *inbox = &dest->xinbox[lane];
  block_t *head = atomic_load_relaxed(inbox);
  do {
    block_set_next(last, head);
  } while (!atomic_cas_weak_release(inbox, &head, first));
}

/* Something waits in th's inboxes (a hint).  Lane 0 alone tells: every
 * chain pushed holds a block on lane 0, and its lanes are pushed from the
 * last to lane 0 (remote_flush), so a block on another lane belongs to a
 * chain whose lane-0 part is in the inbox or still to come; the owner takes
 * lane 0 first (acquire), then the others, which by then hold the rest of
 * every chain whose lane 0 it took. */
MM_INLINE bool inbox_waiting(thread_heap_t *th) {
  return atomic_load_relaxed(&th->xinbox[0]) != NULL;
}

/* Holding x's lock (x idle): free the inbox's blocks of x's full pages into
 * them and hand those pages to their local heap; the rest goes back to x.
 * A page taken off x's full list keeps xowner == x with xowner_tid 0 (no
 * thread's id) until it is handed over, still under x's lock: its owner's
 * free misses on it, and nobody takes it for ownerless. */
static void take_over_full_pages(thread_heap_t *x) {
  uintptr_t full_tid = page_owner_tid(x, true);
  page_queue_t taken = {NULL, NULL};
  block_t *back_first = NULL, *back_last = NULL;
  uint64_t pages = 0;
  for (unsigned lane = 0; lane < MM_LANES; lane++) {
    block_t *b = atomic_exchange_acquire(&x->xinbox[lane], NULL);
    while (b) {
      block_t *next = block_next(b);
      extent_t *page = page_of_block(b);
      uintptr_t tid = atomic_load_relaxed(&page->xowner_tid);
      if (atomic_load_relaxed(&page->xowner) == x && (tid == full_tid || tid == 0)) {
        if (tid == full_tid) {
          page_queue_remove(&x->full, page);
          page_queue_push_back(&taken, page);
          atomic_store_relaxed(&page->xowner_tid, 0);
          pages++;
        }
        block_set_next(b, page->local_free);
        page->local_free = b;
        page->used--;
      } else {
        block_set_next(b, back_first);
        if (!back_last) back_last = b;
        back_first = b;
      }
      b = next;
    }
  }
  if (back_first) push_chain(x, 0, back_first, back_last);
  extent_t *page;
  while ((page = taken.first) != NULL) {
    page_queue_remove(&taken, page);
    if (page->used == 0) local_heap_return_page(page);
    else local_heap_abandon_page(page);
  }
  if (pages) atomic_fetch_add_relaxed(&x->local->xpages_taken_over, pages);
}

/* Hand a batch to its heap; take over that heap's full pages if it is idle. */
static MM_NOINLINE void remote_flush(remote_batch_t *rb) {
  thread_heap_t *dest = rb->dest;
  for (unsigned lane = MM_LANES; lane-- > 0;) { /* lane 0 last: inbox_waiting */
    if (!rb->head[lane]) continue;
    push_chain(dest, lane, rb->head[lane], rb->tail[lane]);
    rb->head[lane] = rb->tail[lane] = NULL;
  }
  rb->count = 0;
  uint32_t now = os_now_ms();
  if (unlikely(time_reached(now, atomic_load_relaxed(&dest->xactive_ms) + MM_IDLE_MS)) &&
      owner_trylock(dest)) {
    take_over_full_pages(dest);
    /* at most one pass per MM_IDLE_MS: what went back waits for the next */
    atomic_store_relaxed(&dest->xactive_ms, now);
    owner_unlock(dest);
  }
}

static void remote_flush_all(thread_heap_t *th) {
  for (unsigned i = 0; i < MM_REMOTE_BUCKETS; i++)
    if (th->out[i].count) remote_flush(&th->out[i]);
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

/* ---- freeing a block whose canary is set ------------------------------------------ */

/* used reached 0: keep the page if it is its class's current one (a thread
 * that frees its last block usually allocates again), else send it home. */
void thread_heap_page_empty(thread_heap_t *th, extent_t *page) {
  page_queue_t *q = &th->queue[page->size_class];
  if (q->first == page) return;
  page_queue_remove(q, page);
  local_heap_return_page(page);
}

MM_INLINE void free_local(thread_heap_t *th, extent_t *page, block_t *b) {
  block_set_next(b, page->local_free);
  page->local_free = b;
  if (page_is_full(page)) {
    unsigned c = page->size_class;
    page_queue_remove(&th->full, page);
    page_queue_push_back(&th->queue[c], page);
    page_set_full(page, th, false);
    if (th->queue[c].first == page) direct_update(th, c);
  }
  if (--page->used == 0) thread_heap_page_empty(th, page);
}

/* Free b (its canary set) into page, from thread heap th (never the empty
 * heap), whoever owns the page. */
static void free_block(thread_heap_t *th, extent_t *page, block_t *b) {
  for (;;) {
    thread_heap_t *owner = atomic_load_relaxed(&page->xowner);
    if (owner == th) {
      free_local(th, page, b);
      return;
    }
    if (owner != NULL) {
      remote_push(th, owner, b);
      return;
    }
    /* Abandoned: adopt it (or find who did) and look again. */
    if (local_heap_adopt_page(page, th)) {
      page_queue_push_back(&th->queue[page->size_class], page);
      if (th->queue[page->size_class].first == page) direct_update(th, page->size_class);
    }
  }
}

/* Free what other threads sent.  The blocks were last written by those
 * threads, so each link read is a cache miss: the lanes are walked side by
 * side, one block of each per round, to have MM_LANES misses in flight. */
static void take_inbox(thread_heap_t *th) {
  block_t *cur[MM_LANES];
  for (unsigned i = 0; i < MM_LANES; i++) /* lane 0 first: inbox_waiting */
    cur[i] = atomic_exchange_acquire(&th->xinbox[i], NULL);
  for (;;) {
    uintptr_t any = 0;
    for (unsigned i = 0; i < MM_LANES; i++) {
      block_t *b = cur[i];
      if (!b) continue;
      cur[i] = block_next(b);
      any |= (uintptr_t)cur[i];
      extent_t *page = page_of_block(b);
      if (likely(atomic_load_relaxed(&page->xowner) == th)) free_local(th, page, b);
      else free_block(th, page, b);
    }
    if (!any) break;
  }
}

/* ---- heartbeat ----------------------------------------------------------------------- */

/* Every MM_HEARTBEAT_MS of slow-path activity: hand over remote batches,
 * retire current pages that stayed empty, free what reached dead heaps of
 * our local heap, and purge any local heap that is due. */
static MM_COLD void heartbeat(thread_heap_t *th, uint32_t now) {
  th->last_beat_ms = now;
  remote_flush_all(th);
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    extent_t *page = th->queue[c].first;
    if (!page) continue;
    if (page->used != 0) {
      page->idle = 0;
    } else if (++page->idle >= 2) {
      page_queue_remove(&th->queue[c], page);
      direct_update(th, c);
      local_heap_return_page(page);
    }
  }
  block_t *b = local_heap_take_dead_inboxes(th->local);
  while (b) {
    block_t *next = block_next(b);
    free_block(th, page_of_block(b), b);
    b = next;
  }
  remote_flush_all(th);
  local_heap_purge_due(now);
}

/* Every slow path of the owner, holding its lock. */
MM_INLINE void thread_heap_beat(thread_heap_t *th) {
  if (inbox_waiting(th)) take_inbox(th);
  uint32_t now = os_now_ms();
  if (atomic_load_relaxed(&th->xactive_ms) != now) atomic_store_relaxed(&th->xactive_ms, now);
  if ((uint32_t)(now - th->last_beat_ms) >= MM_HEARTBEAT_MS) heartbeat(th, now);
}

/* ---- allocation ------------------------------------------------------------------------ */

MM_INLINE void *page_pop(extent_t *page) {
  if (unlikely(mm_slow_only)) return page_pop_checked(page);
  block_t *b = page->free;
  page->free = b->next;
  page->used++;
  b->canary = 0;
  return b;
}

/* A page of class c for th: one abandoned in its local heap, else a fresh
 * one.  Abandoned pages without a free block join th's full list. */
static extent_t *new_page(thread_heap_t *th, unsigned c) {
  extent_t *page;
  while ((page = local_heap_adopt_class(th->local, c, th)) != NULL) {
    if (page_refill(page)) return page;
    page_queue_push_front(&th->full, page);
    page_set_full(page, th, true);
  }
  page = local_heap_take_page(th->local, c);
  if (page) page_set_owner(page, th);
  return page;
}

static void *alloc_class(thread_heap_t *th, unsigned c) {
  page_queue_t *q = &th->queue[c];
  extent_t *head = q->first;
  extent_t *page = head;
  while (page) {
    extent_t *next = page->next;
    if (page_refill(page)) {
      if (page != q->first) {
        page_queue_remove(q, page);
        page_queue_push_front(q, page);
      }
      if (page != head) direct_update(th, c); /* direct[] names the head */
      return page_pop(page);
    }
    /* No free block and nothing left to carve: off to the full list. */
    page_queue_remove(q, page);
    page_queue_push_front(&th->full, page);
    page_set_full(page, th, true);
    page = next;
  }
  page = new_page(th, c);
  if (!page) {
    direct_update(th, c);
    errno = ENOMEM;
    return NULL;
  }
  page_queue_push_front(q, page);
  direct_update(th, c);
  page_refill(page);
  return page_pop(page);
}

static void *alloc_big(thread_heap_t *th, size_t size, size_t align, bool zero, bool room) {
  if (size > PTRDIFF_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  if (size >= MM_HUGE_MIN || align > MM_SLOT_SIZE / 8)
    return local_heap_alloc_huge(th->local, size, align, zero);
  return local_heap_alloc_large(th->local, size, align, zero, room);
}

/* Any allocation, once th is known: small classes (aligned ones when
 * align > 16), large and huge blocks. */
static void *alloc_any(thread_heap_t *th, size_t size, size_t align, bool zero) {
  thread_heap_beat(th);
  if (size <= MM_SMALL_MAX && align <= MM_PAGE_SIZE) {
    unsigned c = align > 16 ? size_class_aligned(size, align) : size_class_of(size);
    if (c < MM_CLASSES) {
      void *p = alloc_class(th, c);
      if (p && zero) memset(p, 0, size);
      return p;
    }
  }
  return alloc_big(th, size ? size : 1, align, zero, false);
}

/* The checked modes (mm_slow_only): every allocation comes here.  Under
 * valgrind, each block is reported to memcheck, with VG_RZ no-access bytes
 * after it (a read past the end is reported as it is on glibc). */
static MM_NOINLINE void *alloc_checked(thread_heap_t *th, size_t size, size_t align, bool zero) {
  if (size > PTRDIFF_MAX - vg_rz) {
    errno = ENOMEM;
    return NULL;
  }
  void *p = alloc_any(th, size + vg_rz, align, zero);
#if MM_VALGRIND
  if (p && vg_rz) {
    extent_t *e = thread_heap_lookup(p, "malloc"); /* huge blocks too */
    size_t room = e->kind == MM_EXTENT_PAGE ? e->block_size : extent_usable(e);
    VALGRIND_MAKE_MEM_NOACCESS(p, room);
    VALGRIND_MALLOCLIKE_BLOCK(p, size, 0, zero);
  }
#endif
  return p;
}

void *thread_heap_malloc_slow(thread_heap_t *th, size_t size) {
  if (unlikely(th == &mm_heap_empty)) {
    th = thread_heap_init_current();
    if (!th) {
      errno = ENOMEM;
      return NULL;
    }
  }
  void *p;
  if (unlikely(mm_slow_only)) {
    owner_lock(th);
    p = alloc_checked(th, size, 0, false);
    owner_unlock(th);
    return p;
  }
  if (likely(size <= MM_SMALL_MAX)) {
    unsigned c = size_class_of(size);
    extent_t *page = th->queue[c].first;
    if (page && page->free) return page_pop(page); /* medium sizes */
    owner_lock(th);
    thread_heap_check(th);
    thread_heap_beat(th);
    p = alloc_class(th, c);
    thread_heap_check(th);
    owner_unlock(th);
    return p;
  }
  owner_lock(th);
  thread_heap_beat(th);
  owner_unlock(th);
  return alloc_big(th, size, 0, false, false);
}

/* Allocation with an alignment above 16 (or zeroed large memory). */
void *thread_heap_malloc_aligned(size_t size, size_t align, bool zero) {
  thread_heap_t *th = thread_heap_current();
  if (!th) {
    errno = ENOMEM;
    return NULL;
  }
  owner_lock(th);
  void *p = mm_slow_only ? alloc_checked(th, size, align, zero) : alloc_any(th, size, align, zero);
  owner_unlock(th);
  return p;
}

/* ---- pointer validation ------------------------------------------------------------ */

static MM_COLD __attribute__((noreturn)) void bad_pointer(const char *call, const void *p,
                                                           const char *what) {
  os_fatal("mmalloc: %s(): %s %p\n", call, what, p);
}

/* The PAGE or LARGE extent that handed out p, or abort with one line naming
 * the call and the pointer. */
extent_t *thread_heap_lookup(const void *p, const char *call) {
  uintptr_t a = (uintptr_t)p;
  unsigned te = slot_table_entry(a);
  if (te == MM_SLOT_NONE)
    bad_pointer(call, p, "invalid pointer (not allocated by mmalloc, or already freed)");
  if (te == MM_SLOT_HUGE_TAIL) bad_pointer(call, p, "invalid pointer (inside a block)");
  if (te == MM_SLOT_HUGE_AT) {
    extent_t *h = region_huge_at(a);
    if (!h) bad_pointer(call, p, "invalid pointer (inside a block)");
    if (h->kind != MM_EXTENT_LARGE) bad_pointer(call, p, "invalid pointer (freed memory: double free?)");
    return h;
  }
  slot_t *slot = slot_of_address(a);
  extent_t *e = region_extent_at(slot, a & ~(uintptr_t)(MM_PAGE_SIZE - 1));
  if (!e) {
    bad_pointer(call, p, te == MM_SLOT_HUGE ? "invalid pointer (inside a block)"
                             : "invalid pointer (not allocated by mmalloc)");
  }
  switch (e->kind) {
  case MM_EXTENT_LARGE:
    if (a != e->node.start) bad_pointer(call, p, "invalid pointer (inside a block)");
    return e;
  case MM_EXTENT_PAGE: {
    uint64_t off = a - e->page_start;
    if (off * e->magic >= e->magic) bad_pointer(call, p, "invalid pointer (inside a block)");
    if (off >= atomic_load_relaxed(&e->xlimit)) /* any thread may ask */
      bad_pointer(call, p, "invalid pointer (never allocated)");
    return e;
  }
  case MM_EXTENT_FREE:
  case MM_EXTENT_CACHED:
    if (e->kind == MM_EXTENT_FREE && a == e->node.start)
      bad_pointer(call, p, "double free of");
    bad_pointer(call, p, "invalid pointer (freed memory: double free?)");
  default:
    bad_pointer(call, p, "invalid pointer (not allocated by mmalloc)");
  }
}

static MM_COLD __attribute__((noreturn)) void double_free(const char *call, const void *p) {
  bad_pointer(call, p, "double free of");
}

/* ---- the quarantine (valgrind) --------------------------------------------------------- */

/* Owner, holding its lock: the oldest quarantined blocks are freed for real
 * until at most `keep` bytes stay. */
static void quarantine_drain(thread_heap_t *th, size_t keep) {
  while (th->quarantine_bytes > keep) {
    block_t *b = th->quarantine_first;
    extent_t *page = page_of_block(b);
    th->quarantine_first = block_next(b);
    if (!th->quarantine_first) th->quarantine_last = NULL;
    th->quarantine_bytes -= page->block_size;
    free_block(th, page, b);
  }
}

static void quarantine_push(thread_heap_t *th, extent_t *page, block_t *b) {
  block_set_next(b, NULL);
  if (th->quarantine_last) block_set_next(th->quarantine_last, b);
  else th->quarantine_first = b;
  th->quarantine_last = b;
  th->quarantine_bytes += page->block_size;
  quarantine_drain(th, MM_VG_QUARANTINE_BYTES);
}

/* ---- free ------------------------------------------------------------------------------ */

/* After a remote free: flush the batch if full; every 64 slow calls, the
 * heartbeat, which a thread that only frees remotely needs too (it hands
 * over partial batches, purges due heaps). */
static MM_NOINLINE void free_remote_after(thread_heap_t *th, remote_batch_t *rb) {
  if (rb->count >= MM_REMOTE_BATCH) remote_flush(rb);
  if (th->slow_calls % 64 == 0) {
    owner_lock(th);
    thread_heap_beat(th);
    owner_unlock(th);
  }
}

/* Every other free: NULL, large blocks, bad pointers, the checked modes,
 * abandoned pages, a thread without a heap.  Validates p completely. */
MM_NOINLINE void thread_heap_free_slow(void *p, const char *call) {
  if (!p) return;
  extent_t *e = thread_heap_lookup(p, call);
  if (e->kind == MM_EXTENT_LARGE) {
#if MM_VALGRIND
    VALGRIND_FREELIKE_BLOCK(p, 0);
#endif
    if (slot_of_extent(e)->huge) local_heap_free_huge(e);
    else local_heap_free_large(e);
    return;
  }
  block_t *b = p;
  if (block_is_free(b)) double_free(call, p);
  if (unlikely(mm_slow_only)) block_on_free(e, b);
  else b->canary = block_canary_of(b);
  thread_heap_t *th = thread_heap_current();
  if (unlikely(!th)) {
    /* No heap for this thread (out of memory): hand the block straight to
     * its owner's inbox, or free it under the home heap's lock. */
    thread_heap_t *owner = atomic_load_relaxed(&e->xowner);
    if (owner) {
      remote_batch_t rb = {.dest = owner, .head = {b}, .tail = {b}, .count = 1};
      remote_flush(&rb);
      return;
    }
    os_fatal("mmalloc: %s(): out of memory freeing %p\n", call, p);
  }
  owner_lock(th);
  if (unlikely(vg_rz)) quarantine_push(th, e, b);
  else free_block(th, e, b);
  if (++th->slow_calls % 64 == 0) thread_heap_beat(th);
  thread_heap_check(th);
  owner_unlock(th);
}

/* The remote free, kept small (no call on its common path, so few registers
 * to save):
 * p is in `page` (the caller looked it up) and the page is not the calling
 * thread's.  The same checks as the owner's fast path (block boundary of the
 * carved part, not already free), then into the batch for the page's owner.
 * Anything unusual (no owner, the checked modes, a bad pointer) goes to
 * thread_heap_free_slow. */
void thread_heap_free_remote(void *p, extent_t *page, const char *call) {
  thread_heap_t *th = mm_thread_heap;
  thread_heap_t *owner = atomic_load_relaxed(&page->xowner);
  uintptr_t a = (uintptr_t)p;
  uint64_t off = a - page->page_start;
  block_t *b = p;
  uintptr_t canary = a ^ mm_canary_key;
  if (likely(owner && owner != th && !mm_slow_only && th != &mm_heap_empty &&
             off < atomic_load_relaxed(&page->xlimit) && off * page->magic < page->magic &&
             b->canary != canary)) {
    b->canary = canary;
    remote_batch_t *rb = remote_bucket(th, owner);
    if (unlikely(rb->dest != owner)) {
      remote_push(th, owner, b); /* the bucket holds another heap's batch */
      return;
    }
    if (likely(!batch_add(rb, b) && ++th->slow_calls % 64 != 0)) return;
    free_remote_after(th, rb);
    return;
  }
  thread_heap_free_slow(p, call);
}

/* ---- usable size, realloc ------------------------------------------------------------- */

size_t thread_heap_usable_size(const void *p, const char *call) {
  if (!p) return 0;
  extent_t *e = thread_heap_lookup(p, call);
  if (e->kind == MM_EXTENT_PAGE) {
    if (block_is_free(p)) double_free(call, p);
    return e->block_size - vg_rz;
  }
  return extent_usable(e);
}

void *thread_heap_realloc(void *p, size_t size) {
  if (!p) return thread_heap_malloc_fast(size);
  extent_t *e = thread_heap_lookup(p, "realloc");
  size_t old;
  if (e->kind == MM_EXTENT_PAGE) {
    if (block_is_free(p)) double_free("realloc", p);
    old = e->block_size - vg_rz;
  } else {
    old = extent_usable(e);
  }
  if (size == 0) { /* glibc: realloc(p, 0) frees p and returns NULL */
    thread_heap_free_fast(p, "realloc");
    return NULL;
  }
  if (size > PTRDIFF_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  if (unlikely(mm_slow_only)) {
    /* Always move: memcheck sees one block die and another start.  The copy
     * may read bytes past the size the user asked for (we do not keep it);
     * memcheck is told not to report that. */
    void *q = thread_heap_malloc_fast(size);
    if (!q) return NULL;
#if MM_VALGRIND
    VALGRIND_DISABLE_ERROR_REPORTING;
#endif
    memcpy(q, p, old < size ? old : size);
#if MM_VALGRIND
    VALGRIND_ENABLE_ERROR_REPORTING;
#endif
    thread_heap_free_fast(p, "realloc");
    return q;
  }
  if (e->kind == MM_EXTENT_PAGE) {
    if (size <= old && (size > old / 2 || old <= 64)) return p;
  } else if (slot_of_extent(e)->huge) {
    if (size >= MM_HUGE_MIN / 2) {
      extent_t *ne = local_heap_resize_huge(e, size);
      if (ne) return (void *)ne->node.start;
      if (size <= old) return p;
    }
  } else if (size > MM_SMALL_MAX && size < MM_HUGE_MIN) {
    if (size <= old && size > old / 2) {
      local_heap_resize_large(e, size); /* give the tail pages back */
      return p;
    }
    if (size > old && local_heap_resize_large(e, size)) return p;
  }
  void *q;
  if (size > old && size > MM_SMALL_MAX) { /* growing: leave it room to grow */
    thread_heap_t *th = thread_heap_current();
    q = th ? alloc_big(th, size, 0, false, true) : NULL;
  } else {
    q = thread_heap_malloc_fast(size);
  }
  if (!q) return NULL;
  memcpy(q, p, old < size ? old : size);
  thread_heap_free_fast(p, "realloc");
  return q;
}

/* ---- thread exit, collect, fork ------------------------------------------------------- */

/* Give every page of th back to its local heap: empty ones to the page cache,
 * the others parked as abandoned.  th becomes dead (reusable). */
void thread_heap_abandon(thread_heap_t *th) {
  quarantine_drain(th, 0);
  take_inbox(th); /* every lane, not only when lane 0 says so */
  remote_flush_all(th);
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    extent_t *page;
    while ((page = th->queue[c].first) != NULL) {
      page_queue_remove(&th->queue[c], page);
      if (page->used == 0) local_heap_return_page(page);
      else local_heap_abandon_page(page);
    }
  }
  extent_t *page;
  while ((page = th->full.first) != NULL) {
    page_queue_remove(&th->full, page);
    local_heap_abandon_page(page);
  }
  for (unsigned k = 0; k < MM_DIRECT_SLOTS; k++) th->direct[k] = &mm_page_empty;
  local_heap_thread_heap_dead(th);
}

static void thread_heap_exit_cb(void *arg) {
  thread_heap_t *th = arg;
  mm_thread_heap = th; /* other destructors may have run before us */
  owner_lock(th);
  thread_heap_abandon(th);
  owner_unlock(th);
  mm_thread_heap = &mm_heap_empty;
}

/* mm_collect(): this thread's pending frees and empty pages, then every
 * local heap's free memory, back to the OS now. */
void thread_heap_collect(void) {
  thread_heap_t *th = thread_heap_current();
  if (th) {
    owner_lock(th);
    quarantine_drain(th, 0);
    take_inbox(th); /* every lane, not only when lane 0 says so */
    for (uint32_t i = 0; i < mm_nheaps; i++) {
      block_t *b = local_heap_take_dead_inboxes(&mm_heaps[i]);
      while (b) {
        block_t *next = block_next(b);
        free_block(th, page_of_block(b), b);
        b = next;
      }
    }
    remote_flush_all(th);
    for (unsigned c = 0; c < MM_CLASSES; c++) {
      extent_t *page = th->queue[c].first;
      if (page && page->used == 0) {
        page_queue_remove(&th->queue[c], page);
        direct_update(th, c);
        local_heap_return_page(page);
      }
    }
    owner_unlock(th);
  }
  local_heap_collect_all();
}

/* In the child of fork only the forking thread runs: the heaps of all the
 * others are abandoned, so that the child can free and reuse their memory. */
static void fork_child(void) {
  local_heap_fork_child();
  thread_heap_t *self = mm_thread_heap;
  for (uint32_t i = 0; i < mm_nheaps; i++)
    for (thread_heap_t *th = mm_heaps[i].threads; th; th = th->next_in_local) {
      atomic_store_relaxed(&th->xlock, 0); /* its holder does not exist here */
      if (th != self && th->state == MM_THREAD_LIVE) {
        mm_thread_heap = th;
        thread_heap_abandon(th);
      }
    }
  mm_thread_heap = self;
}
