/* local_heap_check.c — the local heap checker: every invariant local_heap.h
 * states, and the region checker on each of the heap's slots.
 *
 * Layer: local heap.  Runs under the heap's lock (MM_DEBUG 3: on entry and
 * exit of the heap's mutators, from the heartbeat's purge, mm_collect and
 * fork; the unit tests call it directly).  O(extents + datablocks of pages).
 *
 * "Each extent on exactly one list": every list the heap keeps is walked
 * with a fresh pass number stamped into extent.mark, so an extent met twice
 * is on two lists (or a list has a cycle); then every extent of every slot
 * is visited through the region's tiling and must carry the stamp of the
 * list its kind says it is on: FREE its slot's tree, CACHED the page cache
 * (main slots) or the medium cache (medium slots), a PAGE
 * without owner its class's abandoned list.  A PAGE with an owner is on its
 * thread heap's lists, which that thread checks (thread_heap.c); LARGE
 * extents are on none.  Marks of owned pages are neither read nor written
 * here (their owner's checker may be writing them).
 */
#include "local_heap_parts.h"

typedef struct check_s {
  local_heap_t *h;
  uint32_t pass;
  size_t dirty; /* dirty datablocks summed over the trees and the cache */
  int tree;     /* the tree being walked */
  char *why;
  size_t why_size;
  bool ok;
} check_t;

static bool bad(check_t *c, const char *what, uintptr_t at) {
  os_format(c->why, c->why_size, "heap %u: %s (extent %p)", c->h->index, what, (void *)at);
  c->ok = false;
  return false;
}

/* e is met on one of the heap's lists: stamp it, or fail if it was met. */
static bool stamp(check_t *c, extent_t *e) {
  if (e->mark == c->pass) return bad(c, "extent on two lists (or a list with a cycle)", e->node.start);
  e->mark = c->pass;
  return true;
}

static bool tree_visit(itree_node_t *node, void *arg) {
  check_t *c = arg;
  extent_t *e = extent_of_node(node);
  slot_t *slot = slot_of_extent(e);
  if (e->kind != MM_EXTENT_FREE || slot->heap != c->h->index || slot->huge ||
      e->node.start < slot_data_start(slot) || extent_end(e) > (uintptr_t)slot + slot->size ||
      region_extent_at(slot, e->node.start) != e ||
      region_extent_at(slot, extent_end(e) - MM_DATABLOCK_SIZE) != e)
    return bad(c, "tree node is not a mapped free extent of its slots", e->node.start);
  if ((int)slot->tree != c->tree)
    return bad(c, "free extent in the other tree than its slot's", e->node.start);
  if (e->dirty > e->node.ndatablocks) return bad(c, "more dirty datablocks than it has", e->node.start);
  c->dirty += e->dirty;
  return stamp(c, e);
}

/* The page cache or the medium cache: each extent CACHED, of this heap, in
 * a (not huge) slot of `tree`, no dirtier than its size, stamped, its dirt
 * added to the sum; *n their number. */
static bool cached_list_is_valid(check_t *c, const extent_list_t *list, int tree,
                                 const char *not_ours, uint32_t *n) {
  *n = 0;
  for (extent_t *e = list->first; e; e = e->next) {
    slot_t *slot = slot_of_extent(e);
    if (e->kind != MM_EXTENT_CACHED || local_heap_of_extent(e) != c->h || slot->huge ||
        (int)slot->tree != tree)
      return bad(c, not_ours, e->node.start);
    if (e->dirty > e->node.ndatablocks) return bad(c, "cached block over-dirty", e->node.start);
    c->dirty += e->dirty;
    if (!stamp(c, e)) return false;
    (*n)++;
  }
  return true;
}

static bool cache_is_valid(check_t *c) {
  local_heap_t *h = c->h;
  uint32_t n;
  if (!cached_list_is_valid(c, &h->cache, MM_TREE_MAIN,
                            "page cache holds an extent that is not a cached page block of it", &n))
    return false;
  if (n != h->cache_count || atomic_load_relaxed(&h->xcached) != n)
    return bad(c, "cache_count or xcached disagrees with the page cache", 0);
  if (!cached_list_is_valid(c, &h->medium_cache, MM_TREE_MEDIUM,
                            "medium cache holds an extent that is not a cached medium block of it",
                            &n))
    return false;
  if (n != h->medium_cache_count || n > MM_MEDIUM_CACHE_MAX)
    return bad(c, "medium_cache_count disagrees with the medium cache, or is over its bound", 0);
  n = 0;
  size_t huge_datablocks = 0;
  for (extent_t *e = h->huge_cache.first; e; e = e->next) {
    huge_datablocks += region_huge_committed(e) >> MM_DATABLOCK_SHIFT;
    if (e->kind != MM_EXTENT_CACHED || slot_of_extent(e)->heap != h->index ||
        !region_huge_is_valid(e, c->why, c->why_size)) {
      if (c->ok) bad(c, "huge cache holds an extent that is not a cached huge mapping of it",
                     e->node.start);
      return c->ok = false;
    }
    if (!stamp(c, e)) return false;
    n++;
  }
  if (n != h->huge_cache_count || atomic_load_relaxed(&h->xhuge_cached) != n)
    return bad(c, "huge_cache_count or xhuge_cached disagrees with the huge cache", 0);
  if (huge_datablocks != h->huge_cached_datablocks)
    return bad(c, "huge_cached_datablocks disagrees with the huge cache", 0);
  return true;
}

static bool abandoned_is_valid(check_t *c) {
  local_heap_t *h = c->h;
  uint64_t classes = atomic_load_relaxed(&h->xabandoned_classes);
  for (unsigned cls = 0; cls < MM_CLASSES; cls++) {
    const extent_t *first = h->abandoned[cls].first;
    if (!(classes >> cls & 1) != !(first && abandoned_page_adoptable(first)))
      return bad(c, "an abandoned-class bit disagrees with its list", 0);
    bool full_seen = false;
    for (extent_t *p = h->abandoned[cls].first; p; p = p->next) {
      if (!abandoned_page_adoptable(p)) full_seen = true;
      else if (full_seen)
        return bad(c, "an abandoned page with blocks to hand out after a full one", p->node.start);
      if (p->kind != MM_EXTENT_PAGE || p->size_class != cls || local_heap_of_extent(p) != h ||
          atomic_load_relaxed(&p->xowner) != NULL)
        return bad(c, "abandoned list holds a page that is not an abandoned page of its class",
                   p->node.start);
      if (!stamp(c, p)) return false;
    }
  }
  return true;
}

/* Every extent of the slot is on the list its kind says (see the top). */
static bool slot_lists_are_valid(check_t *c, slot_t *slot) {
  /* the tiling was checked just before (region_slot_is_valid) */
  for (extent_t *e = region_slot_first(slot); e; e = region_slot_next(slot, e)) {
    bool listed = e->kind == MM_EXTENT_FREE || e->kind == MM_EXTENT_CACHED ||
                  (e->kind == MM_EXTENT_PAGE && atomic_load_relaxed(&e->xowner) == NULL);
    if (listed && e->mark != c->pass)
      return bad(c, "extent on none of the lists its kind and owner call for", e->node.start);
    if (e->kind != MM_EXTENT_PAGE && atomic_load_relaxed(&e->xowner) != NULL)
      return bad(c, "an extent that is not a page names an owning thread heap", e->node.start);
    if (slot->tree == MM_TREE_MEDIUM && e->kind == MM_EXTENT_PAGE)
      return bad(c, "a page block in a medium slot", e->node.start);
  }
  return true;
}

bool local_heap_is_valid(local_heap_t *h, char *why, size_t why_size) {
  mm_assert_internal(local_heap_locked(h));
  check_t c = {h, region_check_pass(), 0, 0, why, why_size, true};
  for (int t = 0; t < MM_TREES; t++) {
    if (!interval_tree_is_valid(&h->trees[t], true, why, why_size)) return false;
    c.tree = t;
    interval_tree_foreach(&h->trees[t], tree_visit, &c);
  }
  if (!c.ok || !cache_is_valid(&c) || !abandoned_is_valid(&c)) return false;
  if (c.dirty != h->dirty_datablocks) {
    os_format(why, why_size, "heap %u: dirty_datablocks %zu but %zu dirty", h->index,
              h->dirty_datablocks, c.dirty);
    return false;
  }
  size_t mib = (h->dirty_datablocks + h->huge_cached_datablocks) >> (20 - MM_DATABLOCK_SHIFT);
  if (atomic_load_relaxed(&h->xheld_mib) != mib)
    return bad(&c, "xheld_mib disagrees with the dirty and huge-cached memory", 0);
  if ((h->dirty_datablocks || h->cache_count || h->medium_cache_count || h->huge_cache_count) &&
      atomic_load_relaxed(&h->xpurge_at) == 0)
    return bad(&c, "memory waits for the purge but none is scheduled (xpurge_at == 0)", 0);
  uint32_t nslots = 0;
  for (slot_t *slot = h->slots; slot; slot = slot->next) {
    if (++nslots > h->nslots || slot->heap != h->index)
      return bad(&c, "slot list longer than nslots, or a foreign slot", (uintptr_t)slot);
    if (!region_slot_is_valid(slot, why, why_size) || !slot_lists_are_valid(&c, slot))
      return false;
  }
  if (nslots != h->nslots) return bad(&c, "slot list shorter than nslots", 0);
  return true;
}
