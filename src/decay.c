/* decay.c — memory that goes back to the OS: the dirty accounting of free
 * extents, the purge schedule, and the purge.
 *
 * Layer: local heap.
 *
 * An extent freed into a heap is dirty (its datablocks may be resident);
 * once it has been idle for the purge delay its datablocks go back to the
 * OS (MADV_DONTNEED) and it reads as zero.  Purges are batched per heap: a
 * heap purges at most once per delay, everything that is due then, and
 * whatever is not due yet waits for the next one.  Any thread's heartbeat
 * purges whatever heap is due (local_heap_purge_due), so memory comes back
 * even if the threads that freed it went idle; once a process has taken
 * (or held free) purge_thread_mib, the purge thread (purger.c) also purges
 * every heap when it is due, calls or none; mm_collect purges all now.
 * A free extent that a newly freed neighbour joins takes the newest part's
 * time (no part is purged before its delay); a neighbour that has been idle
 * for the whole delay by then is purged first, at the merge, instead of
 * being made young again (extent_insert_free): a region that keeps
 * receiving frees (a garbage collector sweeping next to it) would
 * otherwise keep its old free memory resident for ever.
 * Cached page blocks and cached huge mappings follow the same delay.  The
 * dirty counts are upper bounds; what of that memory is resident now the
 * statistics ask the kernel (local_heap_free_resident_locked).
 *
 * Invariants (local_heap.h; local_heap_check.c checks them):
 *   dirty_datablocks == the sum of `dirty` over FREE and cached page blocks;
 *   anything dirty or cached => xpurge_at != 0.
 */
#include "local_heap_parts.h"

/* ---- dirty accounting and the schedule ------------------------------------------ */

void decay_schedule(local_heap_t *h, uint32_t freed_at) {
  mm_assert_internal(local_heap_locked(h));
  if (atomic_load_relaxed(&h->xpurge_at) == 0) {
    uint32_t due = freed_at + (uint32_t)option_live(&options.purge_delay_ms);
    atomic_store_relaxed(&h->xpurge_at, ((uint64_t)1 << 32) | due);
    if (atomic_load_relaxed(&mm_xpurger_state) == MM_PURGER_RUNNING) purger_wake();
  }
}

/* The datablocks of e below its slot's committed mark: nothing above it was
 * ever made accessible, so nothing there can be resident.  Without this
 * bound a free extent that reaches into the never-used end of its slot
 * would count that end as dirty once a carve or a merge had moved its
 * dirty part (the count cannot say where in the extent it is). */
static size_t committed_part(const extent_t *e) {
  const slot_t *slot = slot_of_extent(e);
  uintptr_t committed = (uintptr_t)slot + slot->committed, end = extent_end(e);
  if (likely(end <= committed) || slot->holes) return e->node.ndatablocks;
  if (e->node.start >= committed) return 0;
  return (committed - e->node.start) >> MM_DATABLOCK_SHIFT;
}

void decay_dirty_add(local_heap_t *h, extent_t *e, uint32_t now) {
  mm_assert_internal(local_heap_locked(h) && !e->next && !e->prev);
  e->flags &= MM_EXTENT_GUARD;
  e->freed_at = now;
  e->dirty = (uint32_t)committed_part(e);
  h->dirty_datablocks += e->dirty;
  held_changed(h);
  decay_schedule(h, now);
}

void decay_set_dirty(local_heap_t *h, extent_t *e, size_t dirty) {
  mm_assert_internal(local_heap_locked(h) && dirty <= e->node.ndatablocks);
  if (dirty) {
    size_t most = committed_part(e);
    if (dirty > most) dirty = most;
  }
  mm_assert_internal(h->dirty_datablocks >= e->dirty);
  h->dirty_datablocks = h->dirty_datablocks - e->dirty + dirty;
  e->dirty = (uint32_t)dirty;
  held_changed(h);
}

void decay_gave_back(local_heap_t *h, extent_t *e) {
  h->returned_bytes += (uint64_t)e->dirty << MM_DATABLOCK_SHIFT;
  decay_set_dirty(h, e, 0);
}

/* ---- what of it is resident --------------------------------------------------------- */

static bool resident_visit(itree_node_t *node, void *arg) {
  extent_t *e = extent_of_node(node);
  if (e->dirty && !(e->flags & MM_EXTENT_UNMAPPED))
    *(uint64_t *)arg +=
        os_resident_bytes((void *)e->node.start, e->node.ndatablocks << MM_DATABLOCK_SHIFT);
  return true;
}

uint64_t local_heap_free_resident_locked(local_heap_t *h) {
  mm_assert_internal(local_heap_locked(h));
  uint64_t bytes = 0;
  for (extent_t *c = h->cache.first; c; c = c->next)
    bytes += os_resident_bytes((void *)c->node.start, c->node.ndatablocks << MM_DATABLOCK_SHIFT);
  for (extent_t *c = h->medium_cache.first; c; c = c->next)
    bytes += os_resident_bytes((void *)c->node.start, c->node.ndatablocks << MM_DATABLOCK_SHIFT);
  for (int t = 0; t < MM_TREES; t++) interval_tree_foreach(&h->trees[t], resident_visit, &bytes);
  return bytes;
}

/* ---- purging -------------------------------------------------------------------- */

typedef struct purge_walk_s {
  local_heap_t *h;
  uint32_t now, delay;
  bool force;
  bool dirty_left; /* some dirty memory is not yet idle long enough */
} purge_walk_t;

bool decay_purge_extent(local_heap_t *h, extent_t *e) {
  mm_assert_internal(local_heap_locked(h) && e->kind == MM_EXTENT_FREE);
  slot_t *slot = slot_of_extent(e);
  uintptr_t end = extent_end(e);
  uintptr_t committed = (uintptr_t)slot + slot->committed;
  if (end > committed && !slot->holes) end = committed;
  if (end > e->node.start && !os_purge((void *)e->node.start, end - e->node.start))
    return false;
  h->purged_bytes += end > e->node.start ? end - e->node.start : 0;
  decay_gave_back(h, e);
  e->flags = MM_EXTENT_ZERO;
  return true;
}

bool decay_due(const extent_t *e, uint32_t now) {
  return e->dirty && !(e->flags & MM_EXTENT_UNMAPPED) &&
         time_reached(now, e->freed_at + (uint32_t)option_live(&options.purge_delay_ms));
}

static bool purge_visit(itree_node_t *node, void *arg) {
  purge_walk_t *w = arg;
  extent_t *e = extent_of_node(node);
  if (!e->dirty) return true;
  if (!w->force && !time_reached(w->now, e->freed_at + w->delay)) {
    w->dirty_left = true;
    return true;
  }
  if (!decay_purge_extent(w->h, e)) w->dirty_left = true; /* the OS refused: try again next time */
  return true;
}

/* Every extent of a cache list (oldest last) idle for the delay, or all
 * when forced, goes by `evict`; the others are left for the next purge. */
static void purge_cache(purge_walk_t *w, extent_list_t *list,
                        void (*evict)(local_heap_t *h, extent_t *c)) {
  for (extent_t *c = list->last; c;) {
    extent_t *prev = c->prev;
    if (w->force || time_reached(w->now, c->freed_at + w->delay)) evict(w->h, c);
    else w->dirty_left = true;
    c = prev;
  }
}

/* Give back to the OS the free memory of h that has been idle for the purge
 * delay (all of it when force).  Lock held.  Purges are batched: what is not
 * yet idle long enough waits for the next purge, one delay from now, so a
 * heap purges at most once per delay however many extents it frees. */
void local_heap_purge(local_heap_t *h, bool force) {
  mm_assert_internal(local_heap_locked(h));
  purge_walk_t w = {h, os_now_ms(), (uint32_t)option_live(&options.purge_delay_ms), force, false};
  /* Cached page blocks and medium blocks idle that long go back to the
   * tree first; cached huge mappings are unmapped. */
  purge_cache(&w, &h->cache, page_cache_evict);
  purge_cache(&w, &h->medium_cache, medium_cache_evict);
  purge_cache(&w, &h->huge_cache, huge_cache_drop);
  for (int t = 0; t < MM_TREES; t++) interval_tree_foreach(&h->trees[t], purge_visit, &w);
  h->purges++;
  atomic_store_relaxed(&h->xpurge_at,
                       w.dirty_left ? ((uint64_t)1 << 32) | (w.now + w.delay) : 0);
}

/* The free extents of MM_GROWTH_PURGE_MIN datablocks or more that hold
 * that much dirty memory, from the highest address down (first fit reuses
 * the lowest first), each tree in turn, until as much as the block took
 * is given back.  A heap with less dirty memory in all has nothing to look
 * for; the tree's maxima keep the search to the big extents. */
void decay_give_back_for_growth(local_heap_t *h, size_t fresh) {
  mm_assert_internal(local_heap_locked(h));
  if (fresh < MM_GROWTH_PURGE_MIN || h->dirty_datablocks < MM_GROWTH_PURGE_MIN) return;
  size_t given = 0;
  for (int t = 0; t < MM_TREES && given < fresh; t++) {
    itree_t *tree = &h->trees[t];
    for (itree_node_t *node = interval_tree_prev_fit(tree, UINTPTR_MAX, MM_GROWTH_PURGE_MIN);
         node && given < fresh; node = interval_tree_prev_fit(tree, node->start, MM_GROWTH_PURGE_MIN)) {
      extent_t *e = extent_of_node(node);
      size_t dirty = e->dirty;
      if (dirty < MM_GROWTH_PURGE_MIN || (e->flags & MM_EXTENT_UNMAPPED)) continue;
      if (!decay_purge_extent(h, e)) return; /* the OS refused: the delay's purge tries again */
      given += dirty;
      h->growth_purges++;
    }
  }
}

/* The cgroup's memory usage is near its limit: every heap gives back all
 * its free memory now, due or not (its lock taken in turn; the caller
 * holds no local heap lock). */
void local_heap_purge_pressure(void) {
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    local_heap_t *h = &mm_heaps[i];
    local_heap_lock(h);
    if (h->dirty_datablocks || h->cache_count || h->medium_cache_count || h->huge_cache_count) {
      local_heap_purge(h, true);
      h->pressure_purges++;
    }
    local_heap_check(h);
    local_heap_unlock(h);
  }
}

uint32_t local_heap_purge_due(uint32_t now, bool wait, uint64_t *purged) {
  if (unlikely(cgroup_memory_near_limit(now))) local_heap_purge_pressure();
  uint32_t next = 0;
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    local_heap_t *h = &mm_heaps[i];
    uint64_t due = atomic_load_relaxed(&h->xpurge_at);
    if (due && time_reached(now, (uint32_t)due)) {
      if (wait) local_heap_lock(h);
      else if (!local_heap_trylock(h)) continue;
      local_heap_purge(h, false);
      local_heap_check(h);
      local_heap_unlock(h);
      if (purged) (*purged)++;
      due = atomic_load_relaxed(&h->xpurge_at);
    }
    if (!due) continue;
    uint32_t left = time_reached(now, (uint32_t)due) ? 1 : (uint32_t)due - now;
    if (next == 0 || left < next) next = left;
  }
  return next;
}

/* mm_collect: every heap gives back all its free memory now. */
void local_heap_collect_all(void) {
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    local_heap_t *h = &mm_heaps[i];
    local_heap_lock(h);
    local_heap_purge(h, true);
    slots_release_empty(h, 1);
    local_heap_check(h);
    local_heap_unlock(h);
  }
}
