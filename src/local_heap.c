/* local_heap.c — the C local heaps themselves: the array of them, start-up,
 * metadata memory, and fork.
 *
 * Layer: local heap (local_heap.h lists the layer's other files).
 *
 * Locking: each local heap has one mutex (rank MM_RANK_LOCAL_HEAP, lock.h),
 * taken when a thread heap needs or returns a page, for large blocks, and
 * to purge.  A thread holding one local heap's lock takes another's only by
 * try-lock (borrowing a cached page block, relieving address-space
 * pressure), so no thread ever waits for a second local heap; purging from
 * a heartbeat try-locks too.  Fork takes them all, in index order.
 */
#include <string.h>

#include "local_heap_parts.h"

local_heap_t mm_heaps[MM_MAX_HEAPS];
uint32_t mm_nheaps;

void local_heap_init_all(uint32_t n) {
  if (n < 1) n = 1;
  if (n > MM_MAX_HEAPS) n = MM_MAX_HEAPS;
  for (uint32_t i = 0; i < n; i++) {
    local_heap_t *h = &mm_heaps[i];
    mutex_init(&h->lock, "local heap", MM_RANK_LOCAL_HEAP, i);
    h->index = i;
    for (int t = 0; t < MM_TREES; t++) interval_tree_init(&h->trees[t]);
  }
  mm_nheaps = n;
}

/* A bump allocator over 64 KiB mappings of the heap's own: the thread heap
 * structures (thread_heap.c), which live as long as the process (another
 * thread may still push a block into a dead heap's inbox). */
void *local_heap_meta_alloc(local_heap_t *h, size_t size) {
  size = (size + MM_CACHE_LINE - 1) & ~(size_t)(MM_CACHE_LINE - 1);
  const size_t chunk = (size_t)64 << 10;
  mm_assert(size <= chunk);
  local_heap_lock(h);
  if (h->meta_left < size) {
    void *m = os_reserve(chunk, MM_DATABLOCK_SIZE);
    if (m && !os_commit(m, chunk)) {
      os_release(m, chunk);
      m = NULL;
    }
    if (!m) {
      local_heap_unlock(h);
      return NULL;
    }
    h->meta_next = m;
    h->meta_left = chunk;
    h->meta_bytes += chunk;
  }
  void *p = h->meta_next;
  h->meta_next += size;
  h->meta_left -= size;
  local_heap_unlock(h);
  return p; /* fresh mappings read as zero */
}

void local_heap_foreach_page_locked(local_heap_t *h, void (*visit)(extent_t *page, void *arg),
                                    void *arg) {
  mm_assert_internal(local_heap_locked(h));
  for (slot_t *slot = h->slots; slot; slot = slot->next)
    for (extent_t *e = region_slot_first(slot); e; e = region_slot_next(slot, e))
      if (e->kind == MM_EXTENT_PAGE) visit(e, arg);
}

/* ---- fork --------------------------------------------------------------------------
 * The thread heap layer (lifecycle.c) calls these after it has taken its
 * own locks, which rank lower. */

void local_heap_fork_prepare(void) {
  for (uint32_t i = 0; i < mm_nheaps; i++) mutex_lock_ordered(&mm_heaps[i].lock);
}

void local_heap_fork_parent(void) {
  for (uint32_t i = mm_nheaps; i-- > 0;) local_heap_unlock(&mm_heaps[i]);
}

void local_heap_fork_child(void) {
  for (uint32_t i = mm_nheaps; i-- > 0;) mutex_reinit(&mm_heaps[i].lock);
  purger_fork_child();
}
