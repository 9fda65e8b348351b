/* local_heap_parts.h — what the local heap's files share with each other.
 *
 * Layer: local heap, private: only the layer's own .c files include it
 * (the include-graph test checks that too).  Every function here expects
 * its heap's lock held; each asserts it (mm_assert_internal, backed by the
 * lock witness).
 */
#ifndef MM_LOCAL_HEAP_PARTS_H
#define MM_LOCAL_HEAP_PARTS_H

#include "cgroup.h"
#include "local_heap.h"
#include "options.h"

MM_HIDDEN_BEGIN

#define extent_of_node(n) ((extent_t *)((char *)(n) - offsetof(extent_t, node)))

/* The tree that holds the free extents of e's slot. */
MM_INLINE itree_t *tree_of(local_heap_t *h, const extent_t *e) {
  return &h->trees[slot_of_extent(e)->tree];
}

/* MM_DEBUG 3: the whole heap is checked on entry and exit of its mutators. */
#define local_heap_check(h) MM_CHECK(3, "local heap", local_heap_is_valid((h), MM_WHY))

/* ---- extent.c ------------------------------------------------------------------- */

/* Make e (out of any list, not in the tree) a FREE extent of h, merged with
 * free neighbours; returns the extent that now holds e's datablocks. */
extent_t *extent_insert_free(local_heap_t *h, extent_t *e);
/* An extent of n datablocks aligned to align_datablocks, carved from h's
 * free space in tree t (MM_TREE_MAIN or MM_TREE_MEDIUM: its slots) and
 * committed; NULL with errno ENOMEM.  *fresh (if fresh is not NULL): how
 * many of its datablocks were certainly not resident (fresh memory the
 * block will fault in): n less the free extent's dirty count. */
extent_t *extent_alloc(local_heap_t *h, int t, size_t n, size_t align_datablocks, size_t *fresh);
/* Make [end, end + more datablocks) of the free extent r usable by a block
 * growing into it. */
bool extent_grow_commit(slot_t *slot, extent_t *r, uintptr_t end, size_t more);
/* Secure mode's guard datablock at the end of a page block or large block
 * (true at once outside secure mode). */
bool extent_guard_secure(extent_t *e);
MM_INLINE bool extent_guard(extent_t *e) { return !options.secure || extent_guard_secure(e); }
/* Datablocks for a block that needs n of them (one more for the guard). */
MM_INLINE size_t guarded_datablocks(size_t n) { return n + (options.secure ? 1 : 0); }
/* Unmap every empty slot of h but `keep` of each kind; how many went. */
size_t slots_release_empty(local_heap_t *h, uint32_t keep);
/* The OS refused address space or commit charge: every heap gives back
 * what it can (self: the heap whose lock the caller holds, or NULL).
 * Bytes given back. */
size_t pressure_relieve(local_heap_t *self);

/* ---- decay.c -------------------------------------------------------------------- */

/* e (freed, on no list) counts as dirty all over its committed part, from now. */
void decay_dirty_add(local_heap_t *h, extent_t *e, uint32_t now);
/* Set a free extent's dirty count, keeping the heap's sum. */
void decay_set_dirty(local_heap_t *h, extent_t *e, size_t dirty);
/* e's datablocks went back to the OS (purged or unmapped): its dirty count
 * is added to returned_bytes, and is zero from now. */
void decay_gave_back(local_heap_t *h, extent_t *e);
/* FREE extent e's memory back to the OS now (MADV_DONTNEED up to its slot's
 * committed mark); false if the OS refused. */
bool decay_purge_extent(local_heap_t *h, extent_t *e);
/* e (FREE) holds dirty memory idle for the whole purge delay at now. */
bool decay_due(const extent_t *e, uint32_t now);
/* Something was freed at freed_at: make sure a purge is scheduled. */
void decay_schedule(local_heap_t *h, uint32_t freed_at);
/* A big block of h just took `fresh` datablocks of memory that was not
 * resident: if that is MM_GROWTH_PURGE_MIN or more, give back as much of
 * h's free resident memory now (or all it has in free extents of that many
 * datablocks or more), instead of after the purge delay.  Lock held. */
void decay_give_back_for_growth(local_heap_t *h, size_t fresh);

/* ---- purger.c ------------------------------------------------------------------- */
/* The heaps took `bytes` more from the OS (slot memory committed, a huge
 * block mapped or grown): the purger is wanted once they total
 * purge_thread_mib.  Any thread, any locks. */
void purger_grew(size_t bytes);
/* h's held memory crossed a MiB boundary (held_changed). */
void purger_held_moved(local_heap_t *h, size_t mib);
/* After any change of h->dirty_datablocks or h->huge_cached_datablocks:
 * keeps xheld_mib; a shift and a compare unless a MiB boundary is crossed. */
MM_INLINE void held_changed(local_heap_t *h) {
  size_t mib = (h->dirty_datablocks + h->huge_cached_datablocks) >> (20 - MM_DATABLOCK_SHIFT);
  if (unlikely(mib != atomic_load_relaxed(&h->xheld_mib))) purger_held_moved(h, mib);
}
/* A heap's xpurge_at went from 0 to a deadline: wake a purger that sleeps
 * without one. */
void purger_wake(void);
void purger_fork_child(void);

/* ---- page_market.c ---------------------------------------------------------------- */

/* A cached page block goes back to the tree. */
void page_cache_evict(local_heap_t *h, extent_t *c);

/* ---- large.c ---------------------------------------------------------------------- */

/* A cached medium block goes back to the tree. */
void medium_cache_evict(local_heap_t *h, extent_t *c);
/* Unmap a cached huge mapping / all of them; bytes given back. */
void huge_cache_drop(local_heap_t *h, extent_t *c);
size_t huge_cache_drop_all(local_heap_t *h);

MM_HIDDEN_END

#endif
