/* pool_quarantine.c — where pools and heaps give page blocks back: to the
 * page manager, or in secure mode through the release quarantine, which
 * catches a write into memory after the call that gave it back.
 *
 * Layer: pool (pool.h: pool_give_back and the MM_GAVE_ calls).
 *
 * Locking: quarantine_lock (rank MM_RANK_POOL_LIST, after the pools' list
 * lock at fork) over the held blocks; taken with no pool lock held (pool.c
 * and heap.c give blocks back after releasing their locks); a local heap's
 * lock (above it) for a block going back to the page manager.
 */
#include <string.h>

#include "pool_parts.h"

static mm_mutex_t quarantine_lock = {MM_MUTEX_FREE,
                                     {"pool quarantine", MM_RANK_POOL_LIST, 1, 0}};

/* Without secure mode a block a pool or heap gives back goes to the page
 * manager at once.  In secure mode it is filled with the pattern and held
 * here, oldest first; once the held bytes pass MM_POOL_QUARANTINE_BYTES
 * the oldest (never the newest) are checked, every usable byte still the
 * pattern, and go back; at exit what is still held is checked.  A byte
 * written after the release aborts the process with one line naming the
 * call that gave the block back and the address written.
 *
 * Invariants (quarantine_lock): every held block is a POOL extent flagged
 * MM_EXTENT_QUARANTINED and owned by no pool or heap (its owner word the
 * tag alone, xlimit 0, pool_heap NULL), so that every pool, heap and
 * page-block call refuses a pointer into it; it is on the list once;
 * held_bytes and held_blocks count the list.  A held block still counts as
 * lent (its local heap's lent_bytes): mm_stats_json says how much of that
 * is held ("pool_quarantine"). */

static const char *const gave_back_call[] = {
    [MM_GAVE_POOL_RELEASE] = "mm_pool_release", [MM_GAVE_POOL_DESTROY] = "mm_pool_destroy",
    [MM_GAVE_HEAP_DESTROY] = "mm_heap_destroy", [MM_GAVE_HEAP_FREE] = "mm_heap_free",
    [MM_GAVE_PAGE_BLOCK_FREE] = "mm_page_block_free"};
_Static_assert(sizeof(gave_back_call) / sizeof(gave_back_call[0]) == MM_GAVE_COUNT, "a name each");

static extent_list_t held;
static uint64_t held_bytes, held_blocks;

/* Every usable byte of e still the pattern, or abort naming the call that
 * gave it back and the first byte written. */
static void held_check(const extent_t *e) {
  size_t at = block_fill_changed((const void *)e->node.start, extent_usable(e));
  if (at < extent_usable(e))
    os_fatal("mmalloc: %s(): %p was written after the call gave its memory back (byte %zu of "
             "block %p; secure mode)\n",
             gave_back_call[e->size_class], (const void *)(e->node.start + at), at,
             (const void *)e->node.start);
}

void pool_give_back(extent_t *e, unsigned by) {
  mm_assert_internal(e->kind == MM_EXTENT_POOL && by < MM_GAVE_COUNT);
  if (e->flags & MM_EXTENT_THP) {
    /* its next owner, a page of small blocks perhaps, gets ordinary pages
     * once it is purged (unless every heap page is advised huge) */
    if (option_live(&options.hugepages) != 1)
      os_hugepages((void *)e->node.start, MM_POOL_HUGE_BLOCK, false, false);
    e->flags &= (uint8_t)~MM_EXTENT_THP;
  }
  if (!options.secure) {
    local_heap_unlend(e);
    return;
  }
  atomic_store_relaxed(&e->xowner_tid, MM_OWNER_POOL);
  atomic_store_relaxed(&e->xlimit, 0);
  e->pool_heap = NULL;
  e->block_size = 0;
  e->size_class = (uint8_t)by;
  e->flags |= MM_EXTENT_QUARANTINED;
  e->next = e->prev = NULL;
  block_fill_range((void *)e->node.start, extent_usable(e));
  extent_list_t out = {NULL, NULL};
  mutex_lock(&quarantine_lock);
  extent_list_push_back(&held, e);
  held_bytes += extent_usable(e);
  held_blocks++;
  while (held_bytes > MM_POOL_QUARANTINE_BYTES && held.first != e) {
    extent_t *x = held.first;
    extent_list_remove(&held, x);
    held_bytes -= extent_usable(x);
    held_blocks--;
    extent_list_push_back(&out, x);
  }
  mutex_unlock(&quarantine_lock);
  extent_t *x;
  while ((x = out.first) != NULL) {
    extent_list_remove(&out, x);
    held_check(x);
    x->flags &= (uint8_t)~MM_EXTENT_QUARANTINED;
    local_heap_unlend(x);
  }
}

void pool_quarantine_exit(void) {
  if (!options.secure || !mutex_trylock(&quarantine_lock)) return; /* another thread is in a call */
  for (const extent_t *e = held.first; e; e = e->next) held_check(e);
  mutex_unlock(&quarantine_lock);
}

void pool_quarantine_stats(uint64_t *blocks, uint64_t *bytes) {
  mutex_lock(&quarantine_lock);
  *blocks = held_blocks;
  *bytes = held_bytes;
  mutex_unlock(&quarantine_lock);
}

/* fork: taken after the pools' list lock (pool_fork_prepare), released or
 * reset with it. */
void pool_quarantine_fork_prepare(void) { mutex_lock_ordered(&quarantine_lock); }
void pool_quarantine_fork_parent(void) { mutex_unlock(&quarantine_lock); }
void pool_quarantine_fork_child(void) { mutex_reinit(&quarantine_lock); }
