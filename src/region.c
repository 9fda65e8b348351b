/* region.c — the managed address space: slots, the slot table, extent maps
 * and extent descriptors, and huge blocks' own mappings.
 *
 * Layer: region (above os; below the local heaps).
 *
 * The region is the set of slots: MM_SLOT_SIZE-aligned reservations, each
 * owned by one local heap for its whole life, reserved when a heap needs
 * room and released when one stands empty and address space runs short.
 * (The original plan reserved the whole region once; reserving slot by
 * slot gives the same address arithmetic and also works under RLIMIT_AS,
 * valgrind and the sanitizers, which refuse or choke on a multi-TiB
 * reservation: docs/design.md.)
 *
 *   mm_xslot_table[p >> MM_SLOT_SHIFT]  -> MM_SLOT_NONE / HEAP / HUGE / HUGE_TAIL
 *   slot base = p & ~(MM_SLOT_SIZE - 1)
 *   mm_xslot_base[p >> MM_SLOT_SHIFT]   -> that base for a heap slot, else 0
 *                                          (the free fast path's one load)
 *   extent_map[(p - base) >> MM_DATABLOCK_SHIFT] -> base + offset of the extent
 *
 * so free(p) learns whether p is ours and what extent holds it with two
 * loads and no lock.
 *
 * Invariants:
 *   a slot table entry is written (release) after its slot header, extent
 *   map and free extent exist, and cleared before the slot is unmapped;
 *   mm_xslot_base[i] != 0 iff mm_xslot_table[i] == MM_SLOT_HEAP, and then
 *   it is slot i's base (slot_table_set writes both);
 *   a heap slot's entries are written under the owning heap's lock; a huge
 *   mapping's entries by the one thread that creates, resizes or unmaps
 *   it, which no other thread can reach at that moment (it is not yet
 *   returned, or it is being freed, or it is out of the huge cache);
 *   extent_map is exact for every datablock of a PAGE and for the first and
 *   last datablock of every FREE, LARGE and CACHED extent; other entries may
 *   be stale, so readers check that the extent found covers the address;
 *   descriptors: desc_used == descriptors not on desc_free below desc_top.
 * region_check.c checks all of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "options.h"
#include "region.h"

#if MM_VALGRIND
#include <valgrind/memcheck.h>
#endif

_Atomic(uint8_t) mm_xslot_table[MM_SLOT_TABLE_SIZE];
_Atomic(uintptr_t) mm_xslot_base[MM_SLOT_TABLE_SIZE];

/* Set the entries of every slot [base, base + size) touches (base is slot
 * aligned; size need not be), the base table's with them: a heap slot's
 * base is written before its type (the fast path reads only the base),
 * and every other type clears it. */
static void slot_table_set(uintptr_t base, uintptr_t size, uint8_t head,
                           uint8_t tail) {
  size_t i = base >> MM_SLOT_SHIFT;
  size_t n = (size + MM_SLOT_SIZE - 1) >> MM_SLOT_SHIFT;
  for (size_t k = n; k-- > 0;) { /* head last: readers start from it */
    uint8_t type = k ? tail : head;
    if (type == MM_SLOT_HEAP) atomic_store_release(&mm_xslot_base[i + k], base + (k << MM_SLOT_SHIFT));
    atomic_store_release(&mm_xslot_table[i + k], type);
    if (type != MM_SLOT_HEAP) atomic_store_release(&mm_xslot_base[i + k], 0);
  }
}

/* ---- descriptors ---------------------------------------------------------- */

extent_t *region_extent_new(slot_t *slot) {
  extent_t *e = slot->desc_free;
  if (e) {
    slot->desc_free = e->next;
  } else {
    if (slot->desc_top >= MM_SLOT_EXTENTS) return NULL;
    e = slot_extents(slot) + slot->desc_top++;
  }
  memset(e, 0, sizeof(*e));
  slot->desc_used++;
  return e;
}

void region_extent_delete(slot_t *slot, extent_t *e) {
  e->kind = MM_EXTENT_UNUSED;
  e->node.start = 0;
  e->node.ndatablocks = 0;
  e->next = slot->desc_free;
  slot->desc_free = e;
  slot->desc_used--;
}

/* ---- extent map -------------------------------------------------------------- */

/* Map every datablock of e (pages: the free fast path may see any of them). */
void region_map_all(extent_t *e) {
  slot_t *slot = slot_of_extent(e);
  uint32_t v = (uint32_t)((uintptr_t)e - (uintptr_t)slot);
  uint32_t *map = slot_extent_map(slot);
  size_t first = (e->node.start - (uintptr_t)slot) >> MM_DATABLOCK_SHIFT;
  for (size_t i = 0; i < e->node.ndatablocks; i++) map[first + i] = v;
}

/* Map the first and last datablock of e (free, large and cached extents:
 * enough for the free path's start check and for coalescing). */
void region_map_ends(extent_t *e) {
  slot_t *slot = slot_of_extent(e);
  uint32_t v = (uint32_t)((uintptr_t)e - (uintptr_t)slot);
  uint32_t *map = slot_extent_map(slot);
  size_t first = (e->node.start - (uintptr_t)slot) >> MM_DATABLOCK_SHIFT;
  map[first] = v;
  map[first + e->node.ndatablocks - 1] = v;
}

/* The extent covering datablock address a of slot, or NULL (stale entries
 * are rejected by the range check). */
extent_t *region_extent_at(slot_t *slot, uintptr_t a) {
  uint32_t v = slot_extent_map(slot)[(a - (uintptr_t)slot) >> MM_DATABLOCK_SHIFT];
  if (!v) return NULL;
  extent_t *e = (extent_t *)((uintptr_t)slot + v);
  if (e->kind == MM_EXTENT_UNUSED || a < e->node.start ||
      a >= e->node.start + (e->node.ndatablocks << MM_DATABLOCK_SHIFT))
    return NULL;
  return e;
}

/* ---- slots ------------------------------------------------------------------ */

/* Under valgrind the management area is hidden from memcheck: no-access
 * (so the leak checker does not take a descriptor's start address for a
 * pointer that keeps a block alive) with address errors off in the range
 * (so our own reads and writes of it are not reported). */
static void slot_hide_from_valgrind(slot_t *slot) {
#if MM_VALGRIND
  VALGRIND_MAKE_MEM_NOACCESS(slot, MM_SLOT_META_SIZE);
  VALGRIND_DISABLE_ADDR_ERROR_REPORTING_IN_RANGE(slot, MM_SLOT_META_SIZE);
#else
  (void)slot;
#endif
}

static void slot_header_init(slot_t *slot, uint32_t heap, uint32_t huge,
                             uintptr_t size) {
  memset(slot->zero, 0, sizeof(slot->zero));
  slot->heap = heap;
  slot->huge = huge;
  slot->size = size;
  slot->committed = MM_SLOT_META_SIZE;
  slot->desc_free = NULL;
  slot->desc_top = 0;
  slot->desc_used = 0;
  slot->holes = 0;
  slot->next = NULL;
}

/* A new slot for local heap `heap`, with its whole data area as one FREE
 * extent (returned in *free_out, not yet in any tree).  The caller holds the
 * heap's lock (the region cannot name it: extent.c, which calls, asserts
 * it).  NULL with errno ENOMEM when the OS refuses. */
slot_t *region_slot_new(uint32_t heap, extent_t **free_out) {
  /* Slots in rising address order (a hint; any heap's): first fit by
   * address then reuses the oldest slots' memory, most likely resident,
   * before a newer slot's untouched memory.  The kernel hands out
   * addresses top-down, under the libraries, so the first slot goes where
   * nothing usually is, 16 to 20 TiB up (at a random slot), with room to
   * grow above it. */
  static _Atomic(uintptr_t) xtop;
  uintptr_t top = atomic_load_relaxed(&xtop);
  if (MM_SANITIZED) /* their shadow memory lies up there: where the kernel puts it */
    top = 0;
  else if (!top)
    top = ((uintptr_t)16 << 40) + (uintptr_t)(os_random() % 32768) * MM_SLOT_SIZE;
  else if (top + MM_SLOT_SIZE > ((uintptr_t)1 << 47))
    top = 0;
  void *base = os_reserve_above(MM_SLOT_SIZE, MM_SLOT_SIZE, top);
  if (!base) {
    errno = ENOMEM;
    return NULL;
  }
  for (uintptr_t end = (uintptr_t)base + MM_SLOT_SIZE; end > top;)
    if (atomic_compare_exchange_weak_explicit(&xtop, &top, end, memory_order_relaxed,
                                              memory_order_relaxed))
      break;
  if (!os_commit(base, MM_SLOT_META_SIZE)) {
    os_release(base, MM_SLOT_SIZE);
    errno = ENOMEM;
    return NULL;
  }
  slot_t *slot = base;
  slot_hide_from_valgrind(slot);
  slot_header_init(slot, heap, 0, MM_SLOT_SIZE);
  if (options.secure) {
    /* Guards: between the management area and the data, and after the data
     * (the next slot's header may follow). */
    if (!os_guard((char *)base + MM_SLOT_META_SIZE - MM_DATABLOCK_SIZE, MM_DATABLOCK_SIZE, true) ||
        !os_guard((char *)base + MM_SLOT_SIZE - MM_DATABLOCK_SIZE, MM_DATABLOCK_SIZE, true)) {
      os_release(base, MM_SLOT_SIZE);
      errno = ENOMEM;
      return NULL;
    }
  }
  extent_t *e = region_extent_new(slot);
  e->kind = MM_EXTENT_FREE;
  e->flags = MM_EXTENT_ZERO;
  e->node.start = (uintptr_t)base + MM_SLOT_META_SIZE;
  e->node.ndatablocks = region_slot_data_datablocks();
  region_map_ends(e);
  slot_table_set((uintptr_t)base, MM_SLOT_SIZE, MM_SLOT_HEAP, MM_SLOT_HEAP);
  *free_out = e;
  return slot;
}

/* Datablocks in a slot's data area: all of them, but the last in secure
 * mode (a guard). */
size_t region_slot_data_datablocks(void) {
  return MM_SLOT_DATA_DATABLOCKS - (options.secure ? 1 : 0);
}

extent_t *region_slot_first(slot_t *slot) {
  return region_extent_at(slot, slot_data_start(slot));
}

extent_t *region_slot_next(slot_t *slot, const extent_t *e) {
  uintptr_t end = extent_end(e);
  uintptr_t data_end = slot_data_start(slot) + (region_slot_data_datablocks() << MM_DATABLOCK_SHIFT);
  return end < data_end ? region_extent_at(slot, end) : NULL;
}

/* Unmap a slot whose data area is one FREE extent (already out of the
 * tree).  Caller holds the heap's lock (asserted in extent.c). */
void region_slot_release(slot_t *slot) {
  uintptr_t base = (uintptr_t)slot;
  uintptr_t size = slot->size;
  slot_table_set(base, size, 0, 0);
#if MM_VALGRIND
  VALGRIND_ENABLE_ADDR_ERROR_REPORTING_IN_RANGE(slot, MM_SLOT_META_SIZE);
#endif
  os_release(slot, size);
}

/* Commit the data area of slot up to (not including) address `end`, in
 * 4 MiB steps so that mprotect runs rarely and the slot keeps two mappings
 * (committed below, reserved above). */
bool region_commit_to(slot_t *slot, uintptr_t end) {
  uintptr_t base = (uintptr_t)slot;
  uintptr_t need = end - base;
  if (need <= slot->committed) return true;
  uintptr_t step = (uintptr_t)4 << 20;
  uintptr_t to = (need + step - 1) & ~(step - 1);
  uintptr_t top = slot->size - (options.secure ? MM_DATABLOCK_SIZE : 0); /* not the guard */
  if (to > top) to = top;
  if (!os_commit((void *)(base + slot->committed), to - slot->committed)) {
    /* Out of commit charge: try exactly what is needed before giving up. */
    to = (need + MM_DATABLOCK_SIZE - 1) & ~(uintptr_t)(MM_DATABLOCK_SIZE - 1);
    if (!os_commit((void *)(base + slot->committed), to - slot->committed))
      return false;
  }
  if (option_live(&options.hugepages) == 1)
    os_hugepages((void *)(base + slot->committed), to - slot->committed, true, false);
  slot->committed = to;
  return true;
}

/* ---- huge blocks -------------------------------------------------------------
 * A huge block is a mapping of its own, slot-aligned, laid out like a slot:
 * header, extent map and one LARGE extent (the slot's first descriptor) for
 * the block, which starts `off` bytes in:
 *   off = MM_SLOT_META_SIZE            alignments up to 2 MiB
 *   off = align                        alignments in (2 MiB, MM_SLOT_SIZE)
 *   off = MM_SLOT_SIZE                 larger alignments: the block starts at
 *                                      a slot boundary (table kind
 *                                      MM_SLOT_HUGE_AT), its header lies one
 *                                      slot below
 * The mapping is as long as the block needs, to the datablock (not to the slot):
 * a huge block costs only its own address space. */

static uintptr_t huge_offset(size_t align) {
  if (align <= MM_SLOT_META_SIZE) return MM_SLOT_META_SIZE;
  return align < MM_SLOT_SIZE ? align : MM_SLOT_SIZE;
}

static uintptr_t huge_mapping_size(uintptr_t off, size_t size) {
  /* secure mode: at least one reserved (inaccessible) datablock after the block */
  return off + size + (options.secure ? MM_DATABLOCK_SIZE : 0);
}

/* Slot table entries of a huge mapping [base, base + msize). */
static void huge_table_set(uintptr_t base, uintptr_t msize, uintptr_t off) {
  slot_table_set(base, msize, MM_SLOT_HUGE, MM_SLOT_HUGE_TAIL);
  if (off >= MM_SLOT_SIZE) atomic_store_release(&mm_xslot_table[(base + off) >> MM_SLOT_SHIFT],
                                                MM_SLOT_HUGE_AT);
}

extent_t *region_huge_new(uint32_t heap, size_t size, size_t align) {
  size = (size + MM_DATABLOCK_SIZE - 1) & ~(MM_DATABLOCK_SIZE - 1);
  if (size > PTRDIFF_MAX - 2 * MM_SLOT_SIZE - align) {
    errno = ENOMEM;
    return NULL;
  }
  uintptr_t off = huge_offset(align);
  uintptr_t msize = huge_mapping_size(off, size);
  /* base is slot-aligned, and base + off aligned to align */
  void *base = off >= MM_SLOT_SIZE ? os_reserve_offset(msize, align, off)
                                   : os_reserve(msize, MM_SLOT_SIZE);
  if (!base) {
    errno = ENOMEM;
    return NULL;
  }
  if (!os_commit(base, MM_SLOT_META_SIZE) || !os_commit((char *)base + off, size)) {
    os_release(base, msize);
    errno = ENOMEM;
    return NULL;
  }
  slot_t *slot = base;
  slot_hide_from_valgrind(slot);
  slot_header_init(slot, heap, 1, msize);
  slot->committed = off + size;
  extent_t *e = region_extent_new(slot);
  e->kind = MM_EXTENT_LARGE;
  e->node.start = (uintptr_t)base + off;
  e->node.ndatablocks = size >> MM_DATABLOCK_SHIFT;
  /* The extent map covers the first slot only: enough for free(p), which only
   * ever looks at the block's first datablock (HUGE_AT blocks are found as
   * the slot's first descriptor). */
  if (off < MM_SLOT_SIZE)
    slot_extent_map(slot)[off >> MM_DATABLOCK_SHIFT] = (uint32_t)((uintptr_t)e - (uintptr_t)slot);
  huge_table_set((uintptr_t)base, msize, off);
  return e;
}

/* The huge block starting at a slot boundary (table kind MM_SLOT_HUGE_AT). */
extent_t *region_huge_at(uintptr_t a) {
  slot_t *slot = (slot_t *)((uintptr_t)slot_of_address(a) - MM_SLOT_SIZE);
  extent_t *e = slot_extents(slot);
  return e->kind != MM_EXTENT_UNUSED && e->node.start == a ? e : NULL;
}

void region_huge_free(extent_t *e) { region_slot_release(slot_of_extent(e)); }

/* Bytes of huge block e's mapping that are committed from its start on
 * (the block and any room kept behind it). */
size_t region_huge_committed(const extent_t *e) {
  const slot_t *slot = slot_of_extent(e);
  return (uintptr_t)slot + slot->committed - e->node.start;
}

/* Bytes huge block e can hold without a new mapping. */
size_t region_huge_room(const extent_t *e) {
  const slot_t *slot = slot_of_extent(e);
  uintptr_t end = (uintptr_t)slot + slot->size - (options.secure ? MM_DATABLOCK_SIZE : 0);
  return end - e->node.start;
}

/* Move huge block e onto the freed huge mapping c, no copy: e's memory
 * replaces the head of c's block (the stale pages there go), c's resident
 * pages behind it become e's room to grow, and e's own mapping is released.
 * Both blocks start at the same offset in their mappings (so huge pages stay
 * aligned) and c has room for size bytes.  Returns c, now the block, sized
 * to size; NULL with nothing changed when the kernel refuses (a block whose
 * memory is more than one kernel mapping cannot be moved in one call). */
extent_t *region_huge_move_onto(extent_t *e, extent_t *c, size_t size) {
  slot_t *slot = slot_of_extent(e), *cs = slot_of_extent(c);
  size = (size + MM_DATABLOCK_SIZE - 1) & ~(MM_DATABLOCK_SIZE - 1);
  uintptr_t off = e->node.start - (uintptr_t)slot;
  size_t old_size = e->node.ndatablocks << MM_DATABLOCK_SHIFT;
  mm_assert(c->node.start - (uintptr_t)cs == off && region_huge_room(c) >= size && size >= old_size);
  if (off + size > cs->committed) {
    if (!os_commit((char *)cs + cs->committed, off + size - cs->committed)) return NULL;
    cs->committed = off + size;
  }
  if (!os_remap_to((void *)e->node.start, old_size, (void *)c->node.start)) return NULL;
  c->node.ndatablocks = size >> MM_DATABLOCK_SHIFT;
  /* e's old range is still all ours (the move left it mapped): its table
   * entries go first, then the range, so that no other mapping can be there
   * when its entries are cleared */
  region_slot_release(slot);
  if (option_live(&options.hugepages) != 0) os_hugepages_block((void *)c->node.start, size, true, false);
  return c;
}

/* A huge block at p grew from old_size to size bytes, its new part fresh
 * (the old part keeps its advice, moved or not): huge pages for the new
 * part, probed (what lies past old_size is nobody's data yet). */
static void huge_grown(void *p, size_t old_size, size_t size) {
  if (option_live(&options.hugepages) != 0)
    os_hugepages_block((char *)p + old_size, size - old_size, true, true);
}

/* Resize a huge block to `size` bytes, in place if the mapping can grow (or
 * shrink) where it is, else by moving its memory (no copy) into a new
 * reservation.  keep_tail: when shrinking, keep the memory past the new end
 * (a reused mapping that will likely grow again) instead of purging and
 * unmapping them.  Returns the extent (its start may have moved) or NULL
 * with nothing changed. */
extent_t *region_huge_resize(extent_t *e, size_t size, bool keep_tail) {
  slot_t *slot = slot_of_extent(e);
  size = (size + MM_DATABLOCK_SIZE - 1) & ~(MM_DATABLOCK_SIZE - 1);
  uintptr_t base = (uintptr_t)slot;
  uintptr_t off = e->node.start - base;
  if (size > PTRDIFF_MAX - 2 * MM_SLOT_SIZE - off) {
    errno = ENOMEM;
    return NULL;
  }
  uintptr_t old_msize = slot->size;
  uintptr_t new_msize = huge_mapping_size(off, size);
  size_t old_size = e->node.ndatablocks << MM_DATABLOCK_SHIFT;
  if (new_msize <= old_msize) {
    /* Shrink (or grow within what is mapped): keep the mapping's start,
     * give the tail back unless asked to keep it. */
    if (size < old_size && !keep_tail) {
      os_purge((void *)(e->node.start + size), old_size - size);
      if (new_msize < old_msize) {
        /* table first: once the tail is unmapped another thread may map a
         * block of its own there and set its entries */
        slot_table_set(base, old_msize, 0, 0);
        huge_table_set(base, new_msize, off);
        os_release((void *)(base + new_msize), old_msize - new_msize);
        slot->size = new_msize;
        if (slot->committed > new_msize) slot->committed = new_msize;
      }
    }
    if (off + size > slot->committed) {
      if (!os_commit((void *)(base + slot->committed), off + size - slot->committed)) {
        errno = ENOMEM;
        return NULL;
      }
      slot->committed = off + size;
    }
    e->node.ndatablocks = size >> MM_DATABLOCK_SHIFT;
    return e;
  }
  /* Grow in place when the address space behind the mapping is free. */
  if (os_reserve_at((void *)(base + old_msize), new_msize - old_msize)) {
    if (!os_commit((void *)(base + slot->committed), off + size - slot->committed)) {
      os_release((void *)(base + old_msize), new_msize - old_msize);
      errno = ENOMEM;
      return NULL;
    }
    huge_table_set(base, new_msize, off);
    slot->size = new_msize;
    slot->committed = off + size;
    huge_grown((void *)e->node.start, old_size, size);
    e->node.ndatablocks = size >> MM_DATABLOCK_SHIFT;
    return e;
  }
  /* Move: a new reservation, then mremap the data and the header onto it
   * (the grown part of the data is committed there), and the old mapping,
   * which the moves left mapped and empty, is unmapped whole.  Data and
   * header move apart: one mremap must stay within one kernel mapping, and
   * the huge-page advice on the data (or an alignment gap) makes them two.
   * (The block keeps only the slot alignment: realloc promises no more.) */
  uintptr_t noff = off >= MM_SLOT_SIZE ? MM_SLOT_META_SIZE : off;
  if (noff != off) { /* a HUGE_AT block: its data cannot move with the header */
    errno = ENOMEM;
    return NULL;
  }
  void *to = os_reserve(new_msize, MM_SLOT_SIZE);
  if (!to) {
    errno = ENOMEM;
    return NULL;
  }
  if (!os_commit((char *)to + off + old_size, size - old_size) ||
      !os_remap_to((void *)e->node.start, old_size, (char *)to + off)) {
    os_release(to, new_msize);
    errno = ENOMEM;
    return NULL;
  }
  if (!os_remap_to(slot, MM_SLOT_META_SIZE, to)) {
    /* put the data back where it was (still ours: the move left it mapped) */
    if (!os_remap_back((char *)to + off, old_size, (void *)e->node.start))
      os_fatal("mmalloc: realloc(): could not move a huge block back (errno %d)\n", errno);
    os_release(to, new_msize);
    errno = ENOMEM;
    return NULL;
  }
  /* The old range, all of it still mapped by us: its table entries first,
   * then the range (region_slot_release's order). */
  slot_table_set(base, old_msize, 0, 0);
  os_release((void *)base, old_msize);
  slot_t *ns = to;
  slot_hide_from_valgrind(ns);
  ns->size = new_msize;
  ns->committed = off + size;
  extent_t *ne = slot_extents(ns) + (e - slot_extents(slot));
  ne->node.start = (uintptr_t)to + off;
  ne->node.ndatablocks = size >> MM_DATABLOCK_SHIFT;
  huge_grown((void *)ne->node.start, old_size, size);
  huge_table_set((uintptr_t)to, new_msize, off);
  return ne;
}
