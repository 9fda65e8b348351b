/* region_check.c — the region checker: a slot's table entries, header,
 * descriptors, extent map and commit state, against each other.
 *
 * Layer: region.  Called by the local heap's checker (local_heap_check.c)
 * for each of its slots and huge mappings, under the heap's lock, at
 * MM_DEBUG 3 and by the unit tests.  Reads lines 1 and 2 of the
 * descriptors (kind, flags, the extent), which the lock guards, and a
 * LARGE extent's offset on line 0 (written under it, while it is carved).
 *
 * What it checks (region.h states it as the invariants of region.c):
 *   every table entry of a heap slot says MM_SLOT_HEAP, and its base entry
 *   names the slot; a huge mapping's base entries are 0;
 *   the header's zero prefix is zero, its size and commit mark are in range;
 *   desc_used == desc_top - |desc_free|, and the free list holds only
 *   UNUSED descriptors of this slot;
 *   the extents in use tile the data area: walking from its start, the
 *   extent map names an extent that starts exactly there, and the next
 *   starts where it ends, to the end of the data area; their number is
 *   desc_used (no descriptor in use is off the tiling);
 *   the map is exact for every datablock of a PAGE and for the first and
 *   last datablock of every extent;
 *   an extent in use lies below the commit mark (in a slot without holes),
 *   and only a FREE extent of a slot with holes is unmapped;
 *   a LARGE block's colour (its offset) is a whole number of colour steps,
 *   at most MM_COLOUR_ROOM and below its usable bytes; a huge block has none.
 */
#include "options.h"
#include "region.h"

static _Atomic(uint32_t) xcheck_pass;

uint32_t region_check_pass(void) { return atomic_fetch_add_relaxed(&xcheck_pass, 1) + 1; }

static bool fail(char *why, size_t why_size, const slot_t *slot, const char *what,
                 uintptr_t at) {
  os_format(why, why_size, "slot %p: %s (at %p)", (const void *)slot, what, (void *)at);
  return false;
}

/* The extent the map names for address a, or NULL, without following an
 * entry that names no descriptor in use (region_extent_at would): the
 * checker must report a corrupt map, not crash on it. */
static const extent_t *map_lookup(slot_t *slot, uintptr_t a, bool *bad) {
  uint32_t v = slot_extent_map(slot)[(a - (uintptr_t)slot) >> MM_DATABLOCK_SHIFT];
  *bad = false;
  if (!v) return NULL;
  if (v < MM_SLOT_EXTENTS_OFFSET || (v - MM_SLOT_EXTENTS_OFFSET) % sizeof(extent_t) ||
      (v - MM_SLOT_EXTENTS_OFFSET) / sizeof(extent_t) >= slot->desc_top) {
    *bad = true;
    return NULL;
  }
  return region_extent_at(slot, a);
}

static bool table_is_valid(const slot_t *slot, uintptr_t size, unsigned head, unsigned tail,
                           char *why, size_t why_size) {
  uintptr_t base = (uintptr_t)slot;
  for (uintptr_t off = 0; off < size; off += MM_SLOT_SIZE) {
    unsigned want = off ? tail : head;
    if (slot_table_entry(base + off) != want &&
        !(off >= MM_SLOT_SIZE && slot_table_entry(base + off) == MM_SLOT_HUGE_AT))
      return fail(why, why_size, slot, "slot table entry disagrees with the slot", base + off);
    if (slot_heap_base(base + off) != (head == MM_SLOT_HEAP ? base + off : 0))
      return fail(why, why_size, slot, "slot base entry disagrees with the slot", base + off);
  }
  return true;
}

static bool descriptors_are_valid(slot_t *slot, char *why, size_t why_size) {
  if (slot->desc_top > MM_SLOT_EXTENTS || slot->desc_used > slot->desc_top)
    return fail(why, why_size, slot, "descriptor counts out of range", (uintptr_t)slot);
  uint32_t nfree = 0;
  extent_t *first = slot_extents(slot), *top = first + slot->desc_top;
  for (extent_t *d = slot->desc_free; d; d = d->next) {
    if (d < first || d >= top || ((uintptr_t)d - (uintptr_t)first) % sizeof(extent_t) ||
        d->kind != MM_EXTENT_UNUSED)
      return fail(why, why_size, slot, "descriptor free list holds a descriptor in use",
                  (uintptr_t)d);
    if (++nfree > slot->desc_top)
      return fail(why, why_size, slot, "descriptor free list has a cycle", (uintptr_t)d);
  }
  if (slot->desc_used != slot->desc_top - nfree)
    return fail(why, why_size, slot, "desc_used is not desc_top minus the free list",
                (uintptr_t)slot);
  return true;
}

/* One extent of the tiling, found at address a. */
static bool extent_is_valid(slot_t *slot, const extent_t *e, uintptr_t a, uintptr_t data_end,
                            char *why, size_t why_size) {
  if (!e || e->node.start != a)
    return fail(why, why_size, slot, "no extent starts where the previous one ends", a);
  if (e->kind == MM_EXTENT_UNUSED || e->kind > MM_EXTENT_LOST)
    return fail(why, why_size, slot, "extent of no known kind", a);
  if (e->kind == MM_EXTENT_LOST && !slot->holes)
    return fail(why, why_size, slot, "lost extent in a slot without holes", a);
  uintptr_t end = extent_end(e);
  if (e->node.ndatablocks == 0 || end > data_end)
    return fail(why, why_size, slot, "extent runs past the data area", a);
  bool bad;
  if (map_lookup(slot, end - MM_DATABLOCK_SIZE, &bad) != e)
    return fail(why, why_size, slot, "extent map misses the extent's last datablock", a);
  if (e->kind == MM_EXTENT_PAGE || e->kind == MM_EXTENT_POOL)
    for (uintptr_t d = a; d < end; d += MM_DATABLOCK_SIZE)
      if (slot_extent_of(slot, d) != e)
        return fail(why, why_size, slot, "extent map misses a datablock of a page or pool block", d);
  if (e->kind == MM_EXTENT_LARGE &&
      (e->offset % MM_COLOUR_STEP || e->offset > MM_COLOUR_ROOM || e->offset >= extent_usable(e)))
    return fail(why, why_size, slot, "large block's colour not a step of one, or past its room", a);
  if ((e->flags & MM_EXTENT_UNMAPPED) && (e->kind != MM_EXTENT_FREE || !slot->holes))
    return fail(why, why_size, slot, "unmapped extent that is not free in a slot with holes", a);
  if (e->kind != MM_EXTENT_FREE && !slot->holes && end > (uintptr_t)slot + slot->committed)
    return fail(why, why_size, slot, "extent in use above the commit mark", a);
  return true;
}

bool region_slot_is_valid(slot_t *slot, char *why, size_t why_size) {
  uintptr_t base = (uintptr_t)slot;
  if (slot->huge || slot->size != MM_SLOT_SIZE)
    return fail(why, why_size, slot, "a heap slot with a huge slot's header", base);
  for (unsigned i = 0; i < 8; i++)
    if (slot->zero[i]) return fail(why, why_size, slot, "header's zero prefix written", base);
  if (slot->committed < MM_SLOT_META_SIZE || slot->committed > slot->size ||
      slot->committed % MM_DATABLOCK_SIZE)
    return fail(why, why_size, slot, "commit mark out of range", base + slot->committed);
  if (!table_is_valid(slot, MM_SLOT_SIZE, MM_SLOT_HEAP, MM_SLOT_HEAP, why, why_size) ||
      !descriptors_are_valid(slot, why, why_size))
    return false;
  uintptr_t a = slot_data_start(slot);
  uintptr_t data_end = a + (region_slot_data_datablocks() << MM_DATABLOCK_SHIFT);
  uint32_t n = 0;
  while (a < data_end) {
    bool bad;
    const extent_t *e = map_lookup(slot, a, &bad);
    if (bad) return fail(why, why_size, slot, "extent map entry names no descriptor", a);
    if (!extent_is_valid(slot, e, a, data_end, why, why_size)) return false;
    if (++n > slot->desc_used)
      return fail(why, why_size, slot, "more extents tile the slot than descriptors in use", a);
    a = extent_end(e);
  }
  if (n != slot->desc_used)
    return fail(why, why_size, slot, "a descriptor in use is not part of the tiling", base);
  return true;
}

bool region_huge_is_valid(const extent_t *e, char *why, size_t why_size) {
  slot_t *slot = slot_of_extent(e);
  uintptr_t base = (uintptr_t)slot, off = e->node.start - base;
  if (!slot->huge || e != slot_extents(slot) || slot->desc_used != 1)
    return fail(why, why_size, slot, "huge block not the one extent of a huge mapping",
                e->node.start);
  if (off < MM_SLOT_META_SIZE || off % MM_SLOT_META_SIZE || off > MM_SLOT_SIZE)
    return fail(why, why_size, slot, "huge block at an offset no alignment gives", e->node.start);
  if (e->kind != MM_EXTENT_LARGE && e->kind != MM_EXTENT_CACHED)
    return fail(why, why_size, slot, "huge block neither in use nor cached", e->node.start);
  if (e->offset) return fail(why, why_size, slot, "huge block with a colour", e->node.start);
  if (extent_end(e) > base + slot->size || off + (e->node.ndatablocks << MM_DATABLOCK_SHIFT) >
                                               slot->committed)
    return fail(why, why_size, slot, "huge block past its mapping or its commit mark",
                e->node.start);
  return table_is_valid(slot, slot->size, MM_SLOT_HUGE, MM_SLOT_HUGE_TAIL, why, why_size);
}
