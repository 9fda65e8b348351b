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
 * checks then cover the old block), but for a growing huge block out of
 * valgrind.
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
  return large_usable(e);
}

void *thread_heap_realloc(void *p, size_t size) {
  if (!p) return thread_heap_malloc_fast(size);
  /* a block of a page, checked, found without the descriptor's second line */
  extent_t *e = thread_heap_page_of_block(p);
  bool page = e != NULL;
  size_t old;
  if (likely(page)) {
    old = e->block_size - mm_vg_rz;
  } else {
    e = thread_heap_lookup(p, "realloc");
    page = e->kind == MM_EXTENT_PAGE;
    if (page) {
      if (block_is_free(p)) thread_heap_bad_pointer("realloc", p, "double free of");
      old = e->block_size - mm_vg_rz;
    } else {
      old = large_usable(e);
    }
  }
  if (size == 0) { /* glibc: realloc(p, 0) frees p and returns NULL */
    thread_heap_free_fast(p, "realloc");
    return NULL;
  }
  if (size > PTRDIFF_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  /* The checked modes move every block but a growing huge one: a small
   * block's old place is then filled and checked when it is reused (a
   * write through the stale pointer is caught), and memcheck sees one block
   * die and another start.  A huge block's bytes are neither filled nor
   * checked in any mode, so secure mode and zero on free grow it by its
   * mapping as the default does: no copy, and the reserved datablock after
   * it, its guard, goes with its end (region.c: huge_mapping_size).  Not a
   * shrink, which leaves the old tail committed where the guard must be. */
  bool in_place = !mm_slow_only;
  if (page) {
    if (in_place && size <= old && (size > old / 2 || old <= 64)) return p;
  } else if (slot_of_extent(e)->huge) {
    if (size >= MM_GROW_MAP_MIN && (in_place || (!mm_vg_rz && size > old))) {
      extent_t *ne = local_heap_resize_huge(e, size);
      if (ne) return (void *)large_block(ne);
      if (size <= old) return p;
    }
  } else if (in_place && size > MM_SMALL_MAX && size < MM_HUGE_MIN) {
    if (size <= old && size > old / 2) {
      local_heap_resize_large(e, size); /* give the tail datablocks back */
      return p;
    }
    if (size > old && size < MM_GROW_MAP_MIN && local_heap_resize_large(e, size)) return p;
  }
  /* Moving.  Under valgrind through malloc (alloc_checked tells memcheck),
   * and the copy may read bytes past the size the user asked for (we do
   * not keep it): memcheck is told not to report that. */
  void *q;
  if (size > old && size > MM_SMALL_MAX && !mm_vg_rz) { /* growing: from 1 MiB on, a mapping */
    thread_heap_t *th = thread_heap_current();
    q = th && th->stash_count ? thread_heap_stash_alloc(th, size, 0, false) : NULL;
    if (!q) q = th ? thread_heap_alloc_big(th, size, 0, false, true) : NULL;
  } else if (size > old && size > MM_DIRECT_MAX && size <= MM_SMALL_MAX) {
    /* growing: a quarter class (size_class_of_growing; without it cover's
     * peak RSS was 1.1x) */
    q = thread_heap_malloc_fast(mm_size_classes[size_class_of_growing(size)].size);
  } else {
    q = thread_heap_malloc_fast(size);
  }
  if (!q) return NULL;
#if MM_VALGRIND
  VALGRIND_DISABLE_ERROR_REPORTING;
#endif
  memcpy(q, p, old < size ? old : size);
#if MM_VALGRIND
  VALGRIND_ENABLE_ERROR_REPORTING;
#endif
  if (!page && !mm_vg_rz && e->kind == MM_EXTENT_LARGE && !slot_of_extent(e)->huge &&
      size >= MM_GROW_MAP_MIN) {
    /* it left its slot for a mapping of its own: what it leaves goes back
     * now (not its guard, never touched) */
    local_heap_free_large(e, true);
    local_heap_purger_poke();
    return q;
  }
  if (!page && !mm_slow_only && e->kind == MM_EXTENT_LARGE && !slot_of_extent(e)->huge) {
    /* straight home, not into this thread's stash (thread_heap.c): the
     * old size of a block that moves is seldom asked for again soon, and
     * first fit must see its memory (a growing array's next move) */
    local_heap_free_large(e, false);
    return q;
  }
  thread_heap_free_fast(p, "realloc");
  return q;
}

