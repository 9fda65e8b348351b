/* realloc.c — realloc and malloc_usable_size.
 *
 * Layer: slow paths (the call tree is at the top of thread_heap.h).
 *
 * realloc keeps a block where it is whenever it can: a small block that
 * still fits and is not more than half empty, a large block that shrinks
 * (its tail goes back to the heap) or grows into the free extent behind it,
 * a huge block that grows or shrinks in its mapping (or moves without a
 * copy, by mremap: onto a freed mapping of the huge cache when one has
 * room, large.c).  A large block that must move to grow is placed with room
 * behind it (extent.c), so that its next growth is in place; once it grows
 * to MM_GROW_MAP_MIN it moves to a mapping of its own instead (one copy of
 * at most 1 MiB, after which growing costs no copy), and the datablocks it
 * leaves in its slot go back to the OS at once: a growing buffer leaves
 * nothing resident behind it.  In the checked modes it always moves
 * (memcheck then sees one block die and another start; secure mode's
 * checks then cover the old block), but for huge blocks out of valgrind.
 */
#include <errno.h>
#include <string.h>

#include "thread_heap.h"

#if MM_VALGRIND
#include <valgrind/memcheck.h>
#endif

size_t thread_heap_usable_size(const void *p, const char *call) {
  if (!p) return 0;
  extent_t *e = thread_heap_lookup(p, call);
  if (e->kind == MM_EXTENT_PAGE) {
    if (block_is_free(p)) thread_heap_bad_pointer(call, p, "double free of");
    return e->block_size - mm_vg_rz;
  }
  return extent_usable(e);
}

void *thread_heap_realloc(void *p, size_t size) {
  if (!p) return thread_heap_malloc_fast(size);
  extent_t *e = thread_heap_lookup(p, "realloc");
  size_t old;
  if (e->kind == MM_EXTENT_PAGE) {
    if (block_is_free(p)) thread_heap_bad_pointer("realloc", p, "double free of");
    old = e->block_size - mm_vg_rz;
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
    /* Secure mode and zero on free (not valgrind): a huge block is resized
     * by its mapping as in the default mode, without a copy, and a block
     * growing past MM_SMALL_MAX moves where the default mode would put it
     * (at MM_GROW_MAP_MIN, a mapping of its own, which later growth resizes
     * so).  Big blocks' bytes are neither filled nor checked in any mode,
     * so a copy would check nothing more, and the guard after the block
     * goes with its end (region.c: huge_mapping_size). */
    bool big = !mm_vg_rz && size > old && size > MM_SMALL_MAX;
    if (big && e->kind == MM_EXTENT_LARGE && slot_of_extent(e)->huge && size >= MM_GROW_MAP_MIN) {
      extent_t *ne = local_heap_resize_huge(e, size);
      if (ne) return (void *)ne->node.start;
    }
    /* Otherwise always move: a small block's old place is filled and
     * checked when reused (a write through a stale pointer is caught), and
     * memcheck sees one block die and another start.  The copy may read
     * bytes past the size the user asked for (we do not keep it); memcheck
     * is told not to report that. */
    thread_heap_t *th = big ? thread_heap_current() : NULL;
    void *q = th ? thread_heap_alloc_big(th, size, 0, false, true) : thread_heap_malloc_fast(size);
    if (!q) return NULL;
#if MM_VALGRIND
    VALGRIND_DISABLE_ERROR_REPORTING;
#endif
    memcpy(q, p, old < size ? old : size);
#if MM_VALGRIND
    VALGRIND_ENABLE_ERROR_REPORTING;
#endif
    if (big && e->kind == MM_EXTENT_LARGE && !slot_of_extent(e)->huge && size >= MM_GROW_MAP_MIN) {
      local_heap_free_large(e, true); /* as below: what it leaves goes back now */
      local_heap_purger_poke();
      return q;
    }
    thread_heap_free_fast(p, "realloc");
    return q;
  }
  if (e->kind == MM_EXTENT_PAGE) {
    if (size <= old && (size > old / 2 || old <= 64)) return p;
  } else if (slot_of_extent(e)->huge) {
    if (size >= MM_GROW_MAP_MIN) {
      extent_t *ne = local_heap_resize_huge(e, size);
      if (ne) return (void *)ne->node.start;
      if (size <= old) return p;
    }
  } else if (size > MM_SMALL_MAX && size < MM_HUGE_MIN) {
    if (size <= old && size > old / 2) {
      local_heap_resize_large(e, size); /* give the tail datablocks back */
      return p;
    }
    if (size > old && size < MM_GROW_MAP_MIN && local_heap_resize_large(e, size)) return p;
  }
  void *q;
  if (size > old && size > MM_SMALL_MAX) { /* growing: leave it room to grow */
    thread_heap_t *th = thread_heap_current();
    q = th ? thread_heap_alloc_big(th, size, 0, false, true) : NULL;
  } else {
    q = thread_heap_malloc_fast(size);
  }
  if (!q) return NULL;
  memcpy(q, p, old < size ? old : size);
  if (e->kind == MM_EXTENT_LARGE && !slot_of_extent(e)->huge && size >= MM_GROW_MAP_MIN) {
    /* it left its slot for a mapping of its own: what it leaves goes back now */
    local_heap_free_large(e, true);
    local_heap_purger_poke();
    return q;
  }
  thread_heap_free_fast(p, "realloc");
  return q;
}

