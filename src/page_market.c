/* page_market.c — page blocks for the thread heaps: the page cache,
 * borrowing from other heaps' caches, carving new ones, and the pages left
 * without an owner (abandoned).
 *
 * Layer: local heap.  It moves extents between lists and sets their kind;
 * it never touches a page's owner, free lists or blocks: the thread heap
 * (thread_heap.c) does that, holding this heap's lock around the calls
 * named _locked, so that "no owner" and "on the abandoned list" change
 * together.
 *
 * Invariants (under the heap's lock; local_heap_check.c checks them):
 *   cache holds cache_count CACHED page blocks of this heap, newest first;
 *   a CACHED page block is dirty all over from when it came back;
 *   abandoned[c] holds exactly the PAGEs of class c of this heap's slots
 *   whose owner is NULL; bit c of xabandoned_classes says it is not empty;
 *   xabandoned_pages (process-wide) counts every heap's abandoned pages.
 */
#include "local_heap_parts.h"

/* Abandoned pages of the whole process (relaxed; a hint that lets a thread
 * whose own local heap has none skip looking at the others). */
static _Atomic(uint64_t) xabandoned_pages;
_Static_assert(MM_CLASSES <= 64, "xabandoned_classes has a bit per class");

/* ---- the page cache ------------------------------------------------------------ */

void page_cache_evict(local_heap_t *h, extent_t *c) {
  mm_assert_internal(local_heap_locked(h) && c->kind == MM_EXTENT_CACHED);
  extent_list_remove(&h->cache, c);
  h->cache_count--;
  atomic_store_relaxed(&h->xcached, h->cache_count);
  extent_insert_free(h, c);
}

/* A cached page block of n datablocks (at a multiple of align datablocks
 * from the address space's start) taken out of h's cache, as a PAGE
 * claimed for its new owner (kind set and claim run here, under h's lock:
 * h's threads read the kind of extents of h's slots while coalescing, and
 * h's checker wants every ownerless PAGE on an abandoned list). */
static extent_t *cache_take(local_heap_t *h, size_t n, size_t align, page_claim_fn *claim,
                            void *arg) {
  mm_assert_internal(local_heap_locked(h));
  for (extent_t *c = h->cache.first; c; c = c->next) {
    if (c->node.ndatablocks == n && (c->node.start >> MM_DATABLOCK_SHIFT) % align == 0) {
      extent_list_remove(&h->cache, c);
      h->cache_count--;
      atomic_store_relaxed(&h->xcached, h->cache_count);
      decay_set_dirty(h, c, 0);
      c->kind = MM_EXTENT_PAGE; /* its extent map still names it everywhere */
      claim(c, arg);
      h->pages_out++;
      return c;
    }
  }
  return NULL;
}

/* h's lock held: a cached page block of n datablocks from another local
 * heap.  Its memory stays in that heap's slot (the page goes home when it
 * is empty again); a thread uses resident memory another heap's threads
 * freed instead of carving and faulting in fresh memory, which is what a
 * thread on one CPU replacing objects a thread on another allocated would
 * otherwise do.  Try-lock only: never waits while holding h. */
static extent_t *cache_borrow(local_heap_t *h, size_t n, size_t align, page_claim_fn *claim,
                              void *arg) {
  mm_assert_internal(local_heap_locked(h));
  for (uint32_t i = 1; i < mm_nheaps; i++) {
    local_heap_t *g = &mm_heaps[(h->index + i) % mm_nheaps];
    if (!atomic_load_relaxed(&g->xcached) || !local_heap_trylock(g)) continue;
    extent_t *e = cache_take(g, n, align, claim, arg);
    local_heap_unlock(g);
    if (e) return e;
  }
  return NULL;
}

/* Give back all but the first keep_bytes of a page block just handed out
 * (its new owner has not carved past them).  Counted by h, the heap that
 * handed it out (a borrowed block lies in another heap's slot, whose lock
 * is not taken here).  h's lock held. */
static void page_block_trim(local_heap_t *h, extent_t *e, size_t keep_bytes) {
  mm_assert_internal(local_heap_locked(h));
  size_t bytes = e->node.ndatablocks << MM_DATABLOCK_SHIFT;
  if (!keep_bytes || keep_bytes >= bytes || (e->flags & MM_EXTENT_GUARD)) return;
  if (!os_purge((void *)(e->node.start + keep_bytes), bytes - keep_bytes)) return;
  h->purged_bytes += bytes - keep_bytes;
  h->returned_bytes += bytes - keep_bytes;
}

extent_t *local_heap_take_page_block(local_heap_t *h, size_t ndatablocks, size_t align,
                                     size_t keep_bytes, page_claim_fn *claim, void *arg) {
  mm_assert_internal(align >= 1 && (align & (align - 1)) == 0);
  size_t n = guarded_datablocks(ndatablocks);
  local_heap_lock(h);
  local_heap_check(h);
  extent_t *e = cache_take(h, n, align, claim, arg);
  if (!e) e = cache_borrow(h, n, align, claim, arg);
  if (e) {
    page_block_trim(h, e, keep_bytes); /* a cached block: it was a page, and resident */
  } else {
    e = extent_alloc(h, MM_TREE_MAIN, n, align, NULL);
    if (e) {
      if (!(e->flags & MM_EXTENT_ZERO)) page_block_trim(h, e, keep_bytes);
      e->kind = MM_EXTENT_PAGE;
      region_map_all(e);
      if (!extent_guard(e)) {
        decay_dirty_add(h, e, os_now_ms());
        extent_insert_free(h, e);
        e = NULL;
      } else {
        claim(e, arg);
        h->pages_out++;
      }
    }
  }
  local_heap_check(h);
  local_heap_unlock(h);
  return e;
}

/* A page with no block in use (or a lent page block) comes home: into the
 * page cache, whose oldest entry goes back to the tree when the cache is
 * full. */
void local_heap_cache_page_locked(local_heap_t *h, extent_t *page) {
  mm_assert_internal(local_heap_locked(h) && local_heap_of_extent(page) == h);
  mm_assert_internal((page->kind == MM_EXTENT_PAGE || page->kind == MM_EXTENT_POOL) &&
                     page->used == 0);
  mm_assert_internal(atomic_load_relaxed(&page->xowner) == NULL);
  page->kind = MM_EXTENT_CACHED;
  decay_dirty_add(h, page, os_now_ms());
  extent_list_push_front(&h->cache, page);
  h->pages_back++;
  h->cache_count++;
  atomic_store_relaxed(&h->xcached, h->cache_count);
  if (h->cache_count > MM_PAGE_CACHE_MAX) page_cache_evict(h, h->cache.last);
  local_heap_check(h);
}

void local_heap_lend_locked(local_heap_t *h, extent_t *e) {
  mm_assert_internal(local_heap_locked(h) && local_heap_of_extent(e) == h);
  mm_assert_internal(e->kind == MM_EXTENT_POOL);
  h->lent_blocks++;
  h->lent_bytes += extent_usable(e); /* not its guard (secure mode) */
}

void local_heap_unlend(extent_t *e) {
  local_heap_t *h = local_heap_of_extent(e);
  local_heap_lock(h);
  mm_assert(e->kind == MM_EXTENT_POOL && h->lent_blocks > 0);
  h->lent_blocks--;
  h->lent_bytes -= extent_usable(e);
  atomic_store_relaxed(&e->xowner_tid, 0);
  atomic_store_relaxed(&e->xlimit, 0);
  e->used = 0;
  e->next = e->prev = NULL;
  local_heap_cache_page_locked(h, e);
  local_heap_unlock(h);
}

/* ---- abandoned pages ---------------------------------------------------------------- */

bool local_heap_any_abandoned(void) { return atomic_load_relaxed(&xabandoned_pages) != 0; }

/* bit cls of xabandoned_classes: the list's first page is adoptable (they
 * come first, the full ones after them). */
static void abandoned_class_update(local_heap_t *h, unsigned cls) {
  const extent_t *first = h->abandoned[cls].first;
  uint64_t bits = atomic_load_relaxed(&h->xabandoned_classes);
  uint64_t bit = (uint64_t)1 << cls;
  bits = first && abandoned_page_adoptable(first) ? bits | bit : bits & ~bit;
  atomic_store_relaxed(&h->xabandoned_classes, bits);
}

void local_heap_abandoned_push_locked(local_heap_t *h, extent_t *page) {
  mm_assert_internal(local_heap_locked(h) && local_heap_of_extent(page) == h);
  mm_assert_internal(page->kind == MM_EXTENT_PAGE && atomic_load_relaxed(&page->xowner) == NULL);
  mm_assert_internal(!page->next && !page->prev);
  unsigned cls = page->size_class;
  h->pages_abandoned++;
  if (abandoned_page_adoptable(page)) {
    extent_list_push_front(&h->abandoned[cls], page);
    atomic_fetch_add_relaxed(&xabandoned_pages, 1);
  } else {
    extent_list_push_back(&h->abandoned[cls], page);
  }
  abandoned_class_update(h, cls);
}

void local_heap_abandoned_remove_locked(local_heap_t *h, extent_t *page) {
  mm_assert_internal(local_heap_locked(h) && atomic_load_relaxed(&page->xowner) == NULL);
  unsigned cls = page->size_class;
  extent_list_remove(&h->abandoned[cls], page);
  abandoned_class_update(h, cls);
  if (abandoned_page_adoptable(page)) atomic_fetch_sub_relaxed(&xabandoned_pages, 1);
}

extent_t *local_heap_abandoned_pop_locked(local_heap_t *h, unsigned cls) {
  extent_t *page = h->abandoned[cls].first;
  if (!page || !abandoned_page_adoptable(page)) return NULL;
  local_heap_abandoned_remove_locked(h, page);
  return page;
}
