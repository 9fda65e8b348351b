/* thread_heap.c — what a thread heap does with its pages, and the life of
 * its structure: the registry of thread heaps per local heap, getting,
 * adopting, retiring and abandoning pages, direct[], the census and the
 * checker (the stash of medium blocks is stash.c).
 *
 * Layer: thread heap (thread_heap.h has the structure, the call tree, the
 * fast paths and the locking rules; remote.c the traffic between thread
 * heaps; alloc.c, free.c, realloc.c and lifecycle.c the slow paths).
 *
 * The registry.  Thread heap structures live in metadata memory of their
 * local heap (local_heap_meta_alloc) and are reused by the next thread,
 * never freed: another thread may still push a block into a dead heap's
 * inbox.  Each local heap has a registry: every thread heap bound to it
 * (`all`, which only grows) and the dead ones (`dead`), under a mutex of
 * the lowest rank, MM_RANK_REGISTRY: it is taken with no other lock held,
 * or by try-lock (the dead-inbox sweep runs under the sweeper's own lock).
 * Invariants: a heap is on `all` of exactly one registry for ever; it is on
 * `dead` iff its state is MM_THREAD_DEAD; xdead == |dead|; xlive == the
 * LIVE heaps on `all` (the census checks it).  A new thread binds to the
 * local heap whose registry has the fewest live heaps
 * (thread_heap_create).
 *
 * Page hand-overs with the local heap.  "No owner" and "on the abandoned
 * list" change together, under the home local heap's lock: a new page is
 * claimed (initialised and owned) inside local_heap_take_page_block, an
 * abandoned one adopted, and a page abandoned or retired, each with that
 * lock held around the ownership change (page.h) and the list change
 * (page_market.c).
 */
#include <string.h>

#include "thread_heap.h"

__thread thread_heap_t *mm_thread_heap __attribute__((tls_model("initial-exec"))) =
    &mm_heap_empty;

extent_t mm_page_empty;
thread_heap_t mm_heap_empty = {.direct = {[0 ... MM_DIRECT_SLOTS - 1] = &mm_page_empty}};

/* ---- direct[] --------------------------------------------------------------------- */

/* What direct[] names for a queue whose head is `first`: the head, or the
 * empty page (no free block: every malloc misses) while the fast paths are
 * off (mm_slow_only, unless secure mode is built in and they check). */
static extent_t *direct_page(extent_t *first) {
  return first && (!mm_slow_only || mm_fast_checked) ? first : &mm_page_empty;
}

/* direct[] entries of class c name the head of queue[c] again. */
void thread_heap_direct_update(thread_heap_t *th, unsigned c) {
  const size_class_t *sc = &mm_size_classes[c];
  if (sc->size > MM_DIRECT_MAX) return;
  extent_t *page = direct_page(th->queue[c].first);
  unsigned lo = c ? mm_size_classes[c - 1].size / 16 + 1 : 0;
  for (unsigned k = lo; k <= sc->size / 16; k++) th->direct[k] = page;
}

/* ---- the registry ------------------------------------------------------------------ */

typedef struct registry_s {
  mm_mutex_t lock;
  thread_heap_t *all;  /* every heap bound to this local heap */
  thread_heap_t *dead; /* the dead ones, ready for reuse */
  _Atomic(uint32_t) xdead;
  _Atomic(uint32_t) xlive; /* its LIVE heaps: changed under the lock, read without it */
} registry_t;

static registry_t registries[MM_MAX_HEAPS];

/* Live thread heaps in the process (relaxed reads, no lock: a count that
 * is one off for a moment is harmless where it is used): the pages a
 * thread may keep empty are MM_THREAD_EMPTY_TOTAL shared among them, the
 * stashes' bytes MM_THREAD_STASH_TOTAL (stash.c). */
uint32_t thread_heap_live_count(void) {
  uint32_t live = 0;
  for (uint32_t i = 0; i < mm_nheaps; i++) live += atomic_load_relaxed(&registries[i].xlive);
  return live;
}

/* The local heap a new thread binds to: the one with the fewest live
 * thread heaps, the lowest index among equals.  Binding by the CPU a
 * thread first allocates on put two busy threads on one local heap
 * whenever both started on the same CPU (new threads often do), while
 * another heap served only an idle main thread: their big blocks then
 * interleaved in one heap's slots and stopped growing in place, and they
 * shared its lock (gcstrings at 2 threads on the 2-core VM: 61 or 90 MiB
 * peak RSS from run to run, by where its two workers landed).  The counts
 * are read without the registries' locks; thread_heap_create checks the
 * pick again under the chosen registry's lock. */
static uint32_t pick_local(void) {
  uint32_t best = 0, least = UINT32_MAX;
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    uint32_t live = atomic_load_relaxed(&registries[i].xlive);
    if (live < least) {
      least = live;
      best = i;
    }
  }
  return best;
}

void thread_heap_registry_init(uint32_t n) {
  for (uint32_t i = 0; i < n; i++) mutex_init(&registries[i].lock, "registry", MM_RANK_REGISTRY, i);
}

/* A thread heap for a new thread, bound to the local heap with the fewest
 * live threads (pick_local): a dead one of that heap reused (its inbox
 * may hold blocks: they are still to be freed), or a fresh one.  The pick
 * is made again holding the registry's lock, and counted before the lock
 * is released: two threads that start together (each new thread yields
 * once first, so they often do) and read the same counts would otherwise
 * both bind to the same heap.  LIVE on return; NULL with errno ENOMEM. */
thread_heap_t *thread_heap_create(void) {
  registry_t *r;
  local_heap_t *local;
  for (;;) {
    uint32_t i = pick_local();
    r = &registries[i];
    local = &mm_heaps[i];
    mutex_lock(&r->lock);
    if (pick_local() == i) break;
    mutex_unlock(&r->lock); /* another thread bound meanwhile: pick again */
  }
  thread_heap_t *th = r->dead;
  if (th) {
    r->dead = th->next_dead;
    atomic_store_relaxed(&r->xdead, atomic_load_relaxed(&r->xdead) - 1);
    th->next_dead = NULL;
  } else {
    th = local_heap_meta_alloc(local, sizeof(thread_heap_t));
    if (!th) {
      mutex_unlock(&r->lock);
      return NULL;
    }
    spin_init(&th->lock, "thread heap", MM_RANK_THREAD_HEAP, local->index);
    th->next_in_local = r->all;
    r->all = th;
  }
  th->local = local; /* a LIVE heap always names its local heap (fork) */
  th->state = MM_THREAD_LIVE;
  atomic_store_relaxed(&r->xlive, atomic_load_relaxed(&r->xlive) + 1);
  mutex_unlock(&r->lock);
  return th;
}

/* Reset a thread heap for a new thread, holding its lock (a taker may
 * still be at its previous thread's inbox, which is kept); its local heap
 * is the one thread_heap_create bound it to. */
void thread_heap_init_fresh(thread_heap_t *th) {
  mm_assert_internal(thread_heap_locked(th));
  for (unsigned k = 0; k < MM_DIRECT_SLOTS; k++) th->direct[k] = &mm_page_empty;
  memset(th->queue, 0, sizeof(th->queue));
  memset(&th->full, 0, sizeof(th->full));
  memset(&th->fostered, 0, sizeof(th->fostered));
  memset(th->orphan, 0, sizeof(th->orphan));
  memset(&th->empty, 0, sizeof(th->empty));
  th->empty_bytes = 0;
  th->empty_limit = MM_THREAD_EMPTY_BYTES;
  th->empty_overflowed = false;
  thread_heap_stash_init(th);
  memset(th->out, 0, sizeof(th->out));
  th->tid = mm_thread_id();
  th->slow_calls = 0;
  th->classes_paged = 0;
  th->last_beat_ms = os_now_ms();
  atomic_store_relaxed(&th->xactive_ms, th->last_beat_ms);
}

/* th's thread is gone and th holds no page: ready for reuse.  No lock of
 * th held (the registry ranks lower). */
void thread_heap_mark_dead(thread_heap_t *th) {
  registry_t *r = &registries[th->local->index];
  mutex_lock(&r->lock);
  mm_assert_internal(th->state == MM_THREAD_LIVE);
  th->state = MM_THREAD_DEAD;
  atomic_store_relaxed(&r->xlive, atomic_load_relaxed(&r->xlive) - 1);
  th->next_dead = r->dead;
  r->dead = th;
  atomic_store_relaxed(&r->xdead, atomic_load_relaxed(&r->xdead) + 1);
  mutex_unlock(&r->lock);
}

/* Statistics: live and dead heaps of a local heap (its registry's counts,
 * which the census checks against its heaps). */
void thread_heap_counts(uint32_t heap, uint64_t *live, uint64_t *dead) {
  registry_t *r = &registries[heap];
  mutex_lock(&r->lock);
  *live = atomic_load_relaxed(&r->xlive);
  *dead = atomic_load_relaxed(&r->xdead);
  mutex_unlock(&r->lock);
}

/* Visit the dead heaps of a local heap under its registry's lock: waiting
 * for it, or (try) not at all when it is busy.  False when skipped. */
bool thread_heap_foreach_dead(uint32_t heap, bool try, void (*visit)(thread_heap_t *, void *),
                              void *arg) {
  registry_t *r = &registries[heap];
  if (atomic_load_relaxed(&r->xdead) == 0) return true; /* the next sweep sees the rest */
  if (try) {
    if (!mutex_trylock(&r->lock)) return false;
  } else {
    mutex_lock(&r->lock);
  }
  for (thread_heap_t *th = r->dead; th; th = th->next_dead) visit(th, arg);
  mutex_unlock(&r->lock);
  return true;
}

/* Visit the live heaps of a local heap under its registry's lock. */
void thread_heap_foreach_live(uint32_t heap, void (*visit)(thread_heap_t *, void *), void *arg) {
  registry_t *r = &registries[heap];
  mutex_lock(&r->lock);
  for (thread_heap_t *th = r->all; th; th = th->next_in_local)
    if (th->state == MM_THREAD_LIVE) visit(th, arg);
  mutex_unlock(&r->lock);
}

/* Fork (lifecycle.c): every registry, lowest rank first, index order. */
void thread_heap_registry_lock_all(void) {
  for (uint32_t i = 0; i < mm_nheaps; i++) mutex_lock_ordered(&registries[i].lock);
}

void thread_heap_registry_unlock_all(void) {
  for (uint32_t i = mm_nheaps; i-- > 0;) mutex_unlock(&registries[i].lock);
}

void thread_heap_registry_reinit_all(void) {
  for (uint32_t i = 0; i < mm_nheaps; i++) mutex_reinit(&registries[i].lock);
}

/* Every thread heap, live or dead (fork, with the registries held). */
void thread_heap_foreach(void (*visit)(thread_heap_t *, void *), void *arg) {
  for (uint32_t i = 0; i < mm_nheaps; i++)
    for (thread_heap_t *th = registries[i].all; th; th = th->next_in_local) visit(th, arg);
}

/* ---- pages -------------------------------------------------------------------------- */

typedef struct claim_s {
  thread_heap_t *th;
  unsigned cls;
} claim_t;

/* Under the lock of the page block's home heap (local_heap_take_page_block). */
static void claim_page(extent_t *page, void *arg) {
  claim_t *c = arg;
  page_init(page, c->cls);
  page_set_owner(page, c->th, c->th->tid);
}

/* Bytes of a page's block (64..512 KiB). */
static uint32_t block_bytes(const extent_t *page) {
  return (uint32_t)(page->node.ndatablocks << MM_DATABLOCK_SHIFT);
}

static extent_t *adopt_from(local_heap_t *h, unsigned cls, thread_heap_t *th) {
  if (!local_heap_has_abandoned(h, cls)) return NULL; /* rechecked under the lock */
  local_heap_lock(h);
  extent_t *page = local_heap_abandoned_pop_locked(h, cls);
  if (page) {
    page_set_owner(page, th, th->tid);
    h->pages_adopted++;
  }
  local_heap_unlock(h);
  return page;
}

/* First pages (config.h, MM_PAGE_FIRST_KEEP): how many the current window
 * has taken, how many first pages were carved past their head since it
 * began, and whether first pages keep all of their block for now.  Relaxed
 * and approximate: a count that lands just after a window is judged goes
 * to the next one. */
static struct {
  _Atomic(uint32_t) xtaken, xpast;
  _Atomic(bool) xwhole;
} first_pages;

/* A first page is taken: true if it keeps only its head.  The page that
 * fills a window judges it for the next one. */
static bool first_page_trial(void) {
  bool whole = atomic_load_relaxed(&first_pages.xwhole);
  if (atomic_fetch_add_relaxed(&first_pages.xtaken, 1) + 1 >= MM_PAGE_FIRST_WINDOW) {
    uint32_t past = atomic_exchange_acquire(&first_pages.xpast, 0);
    atomic_store_relaxed(&first_pages.xtaken, 0);
    whole = past * 2 > MM_PAGE_FIRST_WINDOW;
    atomic_store_relaxed(&first_pages.xwhole, whole);
  }
  return !whole;
}

/* A page of class c for th, holding th's lock, on none of th's lists: one
 * of th's fostered pages with a free block, or an abandoned one (of th's
 * local heap, else of any: a page of a thread that exited, or of an idle
 * thread whose full pages were taken over, is better reused anywhere than
 * left half empty while fresh pages are carved) with a free block, else a
 * fresh one.  Full abandoned pages are not handed
 * out: they wait on their list for a free, whose thread adopts them.
 * NULL when there is no memory. */
extent_t *thread_heap_new_page(thread_heap_t *th, unsigned c) {
  mm_assert_internal(thread_heap_locked(th));
  /* first a fostered page of class c: th's own already */
  for (extent_t *page = th->fostered.first; page; page = page->next) {
    if (page->size_class == c && page_refill(page)) {
      extent_list_remove(&th->fostered, page);
      page->fostered = 0;
      if (unlikely(page->trim_at)) thread_heap_first_page_carved(page);
      return page;
    }
  }
  local_heap_t *h = th->local;
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    if (i && !local_heap_any_abandoned()) break;
    local_heap_t *from = &mm_heaps[(h->index + i) % mm_nheaps];
    extent_t *page = adopt_from(from, c, th);
    if (page) {
      /* adoptable: its lists did not change while it had no owner */
      bool refilled = page_refill(page);
      mm_assert(refilled);
      if (unlikely(page->trim_at)) thread_heap_first_page_carved(page);
      return page;
    }
  }
  /* a page this thread emptied and kept: no lock to take.  One of class c
   * is taken as it is, its blocks handed out again in the order they were
   * freed, last first, as from the class's current page: nothing to carve
   * again, and in secure mode its blocks, filled when they were freed, are
   * checked when handed out (a page formatted again would carve them
   * afresh, unchecked).  Else a page block of the same size is formatted
   * for class c. */
  extent_t *kept = NULL;
  for (extent_t *page = th->empty.first; page; page = page->next) {
    if (page->size_class == c) {
      kept = page;
      break;
    }
    if (!kept && page->node.ndatablocks == mm_size_classes[c].ndatablocks) kept = page;
  }
  if (kept) {
    extent_t *page = kept;
    extent_list_remove(&th->empty, page);
    th->empty_bytes -= block_bytes(page);
    MM_CHECK(3, "kept page", page_is_valid(page, MM_WHY));
    if (page->size_class != c) page_init(page, c);
    return page;
  }
  /* A page went home for want of room and th needs one again: its
   * batches are bigger than its bound, which doubles (config.h). */
  if (th->empty_overflowed) {
    th->empty_overflowed = false;
    if (th->empty_limit < MM_THREAD_EMPTY_MAX) th->empty_limit *= 2;
  }
  /* th's first page of class c keeps only its head resident, while the
   * heads of first pages mostly suffice (config.h) */
  size_t head = 0;
  if (!(th->classes_paged >> c & 1)) {
    size_t block = ((size_t)mm_size_classes[c].size + MM_DATABLOCK_SIZE - 1) & ~(size_t)(MM_DATABLOCK_SIZE - 1);
    head = block > MM_PAGE_FIRST_KEEP ? block : MM_PAGE_FIRST_KEEP;
    if (head >= (size_t)mm_size_classes[c].ndatablocks << MM_DATABLOCK_SHIFT) head = 0;
  }
  size_t keep = head && first_page_trial() ? head : 0;
  claim_t claim = {th, c};
  extent_t *page = local_heap_take_page_block(h, mm_size_classes[c].ndatablocks, 1, keep, claim_page,
                                              &claim);
  if (page) {
    th->classes_paged |= (uint64_t)1 << c;
    page->trim_at = (uint32_t)head;
  }
  return page;
}

/* page was just refilled by its owner (its first owner or the thread that
 * adopted it): if it is a first page (trim_at set) and its carved blocks
 * now reach past the head, count it for the window. */
void thread_heap_first_page_carved(extent_t *page) {
  if ((uint64_t)page->reserved * page->block_size <= page->trim_at) return;
  page->trim_at = 0;
  atomic_fetch_add_relaxed(&first_pages.xpast, 1);
}

/* A page without a block in use (off every list of its owner) goes home
 * to the page cache. */
void thread_heap_retire_page(extent_t *page) {
  mm_assert_internal(page->used == 0 && !page->next && !page->prev);
  local_heap_t *h = local_heap_of_extent(page);
  local_heap_lock(h);
  page_clear_owner(page);
  page->free = page->local_free = NULL;
  local_heap_cache_page_locked(h, page);
  local_heap_unlock(h);
}

/* A page with blocks in use (off every list of its owner) waits in its home
 * heap for a thread that needs a page of its class, or frees into it. */
void thread_heap_abandon_page(extent_t *page) {
  mm_assert_internal(!page->next && !page->prev);
  local_heap_t *h = local_heap_of_extent(page);
  local_heap_lock(h);
  page_clear_owner(page);
  local_heap_abandoned_push_locked(h, page);
  local_heap_unlock(h);
}

/* th (holding its lock) found page without an owner while freeing b (its
 * canary set) into it.  th adopts it when th allocates blocks of its class
 * (a page of the class in th's queue: into that queue), or else when `run`
 * (th's last frees of the class went into it) or when most of its carved
 * blocks are in use (onto th's fostered list: its frees take the fast
 * path, and it goes back at th's next heartbeat): 2, b not freed yet.
 * Else b goes into the page where it lies, under its home heap's lock, and
 * the page stays abandoned for a thread that allocates (its free blocks
 * are many: held by a thread that only frees into it, they would be kept
 * from every other thread for as long as one block of it lives); an empty
 * page goes to the page cache: 1.  0: another thread adopted it first
 * (look again); -1: it is not a page any more (it was retired: the block
 * being freed was freed already). */
int thread_heap_free_abandoned(thread_heap_t *th, extent_t *page, block_t *b, bool run) {
  mm_assert_internal(thread_heap_locked(th));
  local_heap_t *h = local_heap_of_extent(page);
  unsigned c = page->size_class;
  bool allocates = th->queue[c].first != NULL;
  int done = 0;
  local_heap_lock(h);
  if (page->kind != MM_EXTENT_PAGE) {
    done = -1;
  } else if (page_owner(page) != NULL) {
    done = 0;
  } else if (allocates || run || page->used * 2 >= page->reserved) {
    local_heap_abandoned_remove_locked(h, page);
    page_set_owner(page, th, th->tid);
    h->pages_adopted++;
    done = 2;
  } else if (page->used == 1) { /* its last block: home to the page cache */
    local_heap_abandoned_remove_locked(h, page);
    page->used = 0;
    page->free = page->local_free = NULL;
    local_heap_cache_page_locked(h, page);
    done = 1;
  } else if (!abandoned_page_adoptable(page)) { /* full: now adoptable, to the front */
    local_heap_abandoned_remove_locked(h, page);
    page_push_local(page, b);
    page->used--;
    local_heap_abandoned_push_locked(h, page);
    h->pages_abandoned--; /* the same page, abandoned once */
    done = 1;
  } else { /* its place on the list stays right */
    page_push_local(page, b);
    page->used--;
    done = 1;
  }
  local_heap_unlock(h);
  if (done == 2 && allocates) {
    extent_list_push_back(&th->queue[c], page);
    if (th->queue[c].first == page) thread_heap_direct_update(th, c);
  } else if (done == 2) {
    page->fostered = 1;
    extent_list_push_back(&th->fostered, page);
  }
  return done;
}

/* th's fostered pages back to their heaps' abandoned lists, where a thread
 * that allocates blocks of their class adopts them (th's lock held). */
void thread_heap_fostered_release(thread_heap_t *th) {
  mm_assert_internal(thread_heap_locked(th));
  extent_t *page;
  while ((page = th->fostered.first) != NULL) {
    extent_list_remove(&th->fostered, page);
    page->fostered = 0;
    mm_assert_internal(page->used > 0); /* an empty one left the list (thread_heap_page_empty) */
    thread_heap_abandon_page(page);
  }
}

/* How many bytes of empty pages th may keep now: its own bound, but at
 * most its share among the live threads of MM_THREAD_EMPTY_TOTAL (up to
 * MM_THREAD_EMPTY_BYTES) or of MM_THREAD_EMPTY_GROWN_TOTAL, the larger. */
static size_t empty_cap(const thread_heap_t *th) {
  uint32_t live = thread_heap_live_count();
  if (!live) live = 1;
  size_t base = MM_THREAD_EMPTY_TOTAL / live, grown = MM_THREAD_EMPTY_GROWN_TOTAL / live;
  if (base > MM_THREAD_EMPTY_BYTES) base = MM_THREAD_EMPTY_BYTES;
  size_t share = grown > base ? grown : base;
  return share < th->empty_limit ? share : th->empty_limit;
}

/* used reached 0 (th's lock held): the page stays where it is if it is
 * its class's current one (a thread that frees its last block usually
 * allocates again); else it goes on th's empty list, the oldest kept pages
 * going home to make room under empty_cap (or it goes home itself when it
 * alone is over the cap). */
void thread_heap_page_empty(thread_heap_t *th, extent_t *page) {
  mm_assert_internal(thread_heap_locked(th));
  extent_list_t *q = page->fostered ? &th->fostered : &th->queue[page->size_class];
  if (q->first == page && !page->fostered) return;
  extent_list_remove(q, page);
  page->fostered = 0;
  uint32_t bytes = block_bytes(page);
  size_t cap = empty_cap(th);
  while (th->empty.last && th->empty_bytes + bytes > cap) {
    extent_t *old = th->empty.last; /* the oldest goes home */
    extent_list_remove(&th->empty, old);
    th->empty_bytes -= block_bytes(old);
    thread_heap_retire_page(old);
    th->empty_overflowed = true;
  }
  if (bytes > cap) {
    thread_heap_retire_page(page);
    th->empty_overflowed = true;
    return;
  }
  MM_CHECK(3, "kept page", page_is_valid(page, MM_WHY));
  page->idle = 0;
  extent_list_push_front(&th->empty, page);
  th->empty_bytes += bytes;
}

void thread_heap_empty_release(thread_heap_t *th, bool all) {
  mm_assert_internal(thread_heap_locked(th));
  extent_t *next;
  for (extent_t *page = th->empty.first; page; page = next) {
    next = page->next;
    if (!all && ++page->idle < 2) continue;
    extent_list_remove(&th->empty, page);
    th->empty_bytes -= block_bytes(page);
    thread_heap_retire_page(page);
    th->empty_limit = MM_THREAD_EMPTY_BYTES; /* its batches stopped */
    th->empty_overflowed = false;
  }
}

/* The same from the free fast path, which holds no lock: the owner reads
 * its own queue head without it (only the owner changes its queues), and
 * takes it to change the list. */
MM_SLOW_PATH void thread_heap_page_empty_slow(thread_heap_t *th, extent_t *page) {
  if (th->queue[page->size_class].first == page) return;
  thread_heap_lock(th);
  thread_heap_page_empty(th, page);
  thread_heap_unlock(th);
}

void thread_heap_free_own_big(extent_t *page, block_t *b) {
  block_on_free(page, b);
  page_push_local(page, b);
  if (--page->used == 0) thread_heap_page_empty_slow(mm_thread_heap, page);
}

/* ---- census -------------------------------------------------------------------------
 * Every PAGE of a local heap's slots, by owner: owned by a live thread heap
 * (on one of its lists: that heap's checker sees them), abandoned (on the
 * local heap's abandoned lists: its checker sees them), or owned by a dead
 * heap, which no list holds any more: a lost page.  Statistics report it,
 * and MM_DEBUG 3 checks it is zero after thread exit and in a forked child.
 * Takes every registry (so that no heap changes state) and the local heap's
 * lock, in rank order. */
static void census_visit(extent_t *page, void *arg) {
  thread_heap_census_t *c = arg;
  thread_heap_t *owner = page_owner(page);
  c->pages++;
  if (!owner) c->abandoned++;
  else if (owner->state == MM_THREAD_LIVE) c->owned++;
  else c->lost++;
}

void thread_heap_census(uint32_t heap, thread_heap_census_t *c) {
  local_heap_t *h = &mm_heaps[heap];
  *c = (thread_heap_census_t){0};
  thread_heap_registry_lock_all();
  local_heap_lock_uncounted(h);
  local_heap_foreach_page_locked(h, census_visit, c);
  c->pages_out = h->pages_out;
  c->pages_back = h->pages_back;
  c->lent = h->lent_blocks;
  local_heap_unlock(h);
  thread_heap_registry_unlock_all();
}

/* No page lost, and the local heaps' page accounting adds up: a heap's
 * pages_out - pages_back is the number of its PAGE extents and of the
 * page blocks it has lent out whole (POOL extents). */
bool thread_heap_census_is_valid(char *why, size_t why_size) {
  /* each registry's xlive and xdead count its LIVE and DEAD heaps
   * (changed under its lock) */
  bool ok = true;
  thread_heap_registry_lock_all();
  for (uint32_t i = 0; i < mm_nheaps && ok; i++) {
    uint64_t live = 0, dead = 0;
    for (thread_heap_t *th = registries[i].all; th; th = th->next_in_local) {
      live += th->state == MM_THREAD_LIVE;
      dead += th->state == MM_THREAD_DEAD;
    }
    uint32_t said = atomic_load_relaxed(&registries[i].xlive);
    uint32_t said_dead = atomic_load_relaxed(&registries[i].xdead);
    if (live != said) {
      os_format(why, why_size, "local heap %u: %lu live thread heaps, but its registry's xlive says %u",
                i, (unsigned long)live, said);
      ok = false;
    } else if (dead != said_dead) {
      os_format(why, why_size, "local heap %u: %lu dead thread heaps, but its registry's xdead says %u",
                i, (unsigned long)dead, said_dead);
      ok = false;
    }
  }
  thread_heap_registry_unlock_all();
  if (!ok) return false;
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    thread_heap_census_t c;
    thread_heap_census(i, &c);
    if (c.lost || c.pages_out - c.pages_back != c.pages + c.lent) {
      os_format(why, why_size,
                "heap %u: %lu pages, %lu owned by live threads, %lu abandoned, %lu owned by "
                "dead threads (lost), %lu page blocks lent; pages_out %lu - pages_back %lu",
                i, (unsigned long)c.pages, (unsigned long)c.owned, (unsigned long)c.abandoned,
                (unsigned long)c.lost, (unsigned long)c.lent, (unsigned long)c.pages_out,
                (unsigned long)c.pages_back);
      return false;
    }
  }
  return true;
}

/* ---- checker ------------------------------------------------------------------------ */

static bool heap_bad(char *why, size_t why_size, const thread_heap_t *th, const char *what,
                     unsigned c, const extent_t *p) {
  os_format(why, why_size, "thread heap %p: %s (class %u, page %p)", (const void *)th, what, c,
            p ? (void *)p->page_start : NULL);
  return false;
}

/* q: th's list of class c pages (c == MM_CLASSES: of any class), tagged
 * full or not; deep: each page's own invariants too (O(blocks)). */
static bool list_is_valid(thread_heap_t *th, const extent_list_t *q, unsigned c, bool full,
                          bool deep, uint32_t pass, char *why, size_t why_size) {
  const extent_t *prev = NULL;
  for (extent_t *p = q->first; p; prev = p, p = p->next) {
    if (p->prev != prev) return heap_bad(why, why_size, th, "list links broken", c, p);
    if (p->mark == pass) return heap_bad(why, why_size, th, "page on two lists", c, p);
    p->mark = pass;
    if (p->kind != MM_EXTENT_PAGE || (!full && c < MM_CLASSES && p->size_class != c) ||
        page_owner(p) != th)
      return heap_bad(why, why_size, th, "list holds a page that is not its own", c, p);
    if (page_is_taken(p)) return heap_bad(why, why_size, th, "page left taken over", c, p);
    if (p->fostered != (q == &th->fostered))
      return heap_bad(why, why_size, th, p->fostered ? "fostered page on another list"
                                                     : "page on the fostered list not marked", c, p);
    if (!page_owner_is(p, th->tid, full))
      return heap_bad(why, why_size, th, full ? "page on the full list not tagged full"
                                               : "page in a queue tagged full or foreign", c, p);
    if (deep && !page_is_valid(p, why, why_size)) return false;
  }
  if (q->last != prev) return heap_bad(why, why_size, th, "list has a wrong tail", c, NULL);
  return true;
}

/* The invariants of thread_heap_t (thread_heap.h) and of every page it
 * owns.  Its lock held (its owner's, or fork's).  O(pages + blocks). */
bool thread_heap_is_valid(thread_heap_t *th, char *why, size_t why_size) {
  if (th == &mm_heap_empty) return true;
  mm_assert_internal(thread_heap_locked(th));
  uint32_t pass = region_check_pass();
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    const extent_list_t *q = &th->queue[c];
    extent_t *want = direct_page(q->first);
    for (unsigned k = 0; k < MM_DIRECT_SLOTS; k++)
      if (mm_direct_class[k] == c && th->direct[k] != want)
        return heap_bad(why, why_size, th, "direct[] does not name the head of its queue", c,
                        th->direct[k]);
    if (!list_is_valid(th, q, c, false, true, pass, why, why_size)) return false;
  }
  if (!list_is_valid(th, &th->full, 0, true, true, pass, why, why_size)) return false;
  if (!list_is_valid(th, &th->fostered, MM_CLASSES, false, true, pass, why, why_size)) return false;
  /* kept pages: no block of theirs can change while they are kept (none is
   * out); their blocks are checked as they go on the list and come off it */
  if (!list_is_valid(th, &th->empty, MM_CLASSES, false, false, pass, why, why_size)) return false;
  size_t bytes = 0;
  for (const extent_t *p = th->empty.first; p; p = p->next) {
    if (p->used != 0)
      return heap_bad(why, why_size, th, "page on the empty list has blocks in use", p->size_class, p);
    bytes += block_bytes(p);
  }
  /* (over empty_limit only after the limit fell back: the next page kept
   * trims the list to it) */
  if (bytes != th->empty_bytes || bytes > MM_THREAD_EMPTY_MAX)
    return heap_bad(why, why_size, th, "empty_bytes does not sum the empty list, or is over its bound", 0, NULL);
  if (th->empty_limit < MM_THREAD_EMPTY_BYTES || th->empty_limit > MM_THREAD_EMPTY_MAX)
    return heap_bad(why, why_size, th, "empty_limit out of its range", 0, NULL);
  if (th->stash_count > MM_THREAD_STASH)
    return heap_bad(why, why_size, th, "stash holds more than MM_THREAD_STASH blocks", 0, NULL);
  bytes = 0;
  for (uint32_t i = 0; i < th->stash_count; i++) {
    const extent_t *e = th->stash[i];
    if (e->kind != MM_EXTENT_LARGE || slot_of_extent(e)->tree != MM_TREE_MEDIUM ||
        e->node.ndatablocks > MM_MEDIUM_DATABLOCKS || local_heap_of_extent(e) != th->local ||
        !thread_heap_stashed(e))
      return heap_bad(why, why_size, th,
                      "stash holds what is not a marked medium block of its local heap", 0, e);
    for (uint32_t j = 0; j < i; j++)
      if (th->stash[j] == e) return heap_bad(why, why_size, th, "a block stashed twice", 0, e);
    bytes += e->node.ndatablocks << MM_DATABLOCK_SHIFT;
  }
  if (bytes != atomic_load_relaxed(&th->xstash_bytes) || bytes > MM_THREAD_STASH_BYTES ||
      th->stash_cap > MM_THREAD_STASH_BYTES)
    return heap_bad(why, why_size, th, "xstash_bytes does not sum the stash, or is over its bound", 0, NULL);
  return true;
}
