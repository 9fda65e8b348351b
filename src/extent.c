/* extent.c — free extents of a local heap: the tree they live in, insert
 * with coalescing, carving, commit, slots, guard datablocks, and the
 * address-space pressure relief.
 *
 * Layer: local heap.  Every function runs under its heap's lock.
 *
 * Placement: pages and large blocks, growing ones included, come from the
 * lowest-addressed extent that fits (first fit): they pack at the bottom of
 * the slots and reuse recently freed, still resident memory.  A block grows
 * in place when the extent right behind it is free (large.c).
 * (The Mmalloc paper's "memory increment" places a block in the middle of
 * the largest free extent, leaving room behind it to grow into.  Done for
 * every large block, that spread them over the slot and touched fresh
 * datablocks instead of reusing freed ones: RSS grew by 70% on the
 * thread-churn test.  Done for the blocks realloc moves, it sent every
 * growing array to fresh memory while the holes the arrays left stayed
 * dirty: 2.4 times glibc's peak RSS on the cover workload, 1.4 with first
 * fit; docs/design.md.)
 *
 * Invariants: the trees hold every FREE extent of the heap's slots,
 * coalesced (no two free extents touch); a FREE extent's first and last
 * datablock are mapped to it (coalescing finds neighbours in O(1)); an
 * extent marked UNMAPPED is FREE and lies in a slot with holes, and so does
 * a LOST one (its address space was taken by another mapping).
 */
#define _GNU_SOURCE
#include <errno.h>

#include "local_heap_parts.h"

/* ---- guard datablocks (secure mode) -----------------------------------------
 * A page block or large block carries one more datablock than it needs,
 * made a guard, so that running off its end faults instead of reaching the
 * next block.  Guards are removed lazily: when the extent returns to the
 * tree its guard stays installed, and the slot's guard map (a bit per
 * datablock) says so; an extent carved later removes the guards inside it
 * and finds its own already there when it ends where the old one did, as
 * a block of the same size taking the same place (first fit) does.  That
 * saves two madvise calls, and the TLB flushes they cause, per block that
 * comes and goes (threadtest: 24,000 of them, a quarter of its time).
 * Guard markers survive MADV_DONTNEED; an extent whose address space is
 * given back (unmap_visit) loses them, and its bits.  On kernels without
 * the light guards (os_guard_is_light false: mprotect, which splits
 * mappings) a guard goes as soon as its extent does, as before. */

/* The bits of word w of a guard map that stand for datablocks [from, to)
 * (from < to). */
static uint64_t guard_range_mask(size_t w, size_t from, size_t to) {
  uint64_t mask = ~(uint64_t)0;
  if (w == from >> 6) mask &= ~(uint64_t)0 << (from & 63);
  if (w == (to - 1) >> 6 && (to & 63)) mask &= ((uint64_t)1 << (to & 63)) - 1;
  return mask;
}

static void guard_bits_clear(slot_t *slot, size_t from, size_t to) {
  uint64_t *m = slot_guard_map(slot);
  for (size_t w = from >> 6; w <= (to - 1) >> 6; w++) m[w] &= ~guard_range_mask(w, from, to);
}

static void *datablock_at(slot_t *slot, size_t i) {
  return (void *)((uintptr_t)slot + (i << MM_DATABLOCK_SHIFT));
}

bool extent_guard_secure(extent_t *e) {
  mm_assert_internal(options.secure);
  mm_assert_internal(e->node.ndatablocks >= 2); /* guarded_datablocks: one more */
  slot_t *slot = slot_of_extent(e);
  uint64_t *m = slot_guard_map(slot);
  size_t first = (e->node.start - (uintptr_t)slot) >> MM_DATABLOCK_SHIFT;
  size_t last = first + e->node.ndatablocks - 1; /* the guard's datablock; first < last */
  /* stale guards inside the block: removed, a word of the map at a time */
  for (size_t w = first >> 6; w <= (last - 1) >> 6; w++) {
    for (uint64_t bits = m[w] & guard_range_mask(w, first, last); bits; bits &= bits - 1) {
      size_t i = (w << 6) + (size_t)__builtin_ctzll(bits);
      if (!os_guard(datablock_at(slot, i), MM_DATABLOCK_SIZE, false)) return false;
      guard_bits_clear(slot, i, i + 1);
    }
  }
  if (!(m[last >> 6] & ((uint64_t)1 << (last & 63)))) {
    if (!os_guard(datablock_at(slot, last), MM_DATABLOCK_SIZE, true)) return false;
    m[last >> 6] |= (uint64_t)1 << (last & 63);
  }
  e->flags |= MM_EXTENT_GUARD;
  return true;
}

static void extent_unguard(extent_t *e) {
  if (!(e->flags & MM_EXTENT_GUARD)) return;
  e->flags &= (uint8_t)~MM_EXTENT_GUARD;
  if (os_guard_is_light()) return; /* stays, and in the map */
  slot_t *slot = slot_of_extent(e);
  size_t last = ((extent_end(e) - (uintptr_t)slot) >> MM_DATABLOCK_SHIFT) - 1;
  if (os_guard(datablock_at(slot, last), MM_DATABLOCK_SIZE, false)) guard_bits_clear(slot, last, last + 1);
}

/* ---- free extents: insert with coalescing, carve --------------------------- */

/* Make e (out of any list, not in the tree) a FREE extent of h, merged with
 * free neighbours.  e's flags, freed_at and dirty must be set (and dirty
 * counted in dirty_datablocks).  Returns the extent that now holds e's datablocks. */
extent_t *extent_insert_free(local_heap_t *h, extent_t *e) {
  mm_assert_internal(local_heap_locked(h) && local_heap_of_extent(e) == h);
  mm_assert_internal(e->kind != MM_EXTENT_FREE && !e->next && !e->prev);
  extent_unguard(e);
  slot_t *slot = slot_of_extent(e);
  uintptr_t start = e->node.start, end = extent_end(e);
  extent_t *left = NULL, *right = NULL;
  if (start > slot_data_start(slot)) {
    left = region_extent_at(slot, start - MM_DATABLOCK_SIZE);
    if (left && left->kind != MM_EXTENT_FREE) left = NULL;
  }
  if (end < (uintptr_t)slot + slot->size) {
    right = region_extent_at(slot, end);
    if (right && right->kind != MM_EXTENT_FREE) right = NULL;
  }
  e->kind = MM_EXTENT_FREE;
  if (!left && !right) {
    interval_tree_insert(tree_of(h, e), &e->node);
    region_map_ends(e);
    return e;
  }
  /* A neighbour idle for the whole purge delay goes back to the OS now:
   * merged, it would take e's time and wait a whole delay again (decay.c). */
  if ((left && left->dirty) || (right && right->dirty)) {
    uint32_t now = os_now_ms();
    if (left && decay_due(left, now)) decay_purge_extent(h, left);
    if (right && decay_due(right, now)) decay_purge_extent(h, right);
  }
  /* Merge: the dirty counts add up, zero only if all parts are, freed when
   * the newest dirty part was (so no part is purged before its delay). */
  extent_t *parts[3] = {left, e, right};
  size_t total = 0, dirty = 0;
  uint8_t zero = MM_EXTENT_ZERO;
  uint32_t newest = 0;
  bool have_time = false;
  for (int i = 0; i < 3; i++) {
    extent_t *p = parts[i];
    if (!p) continue;
    total += p->node.ndatablocks;
    if (p->dirty) {
      dirty += p->dirty;
      if (!have_time || (int32_t)(p->freed_at - newest) > 0) newest = p->freed_at;
      have_time = true;
    }
    zero &= p->flags;
  }
  /* A part whose address space was given back makes the whole merged
   * extent unmapped: the others are unmapped too (they are free). */
  bool unmapped = false;
  for (int i = 0; i < 3; i++)
    if (parts[i] && (parts[i]->flags & MM_EXTENT_UNMAPPED)) unmapped = true;
  if (unmapped)
    for (int i = 0; i < 3; i++) {
      extent_t *p = parts[i];
      if (!p || (p->flags & MM_EXTENT_UNMAPPED)) continue;
      os_release((void *)p->node.start, p->node.ndatablocks << MM_DATABLOCK_SHIFT);
      dirty -= p->dirty;
      decay_gave_back(h, p);
    }
  extent_t *keep;
  if (left) {
    keep = left;
    if (right) {
      interval_tree_remove(tree_of(h, right), &right->node);
      region_extent_delete(slot, right);
    }
    interval_tree_resize(tree_of(h, left), &left->node, left->node.start, total);
  } else {
    keep = right;
    interval_tree_resize(tree_of(h, right), &right->node, start, total);
  }
  region_extent_delete(slot, e);
  keep->flags = unmapped ? MM_EXTENT_ZERO | MM_EXTENT_UNMAPPED : zero;
  keep->dirty = (uint32_t)dirty; /* the parts' counts, already in dirty_datablocks */
  if (dirty) keep->freed_at = newest;
  region_map_ends(keep);
  decay_set_dirty(h, keep, dirty); /* at most its committed part */
  return keep;
}

/* Carve [f.start + off datablocks, + n datablocks) out of FREE extent f.  Returns the
 * carved extent (kind unset, flags = MM_EXTENT_ZERO if its bytes are zero),
 * or NULL when the slot has no descriptor left (nothing changed). */
static extent_t *extent_carve(local_heap_t *h, extent_t *f, size_t off, size_t n) {
  mm_assert_internal(f->kind == MM_EXTENT_FREE && off + n <= f->node.ndatablocks);
  slot_t *slot = slot_of_extent(f);
  size_t before = off, after = f->node.ndatablocks - off - n;
  extent_t *e = f, *g = NULL;
  if (before || after) {
    e = region_extent_new(slot);
    if (!e) return NULL;
  }
  if (before && after) {
    g = region_extent_new(slot);
    if (!g) {
      region_extent_delete(slot, e);
      return NULL;
    }
  }
  uint8_t flags = f->flags;
  uint32_t freed_at = f->freed_at;
  size_t dirty = f->dirty;
  uintptr_t s = f->node.start + (off << MM_DATABLOCK_SHIFT);
  if (!before && !after) {
    interval_tree_remove(tree_of(h, f), &f->node);
    decay_set_dirty(h, f, 0);
  } else if (!before) {
    interval_tree_resize(tree_of(h, f), &f->node, s + (n << MM_DATABLOCK_SHIFT), after);
    decay_set_dirty(h, f, dirty < after ? dirty : after);
    region_map_ends(f);
  } else {
    interval_tree_resize(tree_of(h, f), &f->node, f->node.start, before);
    decay_set_dirty(h, f, dirty < before ? dirty : before);
    region_map_ends(f);
    if (g) {
      g->kind = MM_EXTENT_FREE;
      g->flags = flags;
      g->freed_at = freed_at;
      g->dirty = 0;
      g->node.start = s + (n << MM_DATABLOCK_SHIFT);
      g->node.ndatablocks = after;
      decay_set_dirty(h, g, dirty < after ? dirty : after);
      interval_tree_insert(tree_of(h, g), &g->node);
      region_map_ends(g);
    }
  }
  e->node.start = s;
  e->node.ndatablocks = n;
  e->flags = flags & MM_EXTENT_ZERO;
  e->dirty = 0;
  e->next = e->prev = NULL;
  return e;
}

/* ---- slots ------------------------------------------------------------------ */

static bool slot_is_empty(slot_t *slot, extent_t **free_out) {
  extent_t *f = region_extent_at(slot, slot_data_start(slot));
  if (f && f->kind == MM_EXTENT_FREE && f->node.ndatablocks == region_slot_data_datablocks()) {
    *free_out = f;
    return true;
  }
  return false;
}

/* Unmap every slot of h that holds nothing, but `keep` of each kind
 * (tree).  Lock held. */
size_t slots_release_empty(local_heap_t *h, uint32_t keep) {
  mm_assert_internal(local_heap_locked(h));
  size_t released = 0;
  uint32_t kept[MM_TREES] = {0};
  slot_t **link = &h->slots;
  while (*link) {
    slot_t *slot = *link;
    extent_t *f;
    if (slot_is_empty(slot, &f)) {
      if (kept[slot->tree] < keep) {
        kept[slot->tree]++;
      } else {
        interval_tree_remove(tree_of(h, f), &f->node);
        decay_set_dirty(h, f, 0);
        *link = slot->next;
        h->nslots--;
        region_slot_release(slot);
        released++;
        continue;
      }
    }
    link = &slot->next;
  }
  return released;
}

/* ---- address-space pressure ------------------------------------------------
 * When the OS refuses to reserve or commit (an RLIMIT_AS, a full address
 * space, an exhausted commit limit), free memory gives its address space
 * back: empty slots are unmapped, and so is every free extent of 64 KiB or
 * more, in place (MM_EXTENT_UNMAPPED: it keeps its place in the tree and is
 * mapped again, piece by piece, when an allocation takes it).  So freed
 * memory is reusable even by a block bigger than a slot. */

typedef struct unmap_walk_s {
  local_heap_t *h;
  size_t bytes;
} unmap_walk_t;

static bool unmap_visit(itree_node_t *node, void *arg) {
  unmap_walk_t *w = arg;
  extent_t *e = extent_of_node(node);
  if ((e->flags & MM_EXTENT_UNMAPPED) || e->node.ndatablocks < 16) return true;
  os_release((void *)e->node.start, e->node.ndatablocks << MM_DATABLOCK_SHIFT);
  if (options.secure) { /* its guards went with it */
    slot_t *slot = slot_of_extent(e);
    size_t from = (e->node.start - (uintptr_t)slot) >> MM_DATABLOCK_SHIFT;
    guard_bits_clear(slot, from, from + e->node.ndatablocks);
  }
  decay_gave_back(w->h, e);
  e->flags = MM_EXTENT_ZERO | MM_EXTENT_UNMAPPED;
  slot_of_extent(e)->holes = 1;
  w->bytes += e->node.ndatablocks << MM_DATABLOCK_SHIFT;
  return true;
}

/* Lock held.  Bytes of address space given back. */
static size_t give_back_address_space(local_heap_t *h) {
  mm_assert_internal(local_heap_locked(h));
  size_t slots = slots_release_empty(h, 0);
  unmap_walk_t w = {h, slots * MM_SLOT_SIZE};
  /* the page and medium caches first: their blocks go to the tree (and
   * out with it) */
  while (h->cache.last) page_cache_evict(h, h->cache.last);
  while (h->medium_cache.last) medium_cache_evict(h, h->medium_cache.last);
  for (int t = 0; t < MM_TREES; t++) interval_tree_foreach(&h->trees[t], unmap_visit, &w);
  return w.bytes;
}

/* Every heap gives back its address space: `self` (whose lock the caller
 * holds, or NULL: then every heap, waiting for each lock in turn, holding
 * one at a time), the others if their lock is free right now.  Also the
 * cached huge mappings. */
size_t pressure_relieve(local_heap_t *self) {
  mm_assert_internal(!self || local_heap_locked(self));
  size_t bytes = 0;
  for (uint32_t i = 0; i < mm_nheaps; i++) {
    local_heap_t *o = &mm_heaps[i];
    if (o != self) {
      if (self) {
        if (!local_heap_trylock(o)) continue;
      } else {
        local_heap_lock(o);
      }
    }
    bytes += huge_cache_drop_all(o);
    bytes += give_back_address_space(o);
    if (o != self) local_heap_unlock(o);
  }
  return bytes;
}

/* A new slot for h's tree t, its data area inserted in that tree.  When the
 * OS refuses, relieve the pressure and try once more. */
static extent_t *heap_grow(local_heap_t *h, int t) {
  extent_t *f;
  slot_t *slot = region_slot_new(h->index, &f);
  if (!slot) {
    if (pressure_relieve(h)) slot = region_slot_new(h->index, &f);
    if (!slot) return NULL;
  }
  slot->tree = (uint32_t)t;
  slot->next = h->slots;
  h->slots = slot;
  h->nslots++;
  interval_tree_insert(&h->trees[t], &f->node);
  return f;
}

/* Make [start, start + n datablocks) of slot read-write: the slot's committed
 * prefix grows to cover it (few mprotect calls, two mappings per slot), or,
 * in a slot with holes, exactly that range.  No pressure relief here: that
 * may unmap the very extent (or slot) being carved, so the caller relieves
 * and searches again. */
static bool extent_commit(slot_t *slot, uintptr_t start, size_t n) {
  if (slot->holes) return os_commit((void *)start, n << MM_DATABLOCK_SHIFT);
  uintptr_t before = slot->committed;
  if (!region_commit_to(slot, start + (n << MM_DATABLOCK_SHIFT))) return false;
  if (slot->committed != before) purger_grew(slot->committed - before);
  return true;
}

/* An extent of n datablocks aligned to align_datablocks, carved from h's
 * free space (the lowest extent that fits: first fit) and committed.  Lock
 * held.  NULL with errno ENOMEM when there is no address space or commit
 * charge. */
extent_t *extent_alloc(local_heap_t *h, int t, size_t n, size_t align_datablocks, size_t *fresh) {
  mm_assert_internal(local_heap_locked(h));
  size_t need = n + align_datablocks - 1;
  if (need > region_slot_data_datablocks()) {
    errno = ENOMEM;
    return NULL;
  }
  bool relieved = false;
  for (int attempt = 0; attempt < 2; attempt++) {
    itree_node_t *node = interval_tree_first_fit(&h->trees[t], need);
    if (!node) {
      extent_t *f = heap_grow(h, t);
      if (!f) {
        errno = ENOMEM;
        return NULL;
      }
      node = &f->node;
    }
    extent_t *f = extent_of_node(node);
    size_t off = 0;
    if (align_datablocks > 1) {
      uintptr_t a = (uintptr_t)align_datablocks << MM_DATABLOCK_SHIFT;
      uintptr_t s = (f->node.start + a - 1) & ~(a - 1);
      off = (s - f->node.start) >> MM_DATABLOCK_SHIFT;
    }
    slot_t *slot = slot_of_extent(f);
    if (f->flags & MM_EXTENT_UNMAPPED) {
      void *s = (void *)(f->node.start + (off << MM_DATABLOCK_SHIFT));
      size_t bytes = n << MM_DATABLOCK_SHIFT;
      if (!os_reserve_at(s, bytes)) {
        if (errno == EEXIST) {
          /* Another mapping took the hole: lose it, but keep its descriptor
           * (LOST), so that the slot stays tiled and its map names no
           * descriptor that could be reused for another extent (freeing a
           * neighbour would merge with that one). */
          interval_tree_remove(tree_of(h, f), &f->node);
          decay_set_dirty(h, f, 0);
          f->kind = MM_EXTENT_LOST;
          f->flags = 0;
          attempt--;
          continue;
        }
        errno = ENOMEM;
        return NULL;
      }
      if (!os_commit(s, bytes)) {
        os_release(s, bytes);
        errno = ENOMEM;
        return NULL;
      }
    } else if (!extent_commit(slot, f->node.start + (off << MM_DATABLOCK_SHIFT), n)) {
      /* Relieving the pressure may unmap f, or its whole slot: search again. */
      if (!relieved && pressure_relieve(h)) {
        relieved = true;
        attempt--;
        continue;
      }
      errno = ENOMEM;
      return NULL;
    }
    size_t resident = f->flags & MM_EXTENT_UNMAPPED ? 0 : f->dirty; /* at most */
    extent_t *e = extent_carve(h, f, off, n);
    if (e) {
      if (fresh) *fresh = n > resident ? n - resident : 0;
      return e;
    }
    if (f->flags & MM_EXTENT_UNMAPPED)
      os_release((void *)(f->node.start + (off << MM_DATABLOCK_SHIFT)), n << MM_DATABLOCK_SHIFT);
    /* This slot is out of descriptors: take a fresh slot and retry there. */
    if (!heap_grow(h, t)) break;
  }
  errno = ENOMEM;
  return NULL;
}

/* Make [end, end + more datablocks) of the free extent r usable for a block
 * growing into it.  r's address space may have been given back (unmapped in
 * place under pressure): map it again.  In a slot with holes the watermark
 * says nothing, so commit the exact range.  False leaves everything as it
 * was (realloc then moves the block).  Lock held. */
bool extent_grow_commit(slot_t *slot, extent_t *r, uintptr_t end, size_t more) {
  mm_assert_internal(local_heap_locked(&mm_heaps[slot->heap]) && r->kind == MM_EXTENT_FREE);
  void *p = (void *)end;
  size_t bytes = more << MM_DATABLOCK_SHIFT;
  if (r->flags & MM_EXTENT_UNMAPPED) {
    if (!os_reserve_at(p, bytes)) return false;
    if (!os_commit(p, bytes)) {
      os_release(p, bytes);
      return false;
    }
    return true;
  }
  return extent_commit(slot, end, more);
}

