/* free.c — the free slow path, pointer validation with its one-line
 * messages, and the valgrind quarantine.
 *
 * Layer: slow paths (the call tree is at the top of thread_heap.h).
 *
 * Every pointer that reaches free, realloc or malloc_usable_size is checked
 * completely here before anything is changed: is it mmalloc's, at the start
 * of a block, not already free.  Anything else aborts with one line naming
 * the call and the pointer: "mmalloc: free(): invalid pointer (...) 0x...".
 */
#include "pool.h"
#include "remote.h"

#if MM_VALGRIND
#include <valgrind/memcheck.h>
#endif

/* ---- pointer validation ---------------------------------------------------------------- */

MM_COLD MM_NORETURN void thread_heap_bad_pointer(const char *call, const void *p,
                                                 const char *what) {
  os_fatal("mmalloc: %s(): %s %p\n", call, what, p);
}

/* The PAGE or LARGE extent that handed out p, or abort with one line naming
 * the call and the pointer. */
extent_t *thread_heap_lookup(const void *p, const char *call) {
  uintptr_t a = (uintptr_t)p;
  unsigned te = slot_table_entry(a);
  if (te == MM_SLOT_NONE)
    thread_heap_bad_pointer(call, p, "invalid pointer (not allocated by mmalloc, or already freed)");
  if (te == MM_SLOT_HUGE_TAIL) thread_heap_bad_pointer(call, p, "invalid pointer (inside a block)");
  if (te == MM_SLOT_HUGE_AT) {
    extent_t *h = region_huge_at(a);
    if (!h) thread_heap_bad_pointer(call, p, "invalid pointer (inside a block)");
    if (h->kind != MM_EXTENT_LARGE)
      thread_heap_bad_pointer(call, p, "invalid pointer (freed memory: double free?)");
    return h;
  }
  slot_t *slot = slot_of_address(a);
  extent_t *e = region_extent_at(slot, a & ~(uintptr_t)(MM_DATABLOCK_SIZE - 1));
  if (!e) {
    thread_heap_bad_pointer(call, p, te == MM_SLOT_HUGE ? "invalid pointer (inside a block)"
                                         : "invalid pointer (not allocated by mmalloc)");
  }
  switch (e->kind) {
  case MM_EXTENT_LARGE:
    if (a != large_block(e)) thread_heap_bad_pointer(call, p, "invalid pointer (inside a block)");
    /* in a thread's stash (never in the checked modes, where the block's
     * first bytes may be ones memcheck says were never written) */
    if (!mm_slow_only && slot->tree == MM_TREE_MEDIUM && thread_heap_stashed(e))
      thread_heap_bad_pointer(call, p, "double free of");
    return e;
  case MM_EXTENT_PAGE: {
    uint64_t off = a - e->page_start;
    if (!page_offset_at_block(e, off))
      thread_heap_bad_pointer(call, p, "invalid pointer (inside a block)");
    if (!page_offset_is_block(e, off)) /* at a boundary, so: not carved */
      thread_heap_bad_pointer(call, p, "invalid pointer (never allocated)");
    return e;
  }
  case MM_EXTENT_POOL: {
    struct mm_pool_s *pool = pool_of_block(e);
    if (e->flags & MM_EXTENT_QUARANTINED)
      thread_heap_bad_pointer(call, p, "invalid pointer (in memory a pool or heap gave back)");
    if (!pool) thread_heap_bad_pointer(call, p, "invalid pointer (in a page block: use mm_page_block_free)");
    const char *heap = pool_block_heap_name(e);
    if (heap)
      os_fatal("mmalloc: %s(): invalid pointer (an object of heap \"%s\": use mm_heap_free) %p\n",
               call, heap, p);
    os_fatal("mmalloc: %s(): invalid pointer (an object of pool \"%s\": use mm_pool_free) %p\n",
             call, pool_name(pool), p);
  }
  case MM_EXTENT_FREE:
  case MM_EXTENT_CACHED:
    if (e->kind == MM_EXTENT_FREE && a == e->node.start)
      thread_heap_bad_pointer(call, p, "double free of");
    thread_heap_bad_pointer(call, p, "invalid pointer (freed memory: double free?)");
  default:
    thread_heap_bad_pointer(call, p, "invalid pointer (not allocated by mmalloc)");
  }
}

/* ---- the quarantine (valgrind) ------------------------------------------------------------ */

/* Owner, holding its lock: the oldest quarantined blocks are freed for real
 * until at most `keep` bytes stay. */
void thread_heap_quarantine_drain(thread_heap_t *th, size_t keep) {
  mm_assert_internal(thread_heap_locked(th));
  while (th->quarantine_bytes > keep) {
    block_t *b = th->quarantine_first;
    extent_t *page = page_of_block(b);
    th->quarantine_first = block_next(b);
    if (!th->quarantine_first) th->quarantine_last = NULL;
    th->quarantine_bytes -= page->block_size;
    remote_free_block(th, page, b);
  }
}

static void quarantine_push(thread_heap_t *th, extent_t *page, block_t *b) {
  block_set_next(b, NULL);
  if (th->quarantine_last) block_set_next(th->quarantine_last, b);
  else th->quarantine_first = b;
  th->quarantine_last = b;
  th->quarantine_bytes += page->block_size;
  thread_heap_quarantine_drain(th, MM_VG_QUARANTINE_BYTES);
}

/* ---- free ------------------------------------------------------------------------------------ */

/* Every free the fast path and thread_heap_free_other do not finish: NULL,
 * large and huge blocks, bad pointers, the checked modes, this thread's
 * full pages, abandoned pages, a thread without a heap. */
MM_SLOW_PATH void thread_heap_free_slow(void *p, const char *call) {
  if (!p) return;
  extent_t *e = thread_heap_lookup(p, call);
  if (e->kind == MM_EXTENT_LARGE) {
#if MM_VALGRIND
    VALGRIND_FREELIKE_BLOCK(p, 0);
#endif
    if (slot_of_extent(e)->huge) local_heap_free_huge(e);
    else local_heap_free_large(e, false);
    return;
  }
  block_t *b = p;
  if (block_is_free(b)) thread_heap_bad_pointer(call, p, "double free of");
  if (unlikely(mm_slow_only)) block_on_free(e, b);
  else b->canary = block_canary_of(b);
  thread_heap_t *th = thread_heap_current();
  if (unlikely(!th)) {
    /* No heap for this thread (out of memory): hand the block straight to
     * its owner's inbox. */
    thread_heap_t *owner = page_owner(e);
    if (owner) {
      remote_send_one(owner, b);
      return;
    }
    os_fatal("mmalloc: %s(): out of memory freeing %p\n", call, p);
  }
  thread_heap_free_block(th, e, b);
}

/* b, a checked block of page already marked free (its canary), freed by
 * th holding no lock: into its page if th owns it (a full one goes back
 * in its queue), else into its owner's batch (remote_free_block). */
MM_SLOW_PATH void thread_heap_free_block(thread_heap_t *th, extent_t *page, block_t *b) {
  thread_heap_lock(th);
  if (unlikely(mm_vg_rz)) quarantine_push(th, page, b);
  else remote_free_block(th, page, b);
  if (++th->slow_calls % MM_HEARTBEAT_CALLS == 0) thread_heap_beat(th);
  thread_heap_check_all(th);
  thread_heap_unlock(th);
}
