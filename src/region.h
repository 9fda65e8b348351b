/* region.h — the managed address space: slots, the slot table, extent
 * descriptors and the extent map (region.c), and the region checker
 * (region_check.c).
 *
 * Layer: region (above os and the tree; below the local heaps).
 *
 * An extent descriptor (extent_t) is the one structure every layer above
 * shares: the region hands descriptors out and maps datablocks to them,
 * the local heap files keep free extents in their tree and lists, and the
 * page layer uses line 0 of a PAGE's descriptor as the page header that
 * small objects do not carry.  Who may write which field is stated on the
 * struct, field by field.
 */
#ifndef MM_REGION_H
#define MM_REGION_H

#include "interval_tree.h"
#include "os.h"

MM_HIDDEN_BEGIN

struct block_s;       /* a free small object (page.h) */
struct thread_heap_s; /* a page's owner (thread_heap.h) */

typedef enum extent_kind_e {
  MM_EXTENT_UNUSED = 0, /* descriptor on its slot's free list */
  MM_EXTENT_FREE,       /* node of the local heap's interval tree */
  MM_EXTENT_PAGE,       /* small objects of one class (page.h) */
  MM_EXTENT_LARGE,      /* one user block */
  MM_EXTENT_CACHED,     /* a free page block in the page cache, or a freed
                           huge mapping in the huge cache (local heap) */
  MM_EXTENT_POOL,       /* a page block lent out whole: an object pool's, or
                           a raw one (mm_page_block_alloc); pool.h */
  MM_EXTENT_LOST,       /* in a slot with holes: a free extent whose address
                           space, given back under pressure, another mapping
                           took before we could map it again; never used
                           again, on no list, it keeps the slot tiled */
} extent_kind_t;

/* The descriptor of an extent: three cache lines, in the slot's management
 * area, never next to user data.
 *
 * Who touches what:
 *   line 0, PAGE:   what a free reads, from any thread; its writes are
 *                   rare, so the line stays shared in the caches of every
 *                   thread that frees into the page.  xcarved: written by
 *                   the owner (when carving extends), read by any thread
 *                   (relaxed); xowner, xowner_tid: any thread reads
 *                   (relaxed); written only through page.h's ownership
 *                   calls, by the owner, under the home heap's lock
 *                   (abandon, adopt, retire), or by a taker holding the
 *                   owner's slow-path lock (remote.c); page_start, magic,
 *                   block_size: const while the extent is a page.
 *           POOL:   pool_heap, written when the pool block is lent or
 *                   given back (pool.c, pool_quarantine.c).
 *   line 1, PAGE:   free, local_free, used: the owner thread (or a thread
 *                   holding the owner's slow-path lock, taking over its
 *                   full pages), written on every malloc and free of its
 *                   own: kept off line 0, or a thread freeing into the page
 *                   (a consumer) and its owner (taking back the blocks)
 *                   would pull line 0 from each other's cache block by
 *                   block.
 *                   kind: the home heap's lock (every change of kind, so
 *                   that coalescing neighbours read it safely); PAGE
 *                   reserved, capacity, size_class, idle: owner;
 *                   FREE/CACHED flags, freed_at, dirty: home heap's lock;
 *                   next/prev: the list the extent is on (a thread heap's
 *                   queue or full list: its owner; the page cache, huge
 *                   cache, abandoned lists: the home heap's lock; the
 *                   descriptor free list: the region, under the same lock);
 *                   mark: the checkers.
 *   line 2:         node.start, node.ndatablocks: const while in use, but
 *                   for resizes under the home heap's lock; the tree
 *                   links: home heap's lock.
 *
 * Page invariant (page.h): used + |free| + |local_free| == reserved <=
 * capacity and xcarved == reserved * step (page.h); blocks in other threads'
 * outgoing batches or in the owner's inbox still count as used.
 */
typedef struct extent_s {
  /* line 0: what every free reads, the owner's and other threads' */
  uint64_t unused_line0;
  void *pool_heap;               /* POOL: the first-class heap of its pool, or NULL */
  _Atomic(uintptr_t) xowner_tid; /* the owner's id | tags (page.h), or 0 */
  uintptr_t page_start;          /* == node.start, kept on this line for free() */
  union {
    _Atomic(uint64_t) xcarved;   /* PAGE: reserved * step, the bound of page_offset_is_block */
    _Atomic(uint64_t) xlimit;    /* POOL: bytes carved so far, from page_start */
  };
  uint64_t magic;                /* ceil(2^64 / block_size): divisibility test */
  uint32_t offset;               /* LARGE: bytes from node.start to the block (its
                                    colour, config.h; 0 for huge blocks) */
  uint32_t block_size;
  _Atomic(struct thread_heap_s *) xowner; /* owning thread heap, or NULL */
  /* line 1 */
  uint32_t reserved; /* blocks carved so far (lazy extension) */
  uint32_t capacity; /* blocks that fit in the page */
  uint8_t kind;      /* extent_kind_t */
  uint8_t size_class;
  uint8_t flags;     /* MM_EXTENT_ZERO, _GUARD, _UNMAPPED, _FORKED, _QUARANTINED, _THP, _FRESH */
  uint8_t idle;      /* PAGE: heartbeats in a row it was seen empty */
  union {
    uint32_t freed_at; /* FREE/CACHED: when it became free, ms */
    uint32_t fostered; /* PAGE: 1 on its owner's fostered list (thread_heap.h), else 0 */
  };
  struct extent_s *next; /* the one list the extent is on (see above) */
  struct extent_s *prev;
  uint32_t dirty;    /* FREE/CACHED: datablocks that may be resident (<= ndatablocks) */
  uint32_t mark;     /* checkers: the pass that last saw it on a list */
  struct block_s *free;       /* PAGE: blocks malloc hands out next */
  struct block_s *local_free; /* PAGE: blocks the owner freed since the last refill */
  uint32_t used;              /* PAGE: blocks handed out and not freed back */
  uint32_t trim_at;           /* PAGE: a thread's first page of its class: where its head
                                 ends, bytes past page_start, until a refill carves past
                                 it (thread_heap_first_page_carved); else 0 */
  /* line 2 */
  itree_node_t node; /* node.start, node.ndatablocks: the extent, for every kind */
  uint64_t reserved_line2[2];
} extent_t;

/* extent_t.flags */
#define MM_EXTENT_ZERO 2u     /* every byte reads as zero (fresh or purged) */
#define MM_EXTENT_GUARD 4u    /* PAGE/LARGE/CACHED: its last datablock is a guard */
#define MM_EXTENT_UNMAPPED 8u /* FREE: its address space was given back (munmap) */
#define MM_EXTENT_FORKED 16u  /* PAGE: inherited by a forked child from a thread that
                                 does not exist there; its count may be one off */
#define MM_EXTENT_QUARANTINED 32u /* POOL: given back in secure mode, held until
                                     checked (pool.c: the release quarantine) */
#define MM_EXTENT_THP 64u /* POOL: a pool's 2 MiB block, advised as a transparent
                             huge page (pool.c) */
#define MM_EXTENT_FRESH 128u /* PAGE: every block on its free list was carved and
                               never handed out (secure mode does not fill those:
                               page.c) */

_Static_assert(sizeof(extent_t) == 192, "extent descriptor is three lines");
_Static_assert(offsetof(extent_t, xowner) + sizeof(void *) == 64,
               "every free reads only line 0");
_Static_assert(offsetof(extent_t, free) >= 64 && offsetof(extent_t, used) + sizeof(uint32_t) <= 128,
               "the owner's page state is on line 1, apart from what other threads' frees read");

/* The slot header, at the start of the slot's management area:
 *
 *   slot base (128 MiB aligned)
 *   +0        slot_t (its first 64 bytes are always zero)   1 datablock
 *   +4 KiB    uint32_t extent_map[MM_SLOT_DATABLOCKS]         128 KiB
 *   +132 KiB  extent_t extents[MM_SLOT_EXTENTS]              1.5 MiB
 *   +2 MiB    data area ......................................... 126 MiB
 *
 * extent_map[i] is the byte offset from the slot base of the descriptor of
 * the extent covering datablock i, or 0.  An offset of 0 names the slot
 * header's zero prefix, which reads as an extent with no owner, so the free
 * fast path can follow any entry without a test and still miss.
 * The management area is committed (made read-write) on reservation; the
 * data area is committed from the bottom up, to `committed` (or, in a slot
 * with holes, exactly where extents are in use).
 *
 * Who touches what: heap, huge: const; everything else: the owning local
 * heap's lock (huge mappings: their single block's owner, see large.c). */
typedef struct slot_s {
  uint64_t zero[8];    /* reads as an unowned extent's line 0 */
  uint32_t heap;       /* owning local heap, const */
  uint32_t huge;       /* 1 for a huge block's own mapping, const */
  uintptr_t size;      /* bytes reserved (MM_SLOT_SIZE, or more when huge) */
  uintptr_t committed; /* data area is read-write below base + committed */
  extent_t *desc_free; /* descriptor free list */
  uint32_t desc_top;   /* descriptors ever handed out */
  uint32_t desc_used;  /* descriptors in use */
  uint32_t holes;      /* some free extents were unmapped in place: commit
                          exactly what is carved, not a prefix */
  uint32_t tree;       /* which of its local heap's trees holds its free
                          extents (MM_TREE_MAIN, or MM_TREE_MEDIUM: medium
                          large blocks only), const after creation */
  struct slot_s *next; /* the heap's slot list */
} slot_t;

#define MM_SLOT_MAP_OFFSET ((uintptr_t)4096)
#define MM_SLOT_EXTENTS_OFFSET \
  ((MM_SLOT_MAP_OFFSET + MM_SLOT_DATABLOCKS * sizeof(uint32_t) + 63) & ~(uintptr_t)63)
/* Secure mode's guard map: a bit per datablock of the slot, set where a
 * guard is installed (extent.c: guards are removed lazily). */
#define MM_SLOT_GUARDS_OFFSET \
  ((MM_SLOT_EXTENTS_OFFSET + MM_SLOT_EXTENTS * sizeof(extent_t) + 4095) & ~(uintptr_t)4095)
_Static_assert(sizeof(slot_t) <= 4096, "slot header fits its datablock");
_Static_assert(MM_SLOT_EXTENTS_OFFSET + MM_SLOT_EXTENTS * sizeof(extent_t) <=
                   MM_SLOT_META_SIZE,
               "management area fits before the data area");
_Static_assert(MM_SLOT_GUARDS_OFFSET + MM_SLOT_DATABLOCKS / 8 <= MM_SLOT_META_SIZE - MM_DATABLOCK_SIZE,
               "the guard map fits before the management area's own guard");

/* Slot table entries (one byte per slot-sized piece of address space). */
#define MM_SLOT_NONE 0      /* not mmalloc's */
#define MM_SLOT_HEAP 1      /* a local heap's slot */
#define MM_SLOT_HUGE 2      /* first slot of a huge block's mapping */
#define MM_SLOT_HUGE_TAIL 3 /* the rest of it */
#define MM_SLOT_HUGE_AT 4   /* a huge block starts at this slot's first byte
                               (alignment >= MM_SLOT_SIZE); header one slot below */

/* ---- lists of extents (next/prev): a thread heap's page queues and full
 * list, a local heap's page cache, huge cache and abandoned pages.  An
 * extent is on at most one list at a time (the checkers verify it). ---- */

typedef struct extent_list_s {
  extent_t *first;
  extent_t *last;
} extent_list_t;

MM_INLINE void extent_list_push_front(extent_list_t *q, extent_t *e) {
  e->prev = NULL;
  e->next = q->first;
  if (q->first) q->first->prev = e; else q->last = e;
  q->first = e;
}
MM_INLINE void extent_list_push_back(extent_list_t *q, extent_t *e) {
  e->next = NULL;
  e->prev = q->last;
  if (q->last) q->last->next = e; else q->first = e;
  q->last = e;
}
MM_INLINE void extent_list_remove(extent_list_t *q, extent_t *e) {
  if (e->prev) e->prev->next = e->next; else q->first = e->next;
  if (e->next) e->next->prev = e->prev; else q->last = e->prev;
  e->next = e->prev = NULL;
}

/* ---- address arithmetic (any thread, no lock) ---------------------------------- */

extern _Atomic(uint8_t) mm_xslot_table[MM_SLOT_TABLE_SIZE];
extern _Atomic(uintptr_t) mm_xslot_base[MM_SLOT_TABLE_SIZE];

MM_INLINE slot_t *slot_of_address(uintptr_t a) {
  return (slot_t *)(a & ~(MM_SLOT_SIZE - 1));
}
MM_INLINE slot_t *slot_of_extent(const extent_t *e) {
  return slot_of_address((uintptr_t)e);
}
MM_INLINE uint32_t *slot_extent_map(slot_t *slot) {
  return (uint32_t *)((uintptr_t)slot + MM_SLOT_MAP_OFFSET);
}
MM_INLINE extent_t *slot_extents(slot_t *slot) {
  return (extent_t *)((uintptr_t)slot + MM_SLOT_EXTENTS_OFFSET);
}
MM_INLINE uint64_t *slot_guard_map(slot_t *slot) {
  return (uint64_t *)((uintptr_t)slot + MM_SLOT_GUARDS_OFFSET);
}
MM_INLINE uintptr_t slot_data_start(const slot_t *slot) {
  return (uintptr_t)slot + MM_SLOT_META_SIZE;
}
MM_INLINE uintptr_t extent_end(const extent_t *e) {
  return e->node.start + (e->node.ndatablocks << MM_DATABLOCK_SHIFT);
}
/* Bytes of a LARGE extent the user may use (all but a guard datablock). */
MM_INLINE size_t extent_usable(const extent_t *e) {
  return (e->node.ndatablocks - ((e->flags & MM_EXTENT_GUARD) ? 1 : 0)) << MM_DATABLOCK_SHIFT;
}
/* A LARGE extent's block: where it starts, and the bytes it may use. */
MM_INLINE uintptr_t large_block(const extent_t *e) { return e->node.start + e->offset; }
MM_INLINE size_t large_usable(const extent_t *e) { return extent_usable(e) - e->offset; }
/* Slot table entry of an address (MM_SLOT_NONE for anything not ours,
 * including addresses above MM_ADDRESS_BITS). */
MM_INLINE unsigned slot_table_entry(uintptr_t a) {
  uintptr_t i = a >> MM_SLOT_SHIFT;
  if (unlikely(i >= MM_SLOT_TABLE_SIZE)) return MM_SLOT_NONE;
  return atomic_load_relaxed(&mm_xslot_table[i]);
}
/* The base of the heap slot holding a, or 0: the free fast path's test and
 * lookup in one load.  The index is bounds-checked, so that every address
 * the fast path goes on with lies in the slot it names and its offset from
 * the page found there is below the page's size: page_offset_is_block's
 * single compare is exact only for offsets below 2^32 (an address at or
 * above 2^MM_ADDRESS_BITS would otherwise alias a real slot). */
MM_INLINE uintptr_t slot_heap_base(uintptr_t a) {
  uintptr_t i = a >> MM_SLOT_SHIFT;
  if (unlikely(i >= MM_SLOT_TABLE_SIZE)) return 0;
  return atomic_load_relaxed(&mm_xslot_base[i]);
}
/* The extent the extent map names for address a of a slot (the slot
 * header's zero prefix when it names none).  Exact for pages; see region.c. */
MM_INLINE extent_t *slot_extent_of(slot_t *slot, uintptr_t a) {
  return (extent_t *)((uintptr_t)slot +
                      slot_extent_map(slot)[(a >> MM_DATABLOCK_SHIFT) & (MM_SLOT_DATABLOCKS - 1)]);
}

/* ---- region.c (callers hold the owning local heap's lock, but for the
 * huge-block calls, whose mapping nobody else can reach yet or any more) -- */

extent_t *region_extent_new(slot_t *slot);
void region_extent_delete(slot_t *slot, extent_t *e);
void region_map_all(extent_t *e);
void region_map_ends(extent_t *e);
extent_t *region_extent_at(slot_t *slot, uintptr_t a);
slot_t *region_slot_new(uint32_t heap, extent_t **free_out);
size_t region_slot_data_datablocks(void);
/* The extents of a heap slot in address order: they tile its data area
 * (region_slot_is_valid checks it).  for (e = region_slot_first(slot); e;
 * e = region_slot_next(slot, e)).  The owning heap's lock held. */
extent_t *region_slot_first(slot_t *slot);
extent_t *region_slot_next(slot_t *slot, const extent_t *e);
void region_slot_release(slot_t *slot);
bool region_commit_to(slot_t *slot, uintptr_t end);
extent_t *region_huge_new(uint32_t heap, size_t size, size_t align);
extent_t *region_huge_at(uintptr_t a);
void region_huge_free(extent_t *e);
extent_t *region_huge_resize(extent_t *e, size_t size, bool keep_tail);
size_t region_huge_room(const extent_t *e);
size_t region_huge_committed(const extent_t *e);
extent_t *region_huge_move_onto(extent_t *e, extent_t *c, size_t size);

/* ---- region_check.c ------------------------------------------------------------- */

/* A heap slot: slot table entries, header, descriptor counts, the extent
 * map (exact for every datablock of a PAGE, and for the first and last of
 * every other extent), the extents tiling the data area with no gap or
 * overlap, and the commit state (every extent in use lies in committed
 * memory; only FREE extents of a slot with holes are unmapped).  The
 * owning heap's lock held.  O(datablocks of the slot in pages + extents). */
bool region_slot_is_valid(slot_t *slot, char *why, size_t why_size);
/* A huge block's mapping: slot table entries, header, its one extent. */
bool region_huge_is_valid(const extent_t *e, char *why, size_t why_size);
/* A fresh number for one checker pass: the checkers stamp extent.mark with
 * it on every list they walk, so an extent seen twice is on two lists. */
uint32_t region_check_pass(void);

MM_HIDDEN_END

#endif
