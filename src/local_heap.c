/* local_heap.c — the C local heaps: free extents in an interval tree, a cache
 * of free page blocks, pages of exited threads, large blocks, and purging.
 *
 * Layer: local heap (above region and interval_tree; below the thread heaps).
 *
 * There is no global heap.  A local heap owns slots of address space; every
 * extent of its slots is FREE (in its tree), a PAGE (lent to a thread heap,
 * or abandoned here when that thread exited), LARGE (a user block), or
 * CACHED (a free page block kept for quick reuse).  Memory freed into a
 * local heap stays in that heap's slots: a block always goes home, to the
 * heap whose slot holds it, whichever thread frees it.
 *
 * Locking: each local heap has one mutex, taken when a thread heap needs or
 * returns a page, for large blocks, and to purge.  No path holds two local
 * heap locks at once, except fork, which takes them all in index order.
 *
 * Placement: pages and new large blocks come from the lowest-addressed
 * extent that fits (first fit): they pack at the bottom of the slots and
 * reuse recently freed, still resident memory.  A large block that realloc
 * has to move (it grows) is placed in the middle of the largest free extent
 * when that is at least four times its size: the Mmalloc paper's "memory
 * increment", room behind the block for the next growth to happen in place.
 * (Placing every large block that way, as the paper does, spreads them over
 * the slot and touches fresh pages instead of reusing freed ones: RSS grew
 * by 70% on the thread-churn test.)
 *
 * Decay: an extent freed into the heap is dirty; once it has been idle for
 * the purge delay its pages go back to the OS (MADV_DONTNEED) and it reads
 * as zero.  Any thread's slow path, or the heap's own lock holder, purges
 * whatever heap is due, so memory comes back even if the threads that
 * freed it went idle.
 *
 * Invariants: see local_heap_t in types.h; local_heap_is_valid checks them.
 */
#define _GNU_SOURCE
#include <string.h>

#include "internal.h"

local_heap_t mm_heaps[MM_MAX_HEAPS];
uint32_t mm_nheaps;

#define extent_of_node(n) \
  ((extent_t *)((char *)(n) - offsetof(extent_t, node)))

static void heap_lock(local_heap_t *h) { pthread_mutex_lock(&h->lock); }
static void heap_unlock(local_heap_t *h) { pthread_mutex_unlock(&h->lock); }

#if MM_DEBUG >= 3
static void heap_check(local_heap_t *h) {
  char why[200];
  if (!local_heap_is_valid(h, why, sizeof(why)))
    os_fatal("mmalloc: internal error: local heap %u: %s\n", h->index, why);
}
#else
static inline void heap_check(local_heap_t *h) { (void)h; }
#endif

void local_heap_init_all(uint32_t n) {
  if (n < 1) n = 1;
  if (n > MM_MAX_HEAPS) n = MM_MAX_HEAPS;
  for (uint32_t i = 0; i < n; i++) {
    local_heap_t *h = &mm_heaps[i];
    pthread_mutex_init(&h->lock, NULL);
    h->index = i;
    interval_tree_init(&h->tree);
  }
  mm_nheaps = n;
}

local_heap_t *local_heap_of_extent(const extent_t *e) {
  return &mm_heaps[slot_of_extent(e)->heap];
}

/* ---- dirty accounting and purge scheduling --------------------------------- */

static void heap_schedule_purge(local_heap_t *h, uint32_t freed_at) {
  if (atomic_load_relaxed(&h->xpurge_at) == 0) {
    uint32_t due = freed_at + (uint32_t)options.purge_delay_ms;
    atomic_store_relaxed(&h->xpurge_at, ((uint64_t)1 << 32) | due);
  }
}

/* e (freed, not yet in any list) counts as dirty all over. */
static void heap_dirty_add(local_heap_t *h, extent_t *e, uint32_t now) {
  e->flags &= MM_EXTENT_GUARD;
  e->freed_at = now;
  e->dirty = (uint32_t)e->node.npages;
  h->dirty_pages += e->dirty;
  heap_schedule_purge(h, now);
}

/* Set a free extent's dirty count, keeping the heap's sum. */
static void extent_set_dirty(local_heap_t *h, extent_t *e, size_t dirty) {
  h->dirty_pages = h->dirty_pages - e->dirty + dirty;
  e->dirty = (uint32_t)dirty;
}

/* ---- guard pages (secure mode) ----------------------------------------------
 * A page block or large block carries one more datablock than it needs,
 * made a guard, so that running off its end faults instead of reaching the
 * next block.  The guard goes when the extent returns to the tree. */

static bool extent_guard(extent_t *e) {
  if (!options.secure) return true;
  if (!os_guard((void *)(extent_end(e) - MM_PAGE_SIZE), MM_PAGE_SIZE, true)) return false;
  e->flags |= MM_EXTENT_GUARD;
  return true;
}

static void extent_unguard(extent_t *e) {
  if (e->flags & MM_EXTENT_GUARD) {
    os_guard((void *)(extent_end(e) - MM_PAGE_SIZE), MM_PAGE_SIZE, false);
    e->flags &= (uint8_t)~MM_EXTENT_GUARD;
  }
}

/* Datablocks for a block that needs n of them (one more for the guard). */
static size_t guarded_pages(size_t n) { return n + (options.secure ? 1 : 0); }

/* ---- free extents: insert with coalescing, carve --------------------------- */

/* Make e (out of any list, not in the tree) a FREE extent of h, merged with
 * free neighbours.  e's flags, freed_at and dirty must be set (and dirty
 * counted in dirty_pages).  Returns the extent that now holds e's pages. */
static extent_t *heap_insert_free(local_heap_t *h, extent_t *e) {
  extent_unguard(e);
  slot_t *slot = slot_of_extent(e);
  uintptr_t start = e->node.start, end = extent_end(e);
  extent_t *left = NULL, *right = NULL;
  if (start > slot_data_start(slot)) {
    left = region_extent_at(slot, start - MM_PAGE_SIZE);
    if (left && left->kind != MM_EXTENT_FREE) left = NULL;
  }
  if (end < (uintptr_t)slot + slot->size) {
    right = region_extent_at(slot, end);
    if (right && right->kind != MM_EXTENT_FREE) right = NULL;
  }
  e->kind = MM_EXTENT_FREE;
  if (!left && !right) {
    interval_tree_insert(&h->tree, &e->node);
    region_map_ends(e);
    return e;
  }
  /* Merge: the dirty counts add up, zero only if all parts are, freed when
   * the newest dirty part was (so no part is purged before its delay). */
  extent_t *parts[3] = {left, e, right};
  size_t total = 0, dirty = 0;
  uint8_t zero = MM_EXTENT_ZERO;
  uint32_t newest = 0;
  bool have_time = false;
  for (int i = 0; i < 3; i++) {
    extent_t *p = parts[i];
    if (!p) continue;
    total += p->node.npages;
    if (p->dirty) {
      dirty += p->dirty;
      if (!have_time || (int32_t)(p->freed_at - newest) > 0) newest = p->freed_at;
      have_time = true;
    }
    zero &= p->flags;
  }
  /* A part whose address space was given back makes the whole merged
   * extent unmapped: the others are unmapped too (they are free). */
  bool unmapped = false;
  for (int i = 0; i < 3; i++)
    if (parts[i] && (parts[i]->flags & MM_EXTENT_UNMAPPED)) unmapped = true;
  if (unmapped)
    for (int i = 0; i < 3; i++) {
      extent_t *p = parts[i];
      if (!p || (p->flags & MM_EXTENT_UNMAPPED)) continue;
      os_release((void *)p->node.start, p->node.npages << MM_PAGE_SHIFT);
      dirty -= p->dirty;
      extent_set_dirty(h, p, 0);
    }
  extent_t *keep;
  if (left) {
    keep = left;
    if (right) {
      interval_tree_remove(&h->tree, &right->node);
      region_extent_delete(slot, right);
    }
    interval_tree_resize(&h->tree, &left->node, left->node.start, total);
  } else {
    keep = right;
    interval_tree_resize(&h->tree, &right->node, start, total);
  }
  region_extent_delete(slot, e);
  keep->flags = unmapped ? MM_EXTENT_ZERO | MM_EXTENT_UNMAPPED : zero;
  keep->dirty = (uint32_t)dirty; /* the parts' counts, already in dirty_pages */
  if (dirty) keep->freed_at = newest;
  region_map_ends(keep);
  return keep;
}

/* Carve [f.start + off pages, + n pages) out of FREE extent f.  Returns the
 * carved extent (kind unset, flags = MM_EXTENT_ZERO if its bytes are zero),
 * or NULL when the slot has no descriptor left (nothing changed). */
static extent_t *heap_carve(local_heap_t *h, extent_t *f, size_t off, size_t n) {
  slot_t *slot = slot_of_extent(f);
  size_t before = off, after = f->node.npages - off - n;
  extent_t *e = f, *g = NULL;
  if (before || after) {
    e = region_extent_new(slot);
    if (!e) return NULL;
  }
  if (before && after) {
    g = region_extent_new(slot);
    if (!g) {
      region_extent_delete(slot, e);
      return NULL;
    }
  }
  uint8_t flags = f->flags;
  uint32_t freed_at = f->freed_at;
  size_t dirty = f->dirty;
  uintptr_t s = f->node.start + (off << MM_PAGE_SHIFT);
  if (!before && !after) {
    interval_tree_remove(&h->tree, &f->node);
    extent_set_dirty(h, f, 0);
  } else if (!before) {
    interval_tree_resize(&h->tree, &f->node, s + (n << MM_PAGE_SHIFT), after);
    extent_set_dirty(h, f, dirty < after ? dirty : after);
    region_map_ends(f);
  } else {
    interval_tree_resize(&h->tree, &f->node, f->node.start, before);
    extent_set_dirty(h, f, dirty < before ? dirty : before);
    region_map_ends(f);
    if (g) {
      g->kind = MM_EXTENT_FREE;
      g->flags = flags;
      g->freed_at = freed_at;
      g->dirty = 0;
      g->node.start = s + (n << MM_PAGE_SHIFT);
      g->node.npages = after;
      extent_set_dirty(h, g, dirty < after ? dirty : after);
      interval_tree_insert(&h->tree, &g->node);
      region_map_ends(g);
    }
  }
  e->node.start = s;
  e->node.npages = n;
  e->flags = flags & MM_EXTENT_ZERO;
  e->dirty = 0;
  e->next = e->prev = NULL;
  return e;
}

/* ---- slots ------------------------------------------------------------------ */

static bool slot_is_empty(slot_t *slot, extent_t **free_out) {
  extent_t *f = region_extent_at(slot, slot_data_start(slot));
  if (f && f->kind == MM_EXTENT_FREE && f->node.npages == region_slot_data_pages()) {
    *free_out = f;
    return true;
  }
  return false;
}

/* Unmap every slot of h that holds nothing, but `keep` of them.  Lock held. */
static size_t heap_release_empty_slots(local_heap_t *h, uint32_t keep) {
  size_t released = 0;
  slot_t **link = &h->slots;
  while (*link) {
    slot_t *slot = *link;
    extent_t *f;
    if (slot_is_empty(slot, &f)) {
      if (keep) {
        keep--;
      } else {
        interval_tree_remove(&h->tree, &f->node);
        extent_set_dirty(h, f, 0);
        *link = slot->next;
        h->nslots--;
        region_slot_release(slot);
        released++;
        continue;
      }
    }
    link = &slot->next;
  }
  return released;
}

/* ---- address-space pressure ------------------------------------------------
 * When the OS refuses to reserve or commit (an RLIMIT_AS, a full address
 * space, an exhausted commit limit), free memory gives its address space
 * back: empty slots are unmapped, and so is every free extent of 64 KiB or
 * more, in place (MM_EXTENT_UNMAPPED: it keeps its place in the tree and is
 * mapped again, piece by piece, when an allocation takes it).  So freed
 * memory is reusable even by a block bigger than a slot. */

typedef struct unmap_walk_s {
  local_heap_t *h;
  size_t bytes;
} unmap_walk_t;

static bool unmap_visit(itree_node_t *node, void *arg) {
  unmap_walk_t *w = arg;
  extent_t *e = extent_of_node(node);
  if ((e->flags & MM_EXTENT_UNMAPPED) || e->node.npages < 16) return true;
  os_release((void *)e->node.start, e->node.npages << MM_PAGE_SHIFT);
  extent_set_dirty(w->h, e, 0);
  e->flags = MM_EXTENT_ZERO | MM_EXTENT_UNMAPPED;
  slot_of_extent(e)->holes = 1;
  w->bytes += e->node.npages << MM_PAGE_SHIFT;
  return true;
}

/* Lock held.  Bytes of address space given back. */
static size_t heap_give_back_address_space(local_heap_t *h) {
  size_t slots = heap_release_empty_slots(h, 0);
  unmap_walk_t w = {h, slots * MM_SLOT_SIZE};
  /* the page cache first: its blocks go to the tree (and out with it) */
  while (h->cache.last) {
    extent_t *c = h->cache.last;
    page_queue_remove(&h->cache, c);
    h->cache_count--;
    heap_insert_free(h, c);
  }
  atomic_store_relaxed(&h->xcached, h->cache_count);
  interval_tree_foreach(&h->tree, unmap_visit, &w);
  return w.bytes;
}

/* Every heap gives back its address space: `self` (whose lock the caller
 * holds, or NULL), the others if their lock is free right now.  Also the
 * cached huge mappings.  Bytes given back. */
static size_t relieve_pressure(local_heap_t *self);

/* A new slot for h, its data area inserted in the tree.  When the OS
 * refuses, relieve the pressure and try once more. */
static extent_t *heap_grow(local_heap_t *h) {
  extent_t *f;
  slot_t *slot = region_slot_new(h->index, &f);
  if (!slot) {
    if (relieve_pressure(h)) slot = region_slot_new(h->index, &f);
    if (!slot) return NULL;
  }
  slot->next = h->slots;
  h->slots = slot;
  h->nslots++;
  interval_tree_insert(&h->tree, &f->node);
  return f;
}

/* Make [start, start + n pages) of slot read-write: the slot's committed
 * prefix grows to cover it (few mprotect calls, two mappings per slot), or,
 * in a slot with holes, exactly that range.  No pressure relief here: that
 * may unmap the very extent (or slot) being carved, so the caller relieves
 * and searches again. */
static bool heap_commit(slot_t *slot, uintptr_t start, size_t n) {
  return slot->holes ? os_commit((void *)start, n << MM_PAGE_SHIFT)
                     : region_commit_to(slot, start + (n << MM_PAGE_SHIFT));
}

/* An extent of n pages aligned to align_pages, carved from h's free space
 * and committed.  room: place it with room behind to grow into.  Lock held.
 * NULL with errno ENOMEM when there is no address space or commit charge. */
static extent_t *heap_alloc_extent(local_heap_t *h, size_t n, size_t align_pages,
                                   bool room) {
  size_t need = n + align_pages - 1;
  if (need > region_slot_data_pages()) {
    errno = ENOMEM;
    return NULL;
  }
  bool relieved = false;
  for (int attempt = 0; attempt < 2; attempt++) {
    itree_node_t *node = NULL;
    if (room && align_pages == 1) {
      node = interval_tree_largest(&h->tree);
      if (node && node->npages < 4 * n) node = NULL;
    }
    bool middle = node != NULL;
    if (!node) node = interval_tree_first_fit(&h->tree, need);
    if (!node) {
      extent_t *f = heap_grow(h);
      if (!f) {
        errno = ENOMEM;
        return NULL;
      }
      node = &f->node;
      middle = room && align_pages == 1 && node->npages >= 4 * n;
    }
    extent_t *f = extent_of_node(node);
    size_t off = middle ? (f->node.npages - n) / 2 : 0;
    if (align_pages > 1) {
      uintptr_t a = (uintptr_t)align_pages << MM_PAGE_SHIFT;
      uintptr_t s = (f->node.start + a - 1) & ~(a - 1);
      off = (s - f->node.start) >> MM_PAGE_SHIFT;
    }
    slot_t *slot = slot_of_extent(f);
    if (f->flags & MM_EXTENT_UNMAPPED) {
      if (off && align_pages == 1) off = 0; /* keep the rest in one piece */
      void *s = (void *)(f->node.start + (off << MM_PAGE_SHIFT));
      size_t bytes = n << MM_PAGE_SHIFT;
      if (!os_reserve_at(s, bytes)) {
        if (errno == EEXIST) { /* another mapping took the hole: lose it */
          interval_tree_remove(&h->tree, &f->node);
          extent_set_dirty(h, f, 0);
          region_extent_delete(slot, f);
          attempt--;
          continue;
        }
        errno = ENOMEM;
        return NULL;
      }
      if (!os_commit(s, bytes)) {
        os_release(s, bytes);
        errno = ENOMEM;
        return NULL;
      }
    } else if (!heap_commit(slot, f->node.start + (off << MM_PAGE_SHIFT), n)) {
      /* Relieving the pressure may unmap f, or its whole slot: search again. */
      if (!relieved && relieve_pressure(h)) {
        relieved = true;
        attempt--;
        continue;
      }
      errno = ENOMEM;
      return NULL;
    }
    extent_t *e = heap_carve(h, f, off, n);
    if (!e && off && align_pages == 1 && !(f->flags & MM_EXTENT_UNMAPPED)) e = heap_carve(h, f, 0, n);
    if (e) return e;
    if (f->flags & MM_EXTENT_UNMAPPED) os_release((void *)(f->node.start + (off << MM_PAGE_SHIFT)), n << MM_PAGE_SHIFT);
    /* This slot is out of descriptors: take a fresh slot and retry there. */
    if (!heap_grow(h)) break;
  }
  errno = ENOMEM;
  return NULL;
}

/* ---- pages ------------------------------------------------------------------- */

/* Lock held: take a cached page block of n datablocks out of h's cache. */
static extent_t *cache_take(local_heap_t *h, size_t n) {
  for (extent_t *c = h->cache.first; c; c = c->next) {
    if (c->node.npages == n) {
      page_queue_remove(&h->cache, c);
      h->cache_count--;
      atomic_store_relaxed(&h->xcached, h->cache_count);
      extent_set_dirty(h, c, 0);
      h->pages_out++;
      return c;
    }
  }
  return NULL;
}

/* A page block taken from a page cache becomes a page of class cls (its
 * page map still names it on every page), under the lock of the heap whose
 * cache it was in. */
static void cached_page_init(extent_t *e, unsigned cls) {
  uint8_t guard = e->flags & MM_EXTENT_GUARD;
  page_init(e, cls);
  e->flags = guard;
}

/* h's lock held: a cached page block of n datablocks from another local
 * heap.  Its memory stays in that heap's slot (the page goes home when it
 * is empty again); a thread uses resident memory another heap's threads
 * freed instead of carving and faulting in fresh memory, which is what a
 * thread on one CPU replacing objects a thread on another allocated would
 * otherwise do.  Try-lock only: never waits while holding h. */
static extent_t *cache_borrow(local_heap_t *h, size_t n, unsigned cls) {
  for (uint32_t i = 1; i < mm_nheaps; i++) {
    local_heap_t *g = &mm_heaps[(h->index + i) % mm_nheaps];
    if (!atomic_load_relaxed(&g->xcached) || pthread_mutex_trylock(&g->lock) != 0) continue;
    extent_t *e = cache_take(g, n);
    /* under g's lock: g's threads read the kind of extents in g's slot */
    if (e) cached_page_init(e, cls);
    heap_unlock(g);
    if (e) return e;
  }
  return NULL;
}

/* A fresh page of class cls for a thread heap: from h's page cache, else
 * from another heap's, else carved from h's tree. */
extent_t *local_heap_take_page(local_heap_t *h, unsigned cls) {
  size_t n = guarded_pages(mm_size_classes[cls].npages);
  heap_lock(h);
  heap_check(h);
  extent_t *e = cache_take(h, n);
  if (e) cached_page_init(e, cls);
  else e = cache_borrow(h, n, cls);
  if (!e) {
    e = heap_alloc_extent(h, n, 1, false);
    if (e) {
      e->kind = MM_EXTENT_PAGE;
      region_map_all(e);
      if (!extent_guard(e)) {
        heap_dirty_add(h, e, os_now_ms());
        heap_insert_free(h, e);
        e = NULL;
      } else {
        uint8_t guard = e->flags & MM_EXTENT_GUARD;
        page_init(e, cls);
        e->flags = guard;
        h->pages_out++;
      }
    }
  }
  heap_check(h);
  heap_unlock(h);
  return e;
}

/* Abandoned pages of the whole process (relaxed; a hint that lets a thread
 * whose own local heap has none skip looking at the others). */
static _Atomic(uint64_t) abandoned_pages;
_Static_assert(MM_CLASSES <= 64, "xabandoned_classes has a bit per class");

/* Under h's lock: page leaves abandoned[cls]. */
static void abandoned_remove(local_heap_t *h, extent_t *page) {
  unsigned cls = page->size_class;
  page_queue_remove(&h->abandoned[cls], page);
  if (!h->abandoned[cls].first)
    atomic_store_relaxed(&h->xabandoned_classes,
                         atomic_load_relaxed(&h->xabandoned_classes) & ~((uint64_t)1 << cls));
  atomic_fetch_sub_relaxed(&abandoned_pages, 1);
}

static extent_t *adopt_from(local_heap_t *h, unsigned cls, thread_heap_t *th) {
  if (!(atomic_load_relaxed(&h->xabandoned_classes) & ((uint64_t)1 << cls)))
    return NULL; /* rechecked under the lock */
  heap_lock(h);
  extent_t *page = h->abandoned[cls].first;
  if (page) {
    abandoned_remove(h, page);
    page_set_owner(page, th);
  }
  heap_unlock(h);
  return page;
}

/* Take an abandoned page of class cls for th: from h, else from another
 * local heap (a page of a thread that exited, or of an idle thread whose
 * full pages were taken over, is better reused anywhere than left half
 * empty while fresh pages are carved). */
extent_t *local_heap_adopt_class(local_heap_t *h, unsigned cls, thread_heap_t *th) {
  extent_t *page = adopt_from(h, cls, th);
  for (uint32_t i = 1; !page && i < mm_nheaps && atomic_load_relaxed(&abandoned_pages); i++)
    page = adopt_from(&mm_heaps[(h->index + i) % mm_nheaps], cls, th);
  return page;
}

/* Take one particular abandoned page for th (a free found it ownerless).
 * False if another thread adopted it first. */
bool local_heap_adopt_page(extent_t *page, thread_heap_t *th) {
  local_heap_t *h = local_heap_of_extent(page);
  bool ok = false;
  heap_lock(h);
  if (page->kind == MM_EXTENT_PAGE && atomic_load_relaxed(&page->xowner) == NULL) {
    abandoned_remove(h, page);
    page_set_owner(page, th);
    ok = true;
  }
  heap_unlock(h);
  return ok;
}

/* A page whose thread exited (or was idle) with blocks still in use: park
 * it here. */
void local_heap_abandon_page(extent_t *page) {
  local_heap_t *h = local_heap_of_extent(page);
  heap_lock(h);
  page_set_owner(page, NULL);
  page->next = page->prev = NULL;
  page_queue_push_front(&h->abandoned[page->size_class], page);
  atomic_store_relaxed(&h->xabandoned_classes,
                       atomic_load_relaxed(&h->xabandoned_classes) |
                           ((uint64_t)1 << page->size_class));
  atomic_fetch_add_relaxed(&abandoned_pages, 1);
  heap_unlock(h);
}

/* A page with no block in use comes home: into the page cache, whose oldest
 * entry goes back to the tree when the cache is full. */
void local_heap_return_page(extent_t *page) {
  local_heap_t *h = local_heap_of_extent(page);
  uint32_t now = os_now_ms();
  heap_lock(h);
  heap_check(h);
  page_set_owner(page, NULL);
  page->kind = MM_EXTENT_CACHED;
  page->free = page->local_free = NULL;
  heap_dirty_add(h, page, now);
  page_queue_push_front(&h->cache, page);
  h->pages_back++;
  if (++h->cache_count > MM_PAGE_CACHE_MAX) {
    extent_t *old = h->cache.last;
    page_queue_remove(&h->cache, old);
    h->cache_count--;
    heap_insert_free(h, old);
  }
  atomic_store_relaxed(&h->xcached, h->cache_count);
  heap_check(h);
  heap_unlock(h);
}

/* ---- large blocks ------------------------------------------------------------- */

/* A LARGE block of size bytes.  room: the block is growing (realloc moved
 * it): place it with room behind.  Otherwise first fit, which reuses the
 * lowest (and most likely resident) free memory. */
void *local_heap_alloc_large(local_heap_t *h, size_t size, size_t align, bool zero,
                             bool room) {
  size_t n = guarded_pages((size + MM_PAGE_SIZE - 1) >> MM_PAGE_SHIFT);
  size_t align_pages = align > MM_PAGE_SIZE ? align >> MM_PAGE_SHIFT : 1;
  heap_lock(h);
  heap_check(h);
  extent_t *e = heap_alloc_extent(h, n, align_pages, room);
  if (e) {
    e->kind = MM_EXTENT_LARGE;
    region_map_ends(e);
    bool zero = e->flags & MM_EXTENT_ZERO;
    if (!extent_guard(e)) {
      heap_dirty_add(h, e, os_now_ms());
      heap_insert_free(h, e);
      e = NULL;
      errno = ENOMEM;
    } else {
      if (zero) e->flags |= MM_EXTENT_ZERO;
      h->large_allocs++;
      h->large_live_bytes += n << MM_PAGE_SHIFT;
    }
  }
  heap_check(h);
  heap_unlock(h);
  if (!e) return NULL;
  void *p = (void *)e->node.start;
  size_t bytes = (n - (options.secure ? 1 : 0)) << MM_PAGE_SHIFT;
  if (zero && !(e->flags & MM_EXTENT_ZERO)) {
    /* Big blocks are zeroed by the kernel (and lose their stale pages);
     * small ones by memset, cheaper than faulting them in again. */
    if (bytes < ((size_t)1 << 20) || !os_purge(p, bytes)) memset(p, 0, bytes);
  }
  e->flags &= MM_EXTENT_GUARD;
  if (options.hugepages == 2 && bytes >= ((size_t)8 << 20)) os_hugepages(p, bytes, true);
  return p;
}

/* Free a LARGE extent.  The caller checked it without the lock; a racing
 * double free is caught here. */
void local_heap_free_large(extent_t *e) {
  local_heap_t *h = local_heap_of_extent(e);
  uintptr_t start = e->node.start;
  uint32_t now = os_now_ms();
  heap_lock(h);
  heap_check(h);
  if (e->kind != MM_EXTENT_LARGE) {
    heap_unlock(h);
    os_fatal("mmalloc: free(): double free of %p\n", (void *)start);
  }
  h->large_frees++;
  h->large_live_bytes -= e->node.npages << MM_PAGE_SHIFT;
  heap_dirty_add(h, e, now);
  heap_insert_free(h, e);
  uint64_t due = atomic_load_relaxed(&h->xpurge_at);
  if (due && time_reached(now, (uint32_t)due)) local_heap_purge(h, false);
  heap_check(h);
  heap_unlock(h);
}

/* Resize a LARGE extent in place to hold size bytes: shrink by giving the
 * tail back, grow by taking the free extent right behind it.  False when it
 * cannot grow in place (nothing changed). */
/* Make [end, end + more pages) of the free extent r usable for a block
 * growing into it.  r's address space may have been given back (unmapped in
 * place under pressure): map it again.  In a slot with holes the watermark
 * says nothing, so commit the exact range.  False leaves everything as it
 * was (realloc then moves the block).  Lock held. */
static bool grow_commit(slot_t *slot, extent_t *r, uintptr_t end, size_t more) {
  void *p = (void *)end;
  size_t bytes = more << MM_PAGE_SHIFT;
  if (r->flags & MM_EXTENT_UNMAPPED) {
    if (!os_reserve_at(p, bytes)) return false;
    if (!os_commit(p, bytes)) {
      os_release(p, bytes);
      return false;
    }
    return true;
  }
  return slot->holes ? os_commit(p, bytes) : region_commit_to(slot, end + bytes);
}

bool local_heap_resize_large(extent_t *e, size_t size) {
  if (e->flags & MM_EXTENT_GUARD) return false; /* secure mode: realloc moves */
  local_heap_t *h = local_heap_of_extent(e);
  slot_t *slot = slot_of_extent(e);
  size_t n = (size + MM_PAGE_SIZE - 1) >> MM_PAGE_SHIFT;
  bool ok = false;
  heap_lock(h);
  heap_check(h);
  size_t old = e->node.npages;
  if (n == old) {
    ok = true;
  } else if (n < old) {
    extent_t *t = region_extent_new(slot);
    if (t) {
      t->node.start = e->node.start + (n << MM_PAGE_SHIFT);
      t->node.npages = old - n;
      e->node.npages = n;
      region_map_ends(e);
      h->large_live_bytes -= (old - n) << MM_PAGE_SHIFT;
      heap_dirty_add(h, t, os_now_ms());
      heap_insert_free(h, t);
    }
    ok = true; /* without a descriptor the block just keeps its tail */
  } else {
    uintptr_t end = extent_end(e);
    extent_t *r = end < (uintptr_t)slot + slot->size ? region_extent_at(slot, end) : NULL;
    size_t more = n - old;
    if (r && r->kind == MM_EXTENT_FREE && r->node.npages >= more &&
        grow_commit(slot, r, end, more)) {
      if (r->node.npages == more) {
        interval_tree_remove(&h->tree, &r->node);
        extent_set_dirty(h, r, 0);
        region_extent_delete(slot, r);
      } else {
        size_t left_over = r->node.npages - more;
        interval_tree_resize(&h->tree, &r->node, end + (more << MM_PAGE_SHIFT), left_over);
        if (r->dirty > left_over) extent_set_dirty(h, r, left_over);
        region_map_ends(r);
      }
      e->node.npages = n;
      region_map_ends(e);
      h->large_live_bytes += more << MM_PAGE_SHIFT;
      h->realloc_in_place++;
      ok = true;
    }
  }
  heap_check(h);
  heap_unlock(h);
  return ok;
}

/* Huge blocks: their own mappings, counted here. */
/* A cached huge mapping that can hold size bytes at this alignment (the
 * smallest such), taken out of the cache; NULL if none.  Lock held. */
static extent_t *huge_cache_take(local_heap_t *h, size_t size, size_t align) {
  extent_t *best = NULL;
  uintptr_t best_room = 0;
  for (extent_t *c = h->huge_cache.first; c; c = c->next) {
    slot_t *slot = slot_of_extent(c);
    uintptr_t room = (uintptr_t)slot + slot->size - c->node.start;
    if (room >= size && (c->node.start & (align - 1)) == 0 && (!best || room < best_room)) {
      best = c;
      best_room = room;
    }
  }
  if (best) {
    page_queue_remove(&h->huge_cache, best);
    h->huge_cache_count--;
  }
  return best;
}

/* Unmap a cached huge mapping.  Lock held. */
static void huge_cache_drop(local_heap_t *h, extent_t *c) {
  page_queue_remove(&h->huge_cache, c);
  h->huge_cache_count--;
  region_huge_free(c);
}

static size_t relieve_pressure(local_heap_t *self) {
  size_t bytes = 0;
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    local_heap_t *o = &mm_heaps[i];
    if (o != self) {
      if (self ? pthread_mutex_trylock(&o->lock) != 0 : (heap_lock(o), false)) continue;
    }
    while (o->huge_cache.first) {
      bytes += slot_of_extent(o->huge_cache.first)->size;
      huge_cache_drop(o, o->huge_cache.first);
    }
    atomic_store_relaxed(&o->xhuge_cached, 0);
    bytes += heap_give_back_address_space(o);
    if (o != self) heap_unlock(o);
  }
  return bytes;
}

/* Huge blocks: their own mappings, counted here, reused from the cache of
 * recently freed ones before a new one is mapped.  zero: the caller needs
 * zeroed memory (a fresh mapping is; a reused one is purged first). */
void *local_heap_alloc_huge(local_heap_t *h, size_t size, size_t align, bool zero) {
  if (align < MM_PAGE_SIZE) align = MM_PAGE_SIZE;
  extent_t *e = NULL;
  if (atomic_load_relaxed(&h->xhuge_cached)) {
    heap_lock(h);
    e = huge_cache_take(h, size, align);
    atomic_store_relaxed(&h->xhuge_cached, h->huge_cache_count);
    heap_unlock(h);
    if (e) {
      extent_t *r = region_huge_resize(e, size, true);
      if (!r) {
        region_huge_free(e);
      } else {
        e = r;
        e->kind = MM_EXTENT_LARGE;
        if (zero) {
          void *p = (void *)e->node.start;
          size_t bytes = e->node.npages << MM_PAGE_SHIFT;
          if (!os_purge(p, bytes)) memset(p, 0, bytes); /* it was someone's: zero it */
        }
      }
      e = r;
    }
  }
  if (!e) e = region_huge_new(h->index, size, align);
  if (!e && errno == ENOMEM && relieve_pressure(NULL)) e = region_huge_new(h->index, size, align);
  if (!e) return NULL;
  heap_lock(h);
  h->huge_allocs++;
  h->huge_live_bytes += e->node.npages << MM_PAGE_SHIFT;
  heap_unlock(h);
  return (void *)e->node.start;
}

/* A freed huge block goes to its heap's cache (the oldest entry is unmapped
 * when the cache is full); the purge unmaps entries idle for the delay.
 * A second free finds it CACHED and is reported. */
void local_heap_free_huge(extent_t *e) {
  local_heap_t *h = local_heap_of_extent(e);
  uintptr_t start = e->node.start;
  size_t bytes = e->node.npages << MM_PAGE_SHIFT;
  uint32_t now = os_now_ms();
  heap_lock(h);
  if (e->kind != MM_EXTENT_LARGE) {
    heap_unlock(h);
    os_fatal("mmalloc: free(): double free of %p\n", (void *)start);
  }
  h->huge_live_bytes -= bytes;
  e->kind = MM_EXTENT_CACHED;
  e->freed_at = now;
  page_queue_push_front(&h->huge_cache, e);
  if (++h->huge_cache_count > MM_HUGE_CACHE_MAX) huge_cache_drop(h, h->huge_cache.last);
  atomic_store_relaxed(&h->xhuge_cached, h->huge_cache_count);
  heap_schedule_purge(h, now);
  heap_unlock(h);
}

extent_t *local_heap_resize_huge(extent_t *e, size_t size) {
  local_heap_t *h = local_heap_of_extent(e);
  size_t before = e->node.npages << MM_PAGE_SHIFT;
  extent_t *ne = region_huge_resize(e, size, false);
  if (ne) {
    heap_lock(h);
    h->huge_live_bytes += (ne->node.npages << MM_PAGE_SHIFT) - before;
    heap_unlock(h);
  }
  return ne;
}

/* ---- purging ---------------------------------------------------------------------- */

typedef struct purge_walk_s {
  local_heap_t *h;
  uint32_t now, delay;
  bool force;
  bool dirty_left; /* some dirty memory is not yet idle long enough */
} purge_walk_t;

static bool purge_visit(itree_node_t *node, void *arg) {
  purge_walk_t *w = arg;
  extent_t *e = extent_of_node(node);
  if (!e->dirty) return true;
  if (!w->force && !time_reached(w->now, e->freed_at + w->delay)) {
    w->dirty_left = true;
    return true;
  }
  slot_t *slot = slot_of_extent(e);
  uintptr_t end = extent_end(e);
  uintptr_t committed = (uintptr_t)slot + slot->committed;
  if (end > committed && !slot->holes) end = committed;
  if (end > e->node.start && !os_purge((void *)e->node.start, end - e->node.start)) {
    w->dirty_left = true; /* the OS refused: try again next time */
    return true;
  }
  w->h->purged_bytes += end > e->node.start ? end - e->node.start : 0;
  extent_set_dirty(w->h, e, 0);
  e->flags = MM_EXTENT_ZERO;
  return true;
}

/* Give back to the OS the free memory of h that has been idle for the purge
 * delay (all of it when force).  Lock held.  Purges are batched: what is not
 * yet idle long enough waits for the next purge, one delay from now, so a
 * heap purges at most once per delay however many extents it frees. */
void local_heap_purge(local_heap_t *h, bool force) {
  purge_walk_t w = {h, os_now_ms(), (uint32_t)options.purge_delay_ms, force, false};
  /* Cached page blocks idle that long go back to the tree first. */
  for (extent_t *c = h->cache.last; c;) {
    extent_t *prev = c->prev;
    if (force || time_reached(w.now, c->freed_at + w.delay)) {
      page_queue_remove(&h->cache, c);
      h->cache_count--;
      heap_insert_free(h, c);
    } else {
      w.dirty_left = true;
    }
    c = prev;
  }
  atomic_store_relaxed(&h->xcached, h->cache_count);
  for (extent_t *c = h->huge_cache.last; c;) {
    extent_t *prev = c->prev;
    if (force || time_reached(w.now, c->freed_at + w.delay)) huge_cache_drop(h, c);
    else w.dirty_left = true;
    c = prev;
  }
  atomic_store_relaxed(&h->xhuge_cached, h->huge_cache_count);
  interval_tree_foreach(&h->tree, purge_visit, &w);
  h->purges++;
  atomic_store_relaxed(&h->xpurge_at,
                       w.dirty_left ? ((uint64_t)1 << 32) | (w.now + w.delay) : 0);
}

/* Purge every heap that is due and whose lock is free right now. */
void local_heap_purge_due(uint32_t now) {
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    local_heap_t *h = &mm_heaps[i];
    uint64_t due = atomic_load_relaxed(&h->xpurge_at);
    if (!due || !time_reached(now, (uint32_t)due)) continue;
    if (pthread_mutex_trylock(&h->lock) != 0) continue;
    local_heap_purge(h, false);
    heap_unlock(h);
  }
}

/* mm_collect: every heap gives back all its free memory now. */
void local_heap_collect_all(void) {
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    local_heap_t *h = &mm_heaps[i];
    heap_lock(h);
    local_heap_purge(h, true);
    heap_release_empty_slots(h, 1);
    heap_check(h);
    heap_unlock(h);
  }
}

/* ---- thread heap structures ----------------------------------------------------------
 * Thread heaps live in memory of their local heap's own (a bump allocator
 * over 64 KiB mappings) and are reused, never unmapped: another thread may
 * still push a block into a dead heap's inbox. */

thread_heap_t *local_heap_thread_heap_new(local_heap_t *h) {
  heap_lock(h);
  thread_heap_t *th = h->dead;
  if (th) {
    h->dead = th->next_dead;
    atomic_store_relaxed(&h->xdead, atomic_load_relaxed(&h->xdead) - 1);
    th->next_dead = NULL;
  } else {
    size_t size = (sizeof(thread_heap_t) + MM_CACHE_LINE - 1) & ~(size_t)(MM_CACHE_LINE - 1);
    if (h->meta_left < size) {
      size_t chunk = 64 << 10;
      void *m = os_reserve(chunk, MM_PAGE_SIZE);
      if (m && !os_commit(m, chunk)) {
        os_release(m, chunk);
        m = NULL;
      }
      if (!m) {
        heap_unlock(h);
        errno = ENOMEM;
        return NULL;
      }
      h->meta_next = m;
      h->meta_left = chunk;
    }
    th = (thread_heap_t *)h->meta_next;
    h->meta_next += size;
    h->meta_left -= size;
    memset(th, 0, sizeof(*th));
    th->next_in_local = h->threads;
    h->threads = th;
  }
  th->local = h; /* a LIVE heap always names its local heap (fork_child) */
  th->state = MM_THREAD_LIVE;
  heap_unlock(h);
  return th;
}

void local_heap_thread_heap_dead(thread_heap_t *th) {
  local_heap_t *h = th->local;
  heap_lock(h);
  th->state = MM_THREAD_DEAD;
  th->next_dead = h->dead;
  h->dead = th;
  atomic_store_relaxed(&h->xdead, atomic_load_relaxed(&h->xdead) + 1);
  heap_unlock(h);
}

/* Blocks that reached the inboxes of h's dead thread heaps (freed by threads
 * that had not seen the owner exit), as one chain for a live thread to free. */
block_t *local_heap_take_dead_inboxes(local_heap_t *h) {
  block_t *all = NULL;
  if (atomic_load_relaxed(&h->xdead) == 0) return NULL; /* the next sweep sees the rest */
  heap_lock(h);
  for (thread_heap_t *th = h->dead; th; th = th->next_dead) {
    for (unsigned lane = 0; lane < MM_LANES; lane++) {
      if (!atomic_load_relaxed(&th->xinbox[lane])) continue;
      block_t *b = atomic_exchange_acquire(&th->xinbox[lane], NULL);
      while (b) {
        block_t *next = block_next(b);
        block_set_next(b, all);
        all = b;
        b = next;
      }
    }
  }
  heap_unlock(h);
  return all;
}

/* ---- fork ------------------------------------------------------------------------------ */

void local_heap_fork_prepare(void) {
  for (uint32_t i = 0; i < mm_nheaps; i++) heap_lock(&mm_heaps[i]);
}

void local_heap_fork_parent(void) {
  for (uint32_t i = mm_nheaps; i-- > 0;) heap_unlock(&mm_heaps[i]);
}

void local_heap_fork_child(void) {
  for (uint32_t i = mm_nheaps; i-- > 0;) pthread_mutex_init(&mm_heaps[i].lock, NULL);
}

/* ---- checker ----------------------------------------------------------------------------- */

typedef struct check_walk_s {
  local_heap_t *h;
  size_t dirty;
  char *why;
  size_t why_size;
  bool ok;
} check_walk_t;

static bool check_visit(itree_node_t *node, void *arg) {
  check_walk_t *w = arg;
  extent_t *e = extent_of_node(node);
  slot_t *slot = slot_of_extent(e);
  if (e->kind != MM_EXTENT_FREE || slot->heap != w->h->index || slot->huge ||
      e->node.start < slot_data_start(slot) ||
      extent_end(e) > (uintptr_t)slot + slot->size ||
      region_extent_at(slot, e->node.start) != e ||
      region_extent_at(slot, extent_end(e) - MM_PAGE_SIZE) != e) {
    os_format(w->why, w->why_size, "heap %u: tree node %p is not a mapped free extent of its slots",
              w->h->index, (void *)e->node.start);
    w->ok = false;
    return false;
  }
  if (e->dirty > e->node.npages) {
    os_format(w->why, w->why_size, "heap %u: extent %p counts %u dirty pages of %zu",
              w->h->index, (void *)e->node.start, e->dirty, e->node.npages);
    w->ok = false;
    return false;
  }
  w->dirty += e->dirty;
  return true;
}

bool local_heap_is_valid(local_heap_t *h, char *why, size_t why_size) {
  if (!interval_tree_is_valid(&h->tree, true, why, why_size)) return false;
  check_walk_t w = {h, 0, why, why_size, true};
  interval_tree_foreach(&h->tree, check_visit, &w);
  if (!w.ok) return false;
  uint32_t n = 0;
  for (extent_t *c = h->cache.first; c; c = c->next, n++) {
    if (c->kind != MM_EXTENT_CACHED || local_heap_of_extent(c) != h) {
      os_format(why, why_size, "heap %u: page cache holds a foreign extent", h->index);
      return false;
    }
    w.dirty += c->dirty;
  }
  if (n != h->cache_count) {
    os_format(why, why_size, "heap %u: cache_count %u but %u cached", h->index, h->cache_count, n);
    return false;
  }
  if (w.dirty != h->dirty_pages) {
    os_format(why, why_size, "heap %u: dirty_pages %zu but %zu dirty", h->index, h->dirty_pages, w.dirty);
    return false;
  }
  uint64_t classes = atomic_load_relaxed(&h->xabandoned_classes);
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    if (!(classes >> c & 1) != !h->abandoned[c].first) {
      os_format(why, why_size, "heap %u: abandoned class bit %u disagrees with its list",
                h->index, c);
      return false;
    }
    for (extent_t *p = h->abandoned[c].first; p; p = p->next)
      if (p->kind != MM_EXTENT_PAGE || p->size_class != c ||
          atomic_load_relaxed(&p->xowner) != NULL) {
        os_format(why, why_size, "heap %u: abandoned list %u holds a page that is not abandoned",
                  h->index, c);
        return false;
      }
  }
  return true;
}
