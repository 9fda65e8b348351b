/* alloc.c — the malloc slow paths: medium sizes, a class whose current page
 * ran out, large and huge blocks, aligned and zeroed allocation, and the
 * checked modes.
 *
 * Layer: slow paths (the call tree is at the top of thread_heap.h).
 *
 * Locking: everything that changes the thread heap's lists runs under its
 * lock (alloc_class, under alloc_any); large and huge blocks are allocated
 * after it is released, so that they wait for local heap locks only (and
 * under address-space pressure for every local heap in turn).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "remote.h"

#if MM_VALGRIND
#include <valgrind/memcheck.h>
#endif

/* A block of class c from th's pages (th's lock held): the first page of
 * the queue that can be refilled (local frees, then fresh blocks), pages
 * with nothing left going to the full list on the way; else a new page. */
static void *alloc_class(thread_heap_t *th, unsigned c) {
  mm_assert_internal(thread_heap_locked(th) && c < MM_CLASSES);
  extent_list_t *q = &th->queue[c];
  extent_t *head = q->first;
  extent_t *page = head;
  while (page) {
    extent_t *next = page->next;
    if (page_refill(page)) {
      if (unlikely(page->trim_at)) thread_heap_first_page_carved(page);
      if (page != q->first) {
        extent_list_remove(q, page);
        extent_list_push_front(q, page);
      }
      if (page != head) thread_heap_direct_update(th, c); /* direct[] names the head */
      return page_pop(page);
    }
    /* No free block and nothing left to carve: off to the full list. */
    extent_list_remove(q, page);
    extent_list_push_front(&th->full, page);
    page_set_full(page, th->tid, true);
    page = next;
  }
  page = thread_heap_new_page(th, c);
  if (!page) {
    thread_heap_direct_update(th, c);
    errno = ENOMEM;
    return NULL;
  }
  extent_list_push_front(q, page);
  thread_heap_direct_update(th, c);
  page_refill(page);
  return page_pop(page);
}

/* A size above the small classes that a medium block holds (up to
 * MM_MEDIUM_DATABLOCKS: the local heap's medium slots, a thread's stash);
 * the datablocks it takes are large_datablocks (local_heap.h), its size
 * rounded up (colours never pad a medium size: config.h). */
MM_INLINE bool medium_size(size_t size) {
  return size > MM_SMALL_MAX && size <= ((size_t)MM_MEDIUM_DATABLOCKS << MM_DATABLOCK_SHIFT);
}

/* th's stash not empty, a block above the small classes wanted: a medium
 * block of the datablocks size needs from the stash (zeroed if asked), or
 * NULL (a medium size it has none of sent it home first: first fit must
 * see that memory).  For the callers of thread_heap_alloc_big but
 * malloc's, which thread_heap_malloc_stashed serves. */
MM_NOINLINE void *thread_heap_stash_alloc(thread_heap_t *th, size_t size, size_t align, bool zero) {
  if (!medium_size(size)) return NULL;
  void *p = thread_heap_stash_take(th, size, align);
  if (p && zero) memset(p, 0, size);
  return p;
}

/* A block above the small classes (or too aligned for them): a large
 * extent, or a huge mapping.  room: realloc is moving a growing block (from
 * MM_GROW_MAP_MIN on it gets a mapping of its own, to grow by mremap; below
 * it, first fit like any other).  No thread heap lock needed. */
void *thread_heap_alloc_big(thread_heap_t *th, size_t size, size_t align, bool zero, bool room) {
  if (size > PTRDIFF_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  if (size >= MM_HUGE_MIN || align > MM_SLOT_SIZE / 8 || (room && size >= MM_GROW_MAP_MIN))
    return local_heap_alloc_huge(th->local, size, align, zero, room);
  if (size >= MM_GROW_MAP_MIN) { /* resident memory of a freed huge block first */
    void *p = local_heap_alloc_huge_cached(th->local, size, align, zero);
    if (p) return p;
  }
  return local_heap_alloc_large(th->local, size, align, zero);
}

/* Any allocation, once th is known: small classes (aligned ones when
 * align > 16) under th's lock, after the beat; large and huge blocks after
 * it is released. */
static void *alloc_any(thread_heap_t *th, size_t size, size_t align, bool zero) {
  thread_heap_lock(th);
  thread_heap_check_all(th);
  thread_heap_beat(th);
  if (size <= MM_SMALL_MAX && align <= MM_DATABLOCK_SIZE) {
    unsigned c = align > 16 ? size_class_aligned(size, align) : size_class_of(size);
    if (c < MM_CLASSES) {
      void *p = alloc_class(th, c);
      thread_heap_check_all(th);
      thread_heap_unlock(th);
      if (p && zero) memset(p, 0, size);
      return p;
    }
  }
  thread_heap_unlock(th);
  if (medium_size(size) && align <= MM_DATABLOCK_SIZE) {
    if (th->stash_count) {
      void *p = thread_heap_stash_alloc(th, size, align, zero);
      if (p) return p;
    }
    thread_heap_stash_want(th, large_datablocks(size));
  }
  return thread_heap_alloc_big(th, size ? size : 1, align, zero, false);
}

/* The checked modes (mm_slow_only): every allocation comes here.  Under
 * valgrind, each block is reported to memcheck, with mm_vg_rz no-access
 * bytes after it (a read past the end is reported as it is on glibc). */
static MM_NOINLINE void *alloc_checked(thread_heap_t *th, size_t size, size_t align, bool zero) {
  if (size > PTRDIFF_MAX - mm_vg_rz) {
    errno = ENOMEM;
    return NULL;
  }
  void *p = alloc_any(th, size + mm_vg_rz, align, zero);
#if MM_VALGRIND
  if (p && mm_vg_rz) {
    extent_t *e = thread_heap_lookup(p, "malloc"); /* huge blocks too */
    size_t room = e->kind == MM_EXTENT_PAGE ? e->block_size : large_usable(e);
    VALGRIND_MAKE_MEM_NOACCESS(p, room);
    VALGRIND_MALLOCLIKE_BLOCK(p, size, 0, zero);
  }
#endif
  return p;
}

/* The class's current page has no free block left, but the owner freed
 * blocks into it since its last refill: those become its free list at once
 * (true), with no lock and no heartbeat (page_refill's first step, on lists
 * that are the owner's alone), a sixth of the full slow path's
 * instructions.  Every MM_HEARTBEAT_CALLS-th time (counted with the free
 * slow paths' calls) false instead, so that the caller takes the full slow
 * path and a thread that cycles through its own pages still beats: it
 * takes its inbox, hands over its batches and marks itself active.  The
 * caller pops with page_pop (checked in the checked modes).  Never true for
 * mm_heap_empty (its pages have no frees, so it is never written). */
MM_INLINE bool refill_quick(thread_heap_t *th, extent_t *page) {
  if (page->local_free == NULL || (++th->slow_calls & (MM_HEARTBEAT_CALLS - 1)) == 0) return false;
  mm_assert_internal(th != &mm_heap_empty);
  page_take_local_frees(page);
  return true;
}

/* Sizes above MM_DIRECT_MAX, from the fast path: the first page of the
 * class has a free block (no lock: the owner's own page, as on the fast
 * path), else a slow path, told the class. */
void *thread_heap_malloc_medium(thread_heap_t *th, size_t size) {
  if (likely(size <= MM_SMALL_MAX && !mm_slow_only)) {
    unsigned c = size_class_of_medium(size);
    extent_t *page = th->queue[c].first;
    if (likely(page != NULL)) {
      block_t *b = page->free;
      if (likely(b != NULL)) return page_take_block(page, b, b->next);
      if (refill_quick(th, page)) return page_pop(page);
    }
    if (likely(th != &mm_heap_empty)) return thread_heap_alloc_class_slow(th, c);
  }
  if (unlikely(th->stash_count)) return thread_heap_malloc_stashed(th, size);
  return thread_heap_malloc_slow(th, size);
}

/* A medium block this thread freed (its stash, stash.c: never
 * filled for an empty heap or in the checked modes), of the datablocks
 * size needs, counted as a slow call; else on to the slow path, which
 * counts the call itself: a medium size the stash has none of (that sent
 * the stash home), or the one call in MM_HEARTBEAT_CALLS that beats. */
MM_NOINLINE void *thread_heap_malloc_stashed(thread_heap_t *th, size_t size) {
  if (medium_size(size) && ((th->slow_calls + 1) & (MM_HEARTBEAT_CALLS - 1)) != 0) {
    void *p = thread_heap_stash_take(th, size, 0);
    if (p) {
      th->slow_calls++;
      return p;
    }
  }
  return thread_heap_malloc_slow(th, size);
}

/* A block of class c, whose first page had none (medium sizes). */
MM_SLOW_PATH void *thread_heap_alloc_class_slow(thread_heap_t *th, unsigned c) {
  thread_heap_lock(th);
  thread_heap_check_all(th);
  thread_heap_beat(th);
  void *p = alloc_class(th, c);
  thread_heap_check_all(th);
  thread_heap_unlock(th);
  return p; /* no purger poke: this runs once per medium malloc (purger.c) */
}

/* A medium block (above the classes, up to 128 KiB: the medium cache's)
 * needs nothing of th's lists, so it skips th's lock and the heartbeat but
 * every MM_HEARTBEAT_CALLS-th slow call (counted with refill_quick's and
 * the free slow paths'), so that a thread that allocates only such blocks
 * still takes its inbox, hands over its batches, marks itself active and
 * purges what is due.  A bigger block beats on every call: its own cost
 * dwarfs the beat's, and a run of them is what brings a cgroup near its
 * memory limit, which the beat looks at (decay.c). */
static MM_SLOW_PATH void *malloc_slow(thread_heap_t *th, size_t size) {
  if (unlikely(th == &mm_heap_empty)) {
    th = thread_heap_init_current();
    if (!th) {
      errno = ENOMEM;
      return NULL;
    }
  }
  void *p;
  if (unlikely(mm_slow_only)) p = alloc_checked(th, size, 0, false);
  else if (medium_size(size) && (++th->slow_calls & (MM_HEARTBEAT_CALLS - 1)) != 0) {
    thread_heap_stash_want(th, large_datablocks(size));
    p = thread_heap_alloc_big(th, size, 0, false, false); /* no lock of th: see below */
  } else {
    p = alloc_any(th, size, 0, false);
  }
  local_heap_purger_poke();
  return p;
}

/* Not cold: in secure mode and zero-on-free (not valgrind, which must see
 * every block) every malloc comes here, and most of those of a small size
 * leave at once: the first page of the class, popped without the lock as
 * the fast path would (the owner alone pops), but checked, after a quick
 * refill from the owner's frees if its list ran out.  (A thread without a
 * heap yet has no page in its queues.) */
static MM_NOINLINE void *malloc_checked(thread_heap_t *th, size_t size) {
  if (size <= MM_SMALL_MAX && !mm_vg_rz) {
    extent_t *page = th->queue[size_class_of(size)].first;
    if (page && (page->free || refill_quick(th, page))) return page_pop_checked(page);
  }
  return malloc_slow(th, size);
}

MM_SLOW_PATH void *thread_heap_malloc_slow(thread_heap_t *th, size_t size) {
  if (unlikely(mm_slow_only)) return malloc_checked(th, size);
  if (likely(size <= MM_DIRECT_MAX)) {
    extent_t *page = th->direct[(size + 15) >> 4];
    if (refill_quick(th, page)) return page_pop(page);
  }
  return malloc_slow(th, size);
}

/* Allocation with an alignment above 16 that thread_heap_malloc_aligned_fast
 * did not serve (the checked modes, an alignment above a datablock, a
 * large or huge block), or zeroed large memory. */
void *thread_heap_malloc_aligned(size_t size, size_t align, bool zero) {
  thread_heap_t *th = thread_heap_current();
  if (!th) {
    errno = ENOMEM;
    return NULL;
  }
  return mm_slow_only ? alloc_checked(th, size, align, zero) : alloc_any(th, size, align, zero);
}
