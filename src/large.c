/* large.c — blocks handed to the user whole: large blocks (LARGE extents
 * of a local heap's tree, above MM_SMALL_MAX) and huge blocks (above
 * MM_HUGE_MIN, mappings of their own) with the cache of freed huge
 * mappings.
 *
 * Layer: local heap.
 *
 * A large block is placed by first fit (extent.c), or, a medium one, taken
 * from the medium cache of freed ones of its size; realloc grows it in place
 * into the free extent right behind it and shrinks it by giving the tail
 * back.  A freed huge mapping
 * waits in its heap's huge cache for the purge delay, so that a program
 * that frees a 60 MiB buffer and allocates another reuses its resident
 * memory instead of faulting in fresh pages (while all heaps' caches hold
 * at most a sixteenth of the memory: a freed array of gigabytes goes back
 * in the free): a new block takes the
 * mapping's head (a block that is not growing gives the rest back), and a
 * growing huge block that outgrows its own mapping moves onto it by mremap
 * (its pages replace the cached head, the cached tail is its new end).  A
 * block below MM_HUGE_MIN (from MM_GROW_MAP_MIN) takes such a head too,
 * from a mapping at most MM_HUGE_REUSE_ROOM times its size, and is then a
 * huge block itself.
 *
 * Invariants: a LARGE extent is on no list; huge_cache holds at most
 * MM_HUGE_CACHE_MAX CACHED huge mappings of this heap, newest first;
 * huge_cached_all is the sum of every heap's huge_cached_datablocks, in
 * bytes; a huge free that finds it above huge_cache_limit() unmaps its
 * heap's oldest entries, the freed block last, until it is not or that
 * cache is empty (other heaps' entries wait for their purge);
 * medium_cache at most MM_MEDIUM_CACHE_MAX CACHED extents of this heap's
 * medium slots, newest first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "local_heap_parts.h"

/* ---- the medium cache -------------------------------------------------------------
 * A freed medium block (a LARGE extent of a medium slot) waits, CACHED, on
 * its heap's medium_cache for the next request of exactly its datablocks,
 * which takes it whole: no carve, no coalescing, its extent map entries
 * and its guard (secure mode) still in place.  It is dirty like any freed
 * extent; the oldest goes to the tree when the cache holds more than
 * MM_MEDIUM_CACHE_MAX, all of them when a medium request finds none of its
 * size, and every one after the purge delay (decay.c). */

void medium_cache_evict(local_heap_t *h, extent_t *c) {
  mm_assert_internal(local_heap_locked(h) && c->kind == MM_EXTENT_CACHED);
  extent_list_remove(&h->medium_cache, c);
  h->medium_cache_count--;
  extent_insert_free(h, c);
}

static void medium_cache_put(local_heap_t *h, extent_t *e, uint32_t now) {
  e->kind = MM_EXTENT_CACHED;
  decay_dirty_add(h, e, now); /* clears every flag but the guard's */
  extent_list_push_front(&h->medium_cache, e);
  if (++h->medium_cache_count > MM_MEDIUM_CACHE_MAX) medium_cache_evict(h, h->medium_cache.last);
}

/* A cached block of exactly n datablocks, or NULL after every cached block
 * went to the tree: a request the cache cannot serve is one whose sizes
 * vary (arrays growing by realloc), and first fit must then see the memory
 * the cache held, or it takes fresh memory while that waits. */
static extent_t *medium_cache_take(local_heap_t *h, size_t n) {
  for (extent_t *c = h->medium_cache.first; c; c = c->next) {
    if (c->node.ndatablocks == n) {
      extent_list_remove(&h->medium_cache, c);
      h->medium_cache_count--;
      decay_set_dirty(h, c, 0);
      return c;
    }
  }
  while (h->medium_cache.last) medium_cache_evict(h, h->medium_cache.last);
  return NULL;
}

/* ---- large blocks ---------------------------------------------------------------- */

/* The offset of h's next large block (its lock held), which may take
 * colours up to room (large_colour_room): the colour MM_COLOUR_STRIDE on
 * from the last, within that. */
static uint32_t next_colour(local_heap_t *h, size_t room) {
  h->colour = (h->colour + MM_COLOUR_STRIDE) % MM_COLOURS;
  return (uint32_t)(h->colour % (room / MM_COLOUR_STEP + 1) * MM_COLOUR_STEP);
}

/* A LARGE block of size bytes: a medium one of the same datablocks from
 * the medium cache, else placed by first fit, which reuses the lowest (and
 * most likely resident) free memory.  It starts at its colour. */
void *local_heap_alloc_large(local_heap_t *h, size_t size, size_t align, bool zero) {
  size_t n = guarded_datablocks(large_datablocks(size));
  size_t align_datablocks = align > MM_DATABLOCK_SIZE ? align >> MM_DATABLOCK_SHIFT : 1;
  local_heap_lock(h);
  local_heap_check(h);
  int tree = n <= MM_MEDIUM_DATABLOCKS ? MM_TREE_MEDIUM : MM_TREE_MAIN;
  extent_t *e = tree == MM_TREE_MEDIUM && align_datablocks == 1 ? medium_cache_take(h, n) : NULL;
  bool cached = e != NULL; /* its map's ends still name it */
  size_t fresh = 0;
  if (!e) e = extent_alloc(h, tree, n, align_datablocks, &fresh);
  if (e) {
    e->kind = MM_EXTENT_LARGE;
    if (!cached) region_map_ends(e);
    bool was_zero = e->flags & MM_EXTENT_ZERO;
    if (!extent_guard(e)) {
      decay_dirty_add(h, e, os_now_ms());
      extent_insert_free(h, e);
      e = NULL;
      errno = ENOMEM;
    } else {
      if (was_zero) e->flags |= MM_EXTENT_ZERO;
      e->offset = next_colour(h, large_colour_room(extent_usable(e), size, align));
      h->large_allocs++;
      h->large_live_bytes += n << MM_DATABLOCK_SHIFT;
      if (fresh) decay_give_back_for_growth(h, fresh);
    }
  }
  local_heap_check(h);
  local_heap_unlock(h);
  if (!e) return NULL;
  void *start = (void *)e->node.start;
  size_t bytes = (n - (options.secure ? 1 : 0)) << MM_DATABLOCK_SHIFT;
  if (zero && !(e->flags & MM_EXTENT_ZERO)) {
    /* Big blocks are zeroed by the kernel (and lose their stale datablocks);
     * small ones by memset, cheaper than faulting them in again. */
    if (bytes < ((size_t)1 << 20) || !os_purge(start, bytes)) memset(start, 0, bytes);
  }
  e->flags &= MM_EXTENT_GUARD;
  if (option_live(&options.hugepages) == 2 && bytes >= ((size_t)8 << 20))
    os_hugepages_block(start, bytes, false, !zero); /* a calloc's untouched pages stay out */
  return (void *)large_block(e);
}

/* Free a LARGE extent.  The caller checked it without the lock; a racing
 * double free is caught here.  purge: its contents are dead and its memory
 * is not expected back soon (realloc moved the block to a mapping of its
 * own): its datablocks go back to the OS now instead of after the delay. */
void local_heap_free_large(extent_t *e, bool purge) {
  mm_assert(!slot_of_extent(e)->huge);
  local_heap_t *h = local_heap_of_extent(e);
  uintptr_t start = e->node.start;
  size_t guard = e->flags & MM_EXTENT_GUARD ? 1 : 0; /* never touched: not purged */
  bool purged = purge && os_purge((void *)start, (e->node.ndatablocks - guard) << MM_DATABLOCK_SHIFT);
  uint32_t now = os_now_ms();
  local_heap_lock(h);
  local_heap_check(h);
  if (e->kind != MM_EXTENT_LARGE) {
    local_heap_unlock(h);
    os_fatal("mmalloc: free(): double free of %p\n", (void *)(start + e->offset));
  }
  h->large_frees++;
  h->large_live_bytes -= e->node.ndatablocks << MM_DATABLOCK_SHIFT;
  if (!purge && slot_of_extent(e)->tree == MM_TREE_MEDIUM) {
    medium_cache_put(h, e, now);
  } else {
    decay_dirty_add(h, e, now);
    if (purged) {
      h->purged_bytes += (e->node.ndatablocks - guard) << MM_DATABLOCK_SHIFT;
      decay_gave_back(h, e);
    }
    extent_insert_free(h, e);
  }
  uint64_t due = atomic_load_relaxed(&h->xpurge_at);
  if (due && time_reached(now, (uint32_t)due)) local_heap_purge(h, false);
  local_heap_check(h);
  local_heap_unlock(h);
}

/* Resize a LARGE extent in place to hold size bytes: shrink by giving the
 * tail back, grow by taking the free extent right behind it.  False when it
 * cannot grow in place (nothing changed). */
bool local_heap_resize_large(extent_t *e, size_t size) {
  mm_assert(e->kind == MM_EXTENT_LARGE && !slot_of_extent(e)->huge);
  if (e->flags & MM_EXTENT_GUARD) return false; /* secure mode: realloc moves */
  local_heap_t *h = local_heap_of_extent(e);
  slot_t *slot = slot_of_extent(e);
  /* its colour stays: what it needs after it (a shrink never grows the
   * extent; its datablocks, which may now be fewer than large_datablocks'
   * for its size, still serve any colour of the sizes they are asked for) */
  size_t n = (e->offset + size + MM_DATABLOCK_SIZE - 1) >> MM_DATABLOCK_SHIFT;
  bool ok = false;
  local_heap_lock(h);
  local_heap_check(h);
  size_t old = e->node.ndatablocks;
  if (n == old) {
    ok = true;
  } else if (n < old) {
    extent_t *t = region_extent_new(slot);
    if (t) {
      t->node.start = e->node.start + (n << MM_DATABLOCK_SHIFT);
      t->node.ndatablocks = old - n;
      e->node.ndatablocks = n;
      region_map_ends(e);
      h->large_live_bytes -= (old - n) << MM_DATABLOCK_SHIFT;
      decay_dirty_add(h, t, os_now_ms());
      extent_insert_free(h, t);
    }
    ok = true; /* without a descriptor the block just keeps its tail */
  } else {
    uintptr_t end = extent_end(e);
    extent_t *r = end < (uintptr_t)slot + slot->size ? region_extent_at(slot, end) : NULL;
    size_t more = n - old;
    if (r && r->kind == MM_EXTENT_FREE && r->node.ndatablocks >= more &&
        extent_grow_commit(slot, r, end, more)) {
      if (r->node.ndatablocks == more) {
        interval_tree_remove(tree_of(h, r), &r->node);
        decay_set_dirty(h, r, 0);
        region_extent_delete(slot, r);
      } else {
        size_t left_over = r->node.ndatablocks - more;
        interval_tree_resize(tree_of(h, r), &r->node, end + (more << MM_DATABLOCK_SHIFT), left_over);
        if (r->dirty > left_over) decay_set_dirty(h, r, left_over);
        region_map_ends(r);
      }
      e->node.ndatablocks = n;
      region_map_ends(e);
      h->large_live_bytes += more << MM_DATABLOCK_SHIFT;
      h->realloc_in_place++;
      ok = true;
    }
  }
  local_heap_check(h);
  local_heap_unlock(h);
  return ok;
}

/* ---- huge blocks ------------------------------------------------------------------
 * Their own mappings (region.c), counted here, reused from the cache of
 * recently freed ones before a new one is mapped. */

/* The bytes all heaps' huge caches hold, and the frees that found them at
 * their limit (statistics). */
static _Atomic(size_t) huge_cached_all;
static _Atomic(uint64_t) huge_over_limit;

/* The most bytes all huge caches may hold: MM_HUGE_CACHE_SHARE-th of the
 * machine's memory, or of the cgroup's memory limit when that is lower
 * (the machine's read once, at the first call: a huge free or the
 * statistics, with no lock held). */
static size_t huge_cache_limit(void) {
  static _Atomic(uint64_t) phys; /* 0: not read yet */
  uint64_t mem = atomic_load_relaxed(&phys);
  if (!mem) {
    mem = os_physical_memory();
    if (!mem) mem = UINT64_MAX;
    atomic_store_relaxed(&phys, mem);
  }
  uint64_t cg = cgroup_memory_limit();
  if (cg && cg < mem) mem = cg;
  mem /= MM_HUGE_CACHE_SHARE;
  return mem < SIZE_MAX ? (size_t)mem : SIZE_MAX;
}

void local_heap_huge_cache_stats(uint64_t *limit, uint64_t *cached, uint64_t *over_limit) {
  *limit = huge_cache_limit();
  *cached = atomic_load_relaxed(&huge_cached_all);
  *over_limit = atomic_load_relaxed(&huge_over_limit);
}

/* c went into (in) or out of the huge cache: its counts follow.  Lock held. */
static void huge_cache_count(local_heap_t *h, const extent_t *c, bool in) {
  size_t n = region_huge_committed(c) >> MM_DATABLOCK_SHIFT;
  if (in) {
    h->huge_cached_datablocks += n;
    h->huge_cache_count++;
    atomic_fetch_add_relaxed(&huge_cached_all, n << MM_DATABLOCK_SHIFT);
  } else {
    h->huge_cached_datablocks -= n;
    h->huge_cache_count--;
    atomic_fetch_sub_relaxed(&huge_cached_all, n << MM_DATABLOCK_SHIFT);
  }
  atomic_store_relaxed(&h->xhuge_cached, h->huge_cache_count);
  held_changed(h);
}

/* A cached huge mapping that can hold size bytes at this alignment (the
 * smallest such, and with at most max_room bytes of room), taken out of the
 * cache; NULL if none.  off: the block must start this far into its mapping
 * (0: anywhere).  Lock held. */
static extent_t *huge_cache_take(local_heap_t *h, size_t size, size_t align, uintptr_t off,
                                 size_t max_room) {
  mm_assert_internal(local_heap_locked(h));
  extent_t *best = NULL;
  size_t best_room = 0;
  for (extent_t *c = h->huge_cache.first; c; c = c->next) {
    size_t room = region_huge_room(c);
    if (room >= size && room <= max_room && (c->node.start & (align - 1)) == 0 &&
        (!off || c->node.start - (uintptr_t)slot_of_extent(c) == off) &&
        (!best || room < best_room)) {
      best = c;
      best_room = room;
    }
  }
  if (best) {
    extent_list_remove(&h->huge_cache, best);
    huge_cache_count(h, best, false);
  }
  return best;
}

/* Put c back at the head of the cache (a take that came to nothing).  Lock
 * held. */
static void huge_cache_put(local_heap_t *h, extent_t *c) {
  mm_assert_internal(local_heap_locked(h) && c->kind == MM_EXTENT_CACHED);
  extent_list_push_front(&h->huge_cache, c);
  huge_cache_count(h, c, true);
  if (h->huge_cache_count > MM_HUGE_CACHE_MAX) huge_cache_drop(h, h->huge_cache.last);
}

/* Unmap a cached huge mapping.  Lock held. */
void huge_cache_drop(local_heap_t *h, extent_t *c) {
  mm_assert_internal(local_heap_locked(h) && c->kind == MM_EXTENT_CACHED);
  extent_list_remove(&h->huge_cache, c);
  huge_cache_count(h, c, false);
  h->returned_bytes += region_huge_committed(c);
  region_huge_free(c);
}

size_t huge_cache_drop_all(local_heap_t *h) {
  size_t bytes = 0;
  while (h->huge_cache.first) {
    bytes += slot_of_extent(h->huge_cache.first)->size;
    huge_cache_drop(h, h->huge_cache.first);
  }
  return bytes;
}

/* The most room a cached mapping may have to be reused by a growing block
 * of size bytes (MM_HUGE_KEEP times it). */
static size_t huge_keep_limit(size_t size) {
  return size <= SIZE_MAX / MM_HUGE_KEEP ? size * MM_HUGE_KEEP : SIZE_MAX;
}

/* The committed datablocks behind huge block e, which it may grow into
 * (h->huge_room_datablocks sums them over the heap's live huge blocks). */
static size_t huge_room_of(const extent_t *e) {
  return (region_huge_committed(e) >> MM_DATABLOCK_SHIFT) - e->node.ndatablocks;
}

/* A huge block for h's threads.  zero: the caller needs zeroed memory (a
 * fresh mapping is; a reused one is purged first).  growing: realloc is
 * moving a growing block here; a reused mapping then keeps its resident
 * pages behind the block (up to MM_HUGE_KEEP times its size) as room to
 * grow into, where a block that is not growing gives them back.  A cached
 * mapping is taken only with at most max_room bytes of room; without one,
 * a fresh mapping if may_map, else NULL.  The mapping is this thread's
 * alone until it returns it: region calls need no lock. */
static void *alloc_huge(local_heap_t *h, size_t size, size_t align, bool zero, bool growing,
                        size_t max_room, bool may_map) {
  if (align < MM_DATABLOCK_SIZE) align = MM_DATABLOCK_SIZE;
  extent_t *e = NULL;
  if (atomic_load_relaxed(&h->xhuge_cached)) {
    local_heap_lock(h);
    e = huge_cache_take(h, size, align, 0, max_room);
    local_heap_unlock(h);
    if (e) {
      extent_t *r = region_huge_resize(e, size, growing);
      if (!r) {
        region_huge_free(e);
      } else {
        e = r;
        e->kind = MM_EXTENT_LARGE;
        e->offset = 0; /* huge blocks are not coloured */
        if (zero) {
          void *p = (void *)e->node.start;
          size_t bytes = e->node.ndatablocks << MM_DATABLOCK_SHIFT;
          if (!os_purge(p, bytes)) memset(p, 0, bytes); /* it was someone's: zero it */
        }
      }
      e = r;
    }
  }
  bool fresh = !e;
  if (!e && !may_map) return NULL;
  if (!e) e = region_huge_new(h->index, size, align);
  if (!e && errno == ENOMEM && pressure_relieve(NULL)) e = region_huge_new(h->index, size, align);
  if (!e) return NULL;
  if (option_live(&options.hugepages) != 0)
    os_hugepages_block((void *)e->node.start, e->node.ndatablocks << MM_DATABLOCK_SHIFT, true, !zero);
  size_t room = huge_room_of(e);
  local_heap_lock(h);
  h->huge_allocs++;
  h->huge_live_bytes += e->node.ndatablocks << MM_DATABLOCK_SHIFT;
  h->huge_room_datablocks += room;
  if (fresh) decay_give_back_for_growth(h, e->node.ndatablocks);
  local_heap_unlock(h);
  if (fresh) purger_grew(e->node.ndatablocks << MM_DATABLOCK_SHIFT);
  return (void *)e->node.start;
}

void *local_heap_alloc_huge(local_heap_t *h, size_t size, size_t align, bool zero, bool growing) {
  return alloc_huge(h, size, align, zero, growing, growing ? huge_keep_limit(size) : SIZE_MAX, true);
}

void *local_heap_alloc_huge_cached(local_heap_t *h, size_t size, size_t align, bool zero) {
  if (!atomic_load_relaxed(&h->xhuge_cached)) return NULL;
  size_t max_room = size <= SIZE_MAX / MM_HUGE_REUSE_ROOM ? size * MM_HUGE_REUSE_ROOM : SIZE_MAX;
  return alloc_huge(h, size, align, zero, false, max_room, false);
}

/* A freed huge block goes to its heap's cache (the oldest entry is unmapped
 * when the cache is full, and while all heaps' caches hold more than their
 * limit: the block itself last); the purge unmaps entries idle for the
 * delay.  A second free finds it CACHED and is reported. */
void local_heap_free_huge(extent_t *e) {
  mm_assert(slot_of_extent(e)->huge);
  local_heap_t *h = local_heap_of_extent(e);
  uintptr_t start = e->node.start;
  size_t bytes = e->node.ndatablocks << MM_DATABLOCK_SHIFT;
  uint32_t now = os_now_ms();
  size_t limit = huge_cache_limit();
  local_heap_lock(h);
  if (e->kind != MM_EXTENT_LARGE) {
    local_heap_unlock(h);
    os_fatal("mmalloc: free(): double free of %p\n", (void *)start);
  }
  h->huge_live_bytes -= bytes;
  h->huge_room_datablocks -= huge_room_of(e);
  e->kind = MM_EXTENT_CACHED;
  e->freed_at = now;
  huge_cache_put(h, e);
  if (atomic_load_relaxed(&huge_cached_all) > limit) {
    atomic_fetch_add_relaxed(&huge_over_limit, 1);
    while (h->huge_cache.first && atomic_load_relaxed(&huge_cached_all) > limit)
      huge_cache_drop(h, h->huge_cache.last);
  }
  if (h->huge_cache.first) decay_schedule(h, now);
  local_heap_unlock(h);
}

/* Resize huge block e to size bytes.  A block that outgrows its mapping
 * moves onto a cached mapping of its heap when one has room (its resident
 * pages become the block's new end, where growing in place would fault in
 * fresh ones and leave the cached pages idle), else grows or moves as
 * region_huge_resize can.  The extent (its start may have moved), or NULL
 * with nothing changed. */
extent_t *local_heap_resize_huge(extent_t *e, size_t size) {
  local_heap_t *h = local_heap_of_extent(e);
  size_t before = e->node.ndatablocks << MM_DATABLOCK_SHIFT, room_before = huge_room_of(e);
  uintptr_t start = e->node.start;
  extent_t *ne = NULL;
  if (size > region_huge_room(e) && !options.secure && atomic_load_relaxed(&h->xhuge_cached)) {
    uintptr_t off = e->node.start - (uintptr_t)slot_of_extent(e);
    local_heap_lock(h);
    extent_t *c = huge_cache_take(h, size, MM_DATABLOCK_SIZE, off, huge_keep_limit(size));
    local_heap_unlock(h);
    if (c) {
      ne = region_huge_move_onto(e, c, size);
      local_heap_lock(h);
      if (ne) {
        ne->kind = MM_EXTENT_LARGE;
        ne->offset = 0;
      } else {
        huge_cache_put(h, c);
      }
      local_heap_unlock(h);
    }
  }
  if (!ne) ne = region_huge_resize(e, size, false);
  if (ne) {
    size_t room = huge_room_of(ne);
    local_heap_lock(h);
    if (ne->node.start != start) h->realloc_remapped++;
    h->huge_live_bytes += (ne->node.ndatablocks << MM_DATABLOCK_SHIFT) - before;
    h->huge_room_datablocks = h->huge_room_datablocks - room_before + room;
    local_heap_unlock(h);
    size_t after = ne->node.ndatablocks << MM_DATABLOCK_SHIFT;
    if (after > before) purger_grew(after - before);
  }
  return ne;
}
