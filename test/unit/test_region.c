/* test_region.c — the region layer, driven directly (region.c,
 * region_check.c): a new slot (slot table, header, the one FREE extent),
 * extent descriptors (new, delete, reuse, exhaustion), the extent map of a
 * slot carved by hand into PAGE, LARGE, CACHED and FREE extents (exact
 * where it must be, stale entries rejected by region_extent_at's range
 * check), the region checker accepting that slot and rejecting each kind
 * of corruption with its reason, the commit mark (4 MiB steps, writable
 * below, inaccessible above, read from /proc/self/maps), and huge blocks:
 * the three placements, their table entries, shrinking with and without
 * keep_tail, growing in place, a forced move, and the free.
 *
 * Single-threaded and outside any local heap: the slots made here belong to
 * no heap's list, so no local heap lock is needed and none is taken.
 * Not a benchmark.
 *
 * usage: unit_region [SEED] */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "unit.h"
#include "options.h"
#include "region.h"

#define MIB ((size_t)1 << 20)
#define DB MM_DATABLOCK_SIZE



static bool slot_valid(slot_t *slot) { return region_slot_is_valid(slot, why, sizeof(why)); }
static bool huge_valid(const extent_t *e) { return region_huge_is_valid(e, why, sizeof(why)); }


/* ---- /proc/self/maps: what the kernel says is mapped where --------------------- */

/* 1 and the permissions ("rw-p", "---p") if a is mapped, else 0.  Read
 * with open and read into a static buffer: no malloc, so no mapping is
 * made behind the test's back (under ASan, malloc maps memory, which could
 * land in the address space a huge block is about to grow into). */
static char maps_buf[1 << 20];

static int map_perms(uintptr_t a, char perms[5]) {
  int fd = open("/proc/self/maps", O_RDONLY);
  if (fd < 0) return -1;
  size_t n = 0;
  ssize_t k;
  while (n + 1 < sizeof(maps_buf) && (k = read(fd, maps_buf + n, sizeof(maps_buf) - 1 - n)) > 0)
    n += (size_t)k;
  close(fd);
  maps_buf[n] = 0;
  for (char *line = maps_buf; line && *line;) {
    char *end;
    unsigned long lo = strtoul(line, &end, 16), hi = 0;
    if (*end == '-') hi = strtoul(end + 1, &end, 16);
    if (a >= lo && a < hi && *end == ' ') {
      memcpy(perms, end + 1, 4);
      perms[4] = 0;
      return 1;
    }
    line = strchr(line, '\n');
    if (line) line++;
  }
  return 0;
}

static bool readable_writable(uintptr_t a) {
  char p[5];
  return map_perms(a, p) == 1 && p[0] == 'r' && p[1] == 'w';
}
static bool reserved_no_access(uintptr_t a) {
  char p[5];
  return map_perms(a, p) == 1 && p[0] == '-' && p[1] == '-' && p[2] == '-';
}
static bool unmapped(uintptr_t a) {
  char p[5];
  return map_perms(a, p) == 0;
}

static unsigned table_at(uintptr_t a) { return slot_table_entry(a); }

/* ---- a new slot ------------------------------------------------------------------ */

static void test_new_slot(slot_t *slot, extent_t *f, uint32_t heap) {
  uintptr_t base = (uintptr_t)slot;
  CHECK("slot is slot aligned", (base & (MM_SLOT_SIZE - 1)) == 0);
  CHECK("table: HEAP at the slot's first byte", table_at(base) == MM_SLOT_HEAP);
  CHECK("table: HEAP in the middle of the slot", table_at(base + MM_SLOT_SIZE / 2) == MM_SLOT_HEAP);
  CHECK("table: HEAP at the slot's last byte", table_at(base + MM_SLOT_SIZE - 1) == MM_SLOT_HEAP);
  CHECK("table: not HEAP below the slot", table_at(base - 1) != MM_SLOT_HEAP);
  CHECK("table: not HEAP above the slot", table_at(base + MM_SLOT_SIZE) != MM_SLOT_HEAP);
  int zero = 1;
  for (int i = 0; i < 8; i++) zero &= slot->zero[i] == 0;
  CHECK("header: zero prefix", zero);
  CHECK("header: heap", slot->heap == heap);
  CHECK("header: not huge", slot->huge == 0);
  CHECK("header: size", slot->size == MM_SLOT_SIZE);
  CHECK("header: committed == the management area", slot->committed == MM_SLOT_META_SIZE);
  CHECK("header: one descriptor handed out, in use",
        slot->desc_top == 1 && slot->desc_used == 1 && slot->desc_free == NULL);
  CHECK("header: no holes, on no list", slot->holes == 0 && slot->next == NULL);
  CHECK("free extent: the slot's first descriptor", f == slot_extents(slot));
  CHECK("free extent: FREE and zero", f->kind == MM_EXTENT_FREE && f->flags == MM_EXTENT_ZERO);
  CHECK("free extent: starts at the data area", f->node.start == slot_data_start(slot));
  CHECK("free extent: covers the whole data area",
        f->node.ndatablocks == MM_SLOT_DATA_DATABLOCKS &&
            f->node.ndatablocks == region_slot_data_datablocks() &&
            extent_end(f) == base + MM_SLOT_SIZE);
  CHECK("extent map: first datablock", region_extent_at(slot, f->node.start) == f);
  CHECK("extent map: last datablock", region_extent_at(slot, extent_end(f) - DB) == f);
  CHECK("extent map: a middle datablock is not mapped",
        slot_extent_map(slot)[MM_SLOT_DATABLOCKS / 2] == 0 &&
            region_extent_at(slot, base + MM_SLOT_SIZE / 2) == NULL);
  CHECK("extent map: the management area is not mapped",
        slot_extent_map(slot)[0] == 0 && slot_extent_map(slot)[(MM_SLOT_META_SIZE / DB) - 1] == 0);
  CHECK("memory: management area read-write", readable_writable(base) &&
                                                   readable_writable(base + MM_SLOT_META_SIZE - 1));
  CHECK("memory: data area reserved, not accessible",
        reserved_no_access(base + MM_SLOT_META_SIZE) && reserved_no_access(base + MM_SLOT_SIZE - 1));
  bool ok = slot_valid(slot);
  if (!ok) fprintf(stderr, "  new slot: %s\n", why);
  CHECK("checker accepts a new slot", ok);
}

/* ---- the commit mark --------------------------------------------------------------- */

static void test_commit(slot_t *slot) {
  uintptr_t base = (uintptr_t)slot;
  struct {
    uintptr_t end, want;
  } steps[] = {
      {base + MM_SLOT_META_SIZE + 1, 4 * MIB},       /* one byte: a whole 4 MiB step */
      {base + 3 * MIB, 4 * MIB},                     /* below the mark: nothing */
      {base + 4 * MIB, 4 * MIB},                     /* at the mark: nothing */
      {base + 4 * MIB + 1, 8 * MIB},                 /* one byte over: the next step */
      {base + 13 * MIB + 5, 16 * MIB},               /* several steps at once */
      {base + 16 * MIB + DB, 20 * MIB},
      {base + 5 * MIB, 20 * MIB},                    /* never shrinks */
      {base + MM_SLOT_SIZE - DB + 1, MM_SLOT_SIZE},  /* the top: the whole slot */
  };
  uintptr_t prev = slot->committed;
  for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
    CHECK("region_commit_to succeeds", region_commit_to(slot, steps[i].end));
    if (slot->committed != steps[i].want)
      fprintf(stderr, "  commit to +%#lx: committed %#lx, expected %#lx\n",
              (unsigned long)(steps[i].end - base), (unsigned long)slot->committed,
              (unsigned long)steps[i].want);
    CHECK("committed rounds up to 4 MiB steps", slot->committed == steps[i].want);
    CHECK("committed covers the end asked for", base + slot->committed >= steps[i].end);
    /* every datablock newly below the mark is writable, and keeps what is written */
    int bad = 0;
    /* every datablock of the first 32 MiB, then a sample (RSS) */
    for (uintptr_t a = base + prev; a < base + slot->committed;
         a += (a - base < 32 * MIB ? DB : 64 * DB)) {
      volatile unsigned char *p = (volatile unsigned char *)a;
      p[0] = (unsigned char)(a >> 12);
      p[DB - 1] = (unsigned char)~(a >> 12);
      if (p[0] != (unsigned char)(a >> 12) || p[DB - 1] != (unsigned char)~(a >> 12)) bad++;
    }
    CHECK("memory below the mark is writable", bad == 0);
    CHECK("the kernel agrees: read-write below the mark",
          readable_writable(base + slot->committed - 1));
    if (slot->committed < MM_SLOT_SIZE)
      CHECK("the kernel agrees: no access at the mark", reserved_no_access(base + slot->committed));
    bool ok = slot_valid(slot);
    if (!ok) fprintf(stderr, "  after commit: %s\n", why);
    CHECK("checker accepts the slot after a commit", ok);
    prev = slot->committed;
  }
  /* what was written below the mark is still there */
  int lost = 0;
  for (uintptr_t a = base + MM_SLOT_META_SIZE; a < base + 32 * MIB; a += DB)
    if (*(unsigned char *)a != (unsigned char)(a >> 12)) lost++;
  CHECK("committed memory keeps its contents", lost == 0);
}

/* ---- descriptors --------------------------------------------------------------------- */

static bool all_zero(const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    if (c[i]) return false;
  return true;
}

static void test_descriptors(slot_t *slot) {
  extent_t *first = slot_extents(slot);
  CHECK("descriptors start with the free extent", slot->desc_top == 1 && slot->desc_used == 1);
  extent_t *a = region_extent_new(slot);
  CHECK("new: the next descriptor", a == first + 1);
  CHECK("new: desc_top and desc_used follow", slot->desc_top == 2 && slot->desc_used == 2);
  CHECK("new: zeroed (UNUSED)", all_zero(a, sizeof(*a)) && a->kind == MM_EXTENT_UNUSED);
  extent_t *b = region_extent_new(slot);
  CHECK("new: the one after", b == first + 2 && slot->desc_top == 3 && slot->desc_used == 3);
  /* b in use but part of no tiling */
  why[0] = 0;
  CHECK("checker: a descriptor in use outside the tiling is rejected", !slot_valid(slot));
  CHECK("checker: ... with its reason", strstr(why, "not part of the tiling") != NULL);
  fprintf(stderr, "  %-46s -> %s\n", "descriptors in use outside the tiling", why);
  a->mark = 77;
  a->kind = MM_EXTENT_LARGE;
  a->node.start = slot_data_start(slot);
  a->node.ndatablocks = 5;
  region_extent_delete(slot, a);
  CHECK("delete: desc_used drops, desc_top stays", slot->desc_used == 2 && slot->desc_top == 3);
  CHECK("delete: on the free list, UNUSED, no extent",
        slot->desc_free == a && a->kind == MM_EXTENT_UNUSED && a->node.start == 0 &&
            a->node.ndatablocks == 0);
  extent_t *c = region_extent_new(slot);
  CHECK("new: a deleted descriptor is reused first", c == a);
  CHECK("new: the reused descriptor is zeroed", c->mark == 0 && all_zero(c, sizeof(*c)));
  CHECK("new: counts after reuse", slot->desc_used == 3 && slot->desc_top == 3 && !slot->desc_free);
  region_extent_delete(slot, b);
  region_extent_delete(slot, c);
  CHECK("delete two: desc_used", slot->desc_used == 1);
  bool ok = slot_valid(slot);
  if (!ok) fprintf(stderr, "  descriptors deleted: %s\n", why);
  CHECK("checker accepts a slot with deleted descriptors", ok);
  CHECK("reuse is last deleted first (c)", region_extent_new(slot) == c);
  CHECK("... then b", region_extent_new(slot) == b);
  CHECK("... then a fresh one", region_extent_new(slot) == first + 3 && slot->desc_top == 4);

  /* exhaustion */
  uint32_t before = slot->desc_top;
  uint32_t got = 0;
  extent_t *last = NULL, *e;
  while ((e = region_extent_new(slot)) != NULL) {
    if (e != first + before + got) break;
    last = e;
    if (++got > MM_SLOT_EXTENTS) break;
  }
  CHECK("exhaustion: every descriptor handed out once, in order", e == NULL);
  CHECK("exhaustion: as many as MM_SLOT_EXTENTS", before + got == MM_SLOT_EXTENTS);
  CHECK("exhaustion: the last fits the management area",
        last == first + MM_SLOT_EXTENTS - 1 &&
            (uintptr_t)(last + 1) <= (uintptr_t)slot + MM_SLOT_META_SIZE);
  CHECK("exhaustion: counts", slot->desc_top == MM_SLOT_EXTENTS && slot->desc_used == MM_SLOT_EXTENTS);
  CHECK("exhaustion: region_extent_new returns NULL", region_extent_new(slot) == NULL);
  CHECK("exhaustion: a failed new changes no count",
        slot->desc_top == MM_SLOT_EXTENTS && slot->desc_used == MM_SLOT_EXTENTS);
  extent_t *mid = first + MM_SLOT_EXTENTS / 2;
  region_extent_delete(slot, mid);
  CHECK("exhaustion: a deleted one comes back", region_extent_new(slot) == mid);
  CHECK("exhaustion: and then none again", region_extent_new(slot) == NULL);
  /* all but the free extent back, in address order (the list ends at first + 1) */
  for (extent_t *d = first + 1; d < first + MM_SLOT_EXTENTS; d++) region_extent_delete(slot, d);
  CHECK("all deleted: desc_used 1", slot->desc_used == 1 && slot->desc_top == MM_SLOT_EXTENTS);
  ok = slot_valid(slot);
  if (!ok) fprintf(stderr, "  all deleted: %s\n", why);
  CHECK("checker accepts a full free list", ok);
  /* the free list's tail is first + 1: make it a cycle */
  NEGATIVE("descriptor free list with a cycle", slot_valid(slot), { (first + 1)->next = slot->desc_free; },
           { (first + 1)->next = NULL; }, "cycle");
  NEGATIVE("descriptor on the free list in use", slot_valid(slot),
           { slot->desc_free->kind = MM_EXTENT_LARGE; },
           { slot->desc_free->kind = MM_EXTENT_UNUSED; }, "free list holds a descriptor in use");
  NEGATIVE("desc_used one too many, free list not empty", slot_valid(slot), { slot->desc_used++; },
           { slot->desc_used--; }, "desc_used is not desc_top minus the free list");
  NEGATIVE("desc_top out of range", slot_valid(slot), { slot->desc_top = MM_SLOT_EXTENTS + 1; },
           { slot->desc_top = MM_SLOT_EXTENTS; }, "descriptor counts out of range");
}

/* ---- the extent map of a slot carved by hand ------------------------------------------
 *   [ P: PAGE | L: LARGE | C: CACHED | R: LARGE | F: FREE ............ ]
 * with stale entries: P was longer when it was mapped (its old tail lies in
 * L's middle and still names P), and a page Q mapped in what is now F's
 * middle was deleted and its descriptor reused for R. */

typedef struct layout_s {
  extent_t *p, *l, *c, *r, *f;
  uintptr_t q_start; /* Q's old datablocks, in F's middle */
  size_t q_n;
  size_t p_stale; /* datablocks of P's old tail, in L's middle */
} layout_t;

static void place(extent_t *e, uint8_t kind, uintptr_t start, size_t n) {
  e->kind = kind;
  e->node.start = start;
  e->node.ndatablocks = n;
}

/* The extent of the model that covers a, or NULL. */
static extent_t *model_at(const layout_t *t, uintptr_t a) {
  extent_t *all[5] = {t->p, t->l, t->c, t->r, t->f};
  for (int i = 0; i < 5; i++)
    if (a >= all[i]->node.start && a < extent_end(all[i])) return all[i];
  return NULL;
}

static void build_layout(slot_t *slot, extent_t *f, layout_t *t) {
  uintptr_t d0 = slot_data_start(slot);
  size_t np = 16 * (1 + next_rand() % 8);  /* a page: 16..128 datablocks */
  size_t nl = 40 + next_rand() % 200;
  size_t nc = 16 + next_rand() % 64;
  size_t nr = 10 + next_rand() % 300;
  t->p_stale = 8;
  t->q_n = 16;
  t->p = region_extent_new(slot);
  place(t->p, MM_EXTENT_PAGE, d0, np + t->p_stale);
  region_map_all(t->p);
  t->l = region_extent_new(slot);
  t->c = region_extent_new(slot);
  /* Q: a page in what becomes F's middle, mapped everywhere, then deleted */
  extent_t *q = region_extent_new(slot);
  t->q_start = d0 + ((np + nl + nc + nr + 100) << MM_DATABLOCK_SHIFT);
  place(q, MM_EXTENT_PAGE, t->q_start, t->q_n);
  region_map_all(q);
  region_extent_delete(slot, q);
  t->r = region_extent_new(slot);
  CHECK("layout: R reuses Q's deleted descriptor", t->r == q);
  t->p->node.ndatablocks = np; /* P shrinks; its old tail's entries go stale */
  uintptr_t a = d0 + (np << MM_DATABLOCK_SHIFT);
  place(t->l, MM_EXTENT_LARGE, a, nl);
  region_map_ends(t->l);
  a = extent_end(t->l);
  place(t->c, MM_EXTENT_CACHED, a, nc);
  region_map_ends(t->c);
  a = extent_end(t->c);
  place(t->r, MM_EXTENT_LARGE, a, nr);
  region_map_ends(t->r);
  a = extent_end(t->r);
  t->f = f;
  f->node.start = a;
  f->node.ndatablocks = MM_SLOT_DATA_DATABLOCKS - np - nl - nc - nr;
  region_map_ends(f);
  fprintf(stderr, "  layout: P %zu, L %zu, C %zu, R %zu, F %zu datablocks\n", np, nl, nc, nr,
          (size_t)f->node.ndatablocks);
}

static void test_extent_map(slot_t *slot, extent_t *f) {
  layout_t t;
  build_layout(slot, f, &t);
  CHECK("layout: five descriptors in use", slot->desc_used == 5 && slot->desc_top == 5);
  CHECK("layout: the extents tile the data area",
        extent_end(t.f) == (uintptr_t)slot + MM_SLOT_SIZE);
  /* in use above the commit mark: the checker must see it */
  why[0] = 0;
  CHECK("checker rejects extents in use that are not committed", !slot_valid(slot));
  CHECK("... as above the commit mark", strstr(why, "above the commit mark") != NULL);
  CHECK("commit the extents in use", region_commit_to(slot, extent_end(t.r)));
  bool ok = slot_valid(slot);
  if (!ok) fprintf(stderr, "  layout: %s\n", why);
  REQUIRE("checker accepts the carved slot", ok);

  /* every datablock of the page */
  int bad = 0;
  for (uintptr_t a = t.p->node.start; a < extent_end(t.p); a += DB)
    if (region_extent_at(slot, a) != t.p || slot_extent_of(slot, a) != t.p) bad++;
  CHECK("map: every datablock of the PAGE names it", bad == 0);
  extent_t *others[4] = {t.l, t.c, t.r, t.f};
  for (int i = 0; i < 4; i++) {
    CHECK("map: first datablock of a non-page extent", region_extent_at(slot, others[i]->node.start) == others[i]);
    CHECK("map: last datablock of a non-page extent", region_extent_at(slot, extent_end(others[i]) - DB) == others[i]);
  }
  /* the stale entries: they name an extent, but one that does not cover them */
  int stale_seen = 0, stale_bad = 0;
  for (size_t i = 1; i < t.p_stale; i++) {
    uintptr_t a = t.l->node.start + (i << MM_DATABLOCK_SHIFT);
    if (slot_extent_of(slot, a) == t.p) stale_seen++;
    if (region_extent_at(slot, a) != NULL) stale_bad++;
  }
  CHECK("stale: P's old tail in L's middle still names P", stale_seen == (int)t.p_stale - 1);
  CHECK("stale: region_extent_at rejects them (P does not cover them)", stale_bad == 0);
  stale_seen = stale_bad = 0;
  for (size_t i = 0; i < t.q_n; i++) {
    uintptr_t a = t.q_start + (i << MM_DATABLOCK_SHIFT);
    if (slot_extent_of(slot, a) == t.r) stale_seen++;
    if (region_extent_at(slot, a) != NULL) stale_bad++;
  }
  CHECK("stale: Q's datablocks in F's middle name the reused descriptor (R)", stale_seen == (int)t.q_n);
  CHECK("stale: region_extent_at rejects them (R lies elsewhere)", stale_bad == 0);
  /* every datablock of the slot: the map names the covering extent or nothing */
  int wrong = 0, named = 0;
  for (uintptr_t a = slot_data_start(slot); a < (uintptr_t)slot + MM_SLOT_SIZE; a += DB) {
    extent_t *e = region_extent_at(slot, a);
    if (e) {
      named++;
      if (e != model_at(&t, a)) wrong++;
    }
  }
  CHECK("map: region_extent_at never names an extent that does not cover the address", wrong == 0);
  CHECK("map: exactly the page and the ends are named",
        named == (int)t.p->node.ndatablocks + 2 * 4);

  /* ---- the checker rejects each corruption, with its reason ---- */
  uintptr_t base = (uintptr_t)slot;
  _Atomic(uint8_t) *entry = &mm_xslot_table[base >> MM_SLOT_SHIFT];
  NEGATIVE("table entry NONE", slot_valid(slot), { atomic_store_relaxed(entry, MM_SLOT_NONE); },
           { atomic_store_relaxed(entry, MM_SLOT_HEAP); }, "slot table entry disagrees");
  NEGATIVE("table entry HUGE", slot_valid(slot), { atomic_store_relaxed(entry, MM_SLOT_HUGE); },
           { atomic_store_relaxed(entry, MM_SLOT_HEAP); }, "slot table entry disagrees");
  _Atomic(uintptr_t) *base_entry = &mm_xslot_base[base >> MM_SLOT_SHIFT];
  CHECK("base entry names the slot", slot_heap_base(base + 12345) == base);
  NEGATIVE("base entry 0", slot_valid(slot), { atomic_store_relaxed(base_entry, 0); },
           { atomic_store_relaxed(base_entry, base); }, "slot base entry disagrees");
  NEGATIVE("base entry of another slot", slot_valid(slot),
           { atomic_store_relaxed(base_entry, base + MM_SLOT_SIZE); },
           { atomic_store_relaxed(base_entry, base); }, "slot base entry disagrees");
  CHECK("an address 2^48 above, or with bit 63 set, is no heap slot's (bounded, not masked)",
        slot_heap_base(base + ((uintptr_t)1 << MM_ADDRESS_BITS)) == 0 &&
            slot_heap_base(base | ((uintptr_t)1 << 63)) == 0 && slot_heap_base(UINTPTR_MAX) == 0);
  /* no descriptor is free here (desc_used == desc_top): one more is out of range */
  NEGATIVE("desc_used one too many", slot_valid(slot), { slot->desc_used++; }, { slot->desc_used--; },
           "descriptor counts out of range");
  NEGATIVE("desc_used one too few", slot_valid(slot), { slot->desc_used--; }, { slot->desc_used++; },
           "desc_used is not desc_top minus the free list");
  uint32_t *map = slot_extent_map(slot);
  size_t pi = ((t.p->node.start - base) >> MM_DATABLOCK_SHIFT) + 1 + next_rand() % (t.p->node.ndatablocks - 2);
  uint32_t saved = map[pi];
  NEGATIVE("page datablock unmapped", slot_valid(slot), { map[pi] = 0; }, { map[pi] = saved; },
           "extent map misses a datablock of a page");
  NEGATIVE("page datablock mapped to another extent", slot_valid(slot),
           { map[pi] = (uint32_t)((uintptr_t)t.l - base); }, { map[pi] = saved; },
           "extent map misses a datablock of a page");
  size_t plast = ((extent_end(t.p) - base) >> MM_DATABLOCK_SHIFT) - 1;
  uint32_t saved_last = map[plast];
  NEGATIVE("page's last datablock mapped elsewhere", slot_valid(slot),
           { map[plast] = (uint32_t)((uintptr_t)t.c - base); }, { map[plast] = saved_last; },
           "extent map misses the extent's last datablock");
  /* overlap: L grows one datablock into C (and maps it) */
  NEGATIVE("overlap: L runs into C", slot_valid(slot), { t.l->node.ndatablocks++; region_map_ends(t.l); },
           { t.l->node.ndatablocks--; region_map_ends(t.l); region_map_ends(t.c); },
           "no extent starts where the previous one ends");
  /* overlap: C starts one datablock early, inside L */
  NEGATIVE("overlap: C starts inside L", slot_valid(slot),
           { t.c->node.start -= DB; t.c->node.ndatablocks++; region_map_ends(t.c); },
           { t.c->node.start += DB; t.c->node.ndatablocks--; region_map_ends(t.l); region_map_ends(t.c); },
           "extent map misses the extent's last datablock");
  /* gaps: L, then F, end one datablock early */
  NEGATIVE("gap after L", slot_valid(slot), { t.l->node.ndatablocks--; region_map_ends(t.l); },
           { t.l->node.ndatablocks++; region_map_ends(t.l); },
           "no extent starts where the previous one ends");
  NEGATIVE("gap at the end of the data area", slot_valid(slot), { t.f->node.ndatablocks--; region_map_ends(t.f); },
           { t.f->node.ndatablocks++; region_map_ends(t.f); },
           "no extent starts where the previous one ends");
  NEGATIVE("extent past the data area", slot_valid(slot), { t.f->node.ndatablocks++; },
           { t.f->node.ndatablocks--; }, "runs past the data area");
  uintptr_t committed = slot->committed;
  NEGATIVE("extent in use above the commit mark", slot_valid(slot), { slot->committed = MM_SLOT_META_SIZE; },
           { slot->committed = committed; }, "extent in use above the commit mark");
  NEGATIVE("R one datablock above the commit mark", slot_valid(slot),
           { slot->committed = extent_end(t.r) - base - DB; },
           { slot->committed = committed; }, "extent in use above the commit mark");
  /* a slot with holes commits exactly what is carved: no prefix rule */
  slot->committed = MM_SLOT_META_SIZE;
  slot->holes = 1;
  ok = slot_valid(slot);
  if (!ok) fprintf(stderr, "  holes: %s\n", why);
  CHECK("a slot with holes has no commit-prefix rule", ok);
  slot->holes = 0;
  slot->committed = committed;
  NEGATIVE("UNMAPPED on a LARGE extent", slot_valid(slot), { t.l->flags |= MM_EXTENT_UNMAPPED; },
           { t.l->flags &= (uint8_t)~MM_EXTENT_UNMAPPED; }, "unmapped extent that is not free");
  NEGATIVE("UNMAPPED on a PAGE", slot_valid(slot), { t.p->flags |= MM_EXTENT_UNMAPPED; },
           { t.p->flags &= (uint8_t)~MM_EXTENT_UNMAPPED; }, "unmapped extent that is not free");
  NEGATIVE("UNMAPPED on a CACHED extent, slot with holes", slot_valid(slot),
           { t.c->flags |= MM_EXTENT_UNMAPPED; slot->holes = 1; },
           { t.c->flags &= (uint8_t)~MM_EXTENT_UNMAPPED; slot->holes = 0; }, "unmapped extent that is not free");
  NEGATIVE("UNMAPPED on a FREE extent, slot without holes", slot_valid(slot),
           { t.f->flags |= MM_EXTENT_UNMAPPED; }, { t.f->flags &= (uint8_t)~MM_EXTENT_UNMAPPED; },
           "unmapped extent that is not free");
  t.f->flags |= MM_EXTENT_UNMAPPED;
  slot->holes = 1;
  ok = slot_valid(slot);
  if (!ok) fprintf(stderr, "  unmapped free extent: %s\n", why);
  CHECK("UNMAPPED on a FREE extent of a slot with holes is accepted", ok);
  t.f->flags &= (uint8_t)~MM_EXTENT_UNMAPPED;
  slot->holes = 0;
  NEGATIVE("LOST extent in a slot without holes", slot_valid(slot), { t.f->kind = MM_EXTENT_LOST; },
           { t.f->kind = MM_EXTENT_FREE; }, "lost extent in a slot without holes");
  t.f->kind = MM_EXTENT_LOST;
  slot->holes = 1;
  ok = slot_valid(slot);
  if (!ok) fprintf(stderr, "  lost extent: %s\n", why);
  CHECK("a LOST extent in a slot with holes is accepted", ok);
  t.f->kind = MM_EXTENT_FREE;
  slot->holes = 0;
  NEGATIVE("extent of no known kind", slot_valid(slot), { t.c->kind = 7; },
           { t.c->kind = MM_EXTENT_CACHED; }, "extent of no known kind");
  NEGATIVE("zero prefix written", slot_valid(slot), { slot->zero[3] = 1; }, { slot->zero[3] = 0; },
           "zero prefix");
  NEGATIVE("commit mark not datablock aligned", slot_valid(slot), { slot->committed += 16; },
           { slot->committed -= 16; }, "commit mark out of range");
  NEGATIVE("a huge header on a heap slot", slot_valid(slot), { slot->huge = 1; }, { slot->huge = 0; },
           "huge slot's header");
  extent_t *x = NULL;
  NEGATIVE("a descriptor in use off the tiling", slot_valid(slot), { x = region_extent_new(slot); },
           { region_extent_delete(slot, x); }, "not part of the tiling");
  NEGATIVE("a descriptor in use off the tiling, desc_used fixed", slot_valid(slot),
           { x = region_extent_new(slot); place(x, MM_EXTENT_LARGE, t.f->node.start, 4); },
           { region_extent_delete(slot, x); }, "not part of the tiling");
}

/* ---- huge blocks ----------------------------------------------------------------------- */

static unsigned char pat(uintptr_t a, uint8_t salt) { return (unsigned char)((a >> 12) ^ (a >> 20) ^ salt); }

/* Write the pattern at every MiB of [start, start + n) and at its last byte. */
static void fill_huge(uintptr_t start, size_t n, uint8_t salt) {
  for (uintptr_t a = start; a < start + n; a += MIB) *(unsigned char *)a = pat(a, salt);
  *(unsigned char *)(start + n - 1) = pat(start + n - 1, salt);
}
static int intact_huge(uintptr_t start, uintptr_t old_start, size_t n, uint8_t salt) {
  int bad = 0;
  for (size_t o = 0; o < n; o += MIB)
    if (*(unsigned char *)(start + o) != pat(old_start + o, salt)) bad++;
  return bad == 0;
}

/* Table entries of a huge mapping: HUGE at its base, HUGE_TAIL (or HUGE_AT
 * at the block) for every other slot-sized piece it touches. */
static bool huge_table_ok(const extent_t *e) {
  slot_t *slot = slot_of_extent(e);
  uintptr_t base = (uintptr_t)slot;
  for (uintptr_t off = 0; off < slot->size; off += MM_SLOT_SIZE) {
    unsigned want = off == 0 ? MM_SLOT_HUGE
                    : base + off == e->node.start ? MM_SLOT_HUGE_AT : MM_SLOT_HUGE_TAIL;
    if (table_at(base + off) != want) return false;
  }
  return true;
}
static bool table_clear(uintptr_t base, size_t size) {
  for (uintptr_t off = 0; off < size; off += MM_SLOT_SIZE)
    if (table_at(base + off) != MM_SLOT_NONE) return false;
  return true;
}

static extent_t *huge_new_checked(const char *what, uint32_t heap, size_t size, size_t align) {
  extent_t *e = region_huge_new(heap, size, align);
  REQUIRE(what, e != NULL);
  slot_t *slot = slot_of_extent(e);
  uintptr_t base = (uintptr_t)slot;
  size_t rounded = (size + DB - 1) & ~(DB - 1);
  uintptr_t off = align <= MM_SLOT_META_SIZE ? MM_SLOT_META_SIZE
                  : align < MM_SLOT_SIZE      ? align
                                              : MM_SLOT_SIZE;
  CHECK("huge: header", slot->huge == 1 && slot->heap == heap && slot->desc_used == 1 &&
                            slot->desc_top == 1);
  CHECK("huge: the slot's first descriptor, LARGE", e == slot_extents(slot) && e->kind == MM_EXTENT_LARGE);
  CHECK("huge: at its offset", e->node.start == base + off);
  CHECK("huge: aligned", !align || (e->node.start & (align - 1)) == 0);
  CHECK("huge: its size, rounded to datablocks", e->node.ndatablocks == rounded >> MM_DATABLOCK_SHIFT);
  CHECK("huge: mapping as long as the block needs", slot->size == off + rounded);
  CHECK("huge: committed to its end", slot->committed == off + rounded);
  CHECK("huge: table entries", huge_table_ok(e));
  if (off < MM_SLOT_SIZE)
    CHECK("huge: the extent map names it at its start", slot_extent_of(slot, e->node.start) == e);
  else
    CHECK("huge: HUGE_AT, found by region_huge_at", table_at(e->node.start) == MM_SLOT_HUGE_AT &&
                                                        region_huge_at(e->node.start) == e);
  CHECK("huge: memory read-write", readable_writable(e->node.start) &&
                                       readable_writable(extent_end(e) - 1) &&
                                       readable_writable(base));
  CHECK("huge: fresh memory reads as zero", *(volatile unsigned char *)(e->node.start + rounded / 2) == 0);
  bool ok = huge_valid(e);
  if (!ok) fprintf(stderr, "  %s: %s\n", what, why);
  CHECK("huge: checker accepts it", ok);
  fill_huge(e->node.start, rounded, 0);
  CHECK("huge: the pattern reads back", intact_huge(e->node.start, e->node.start, rounded, 0));
  return e;
}

static void huge_free_checked(extent_t *e) {
  slot_t *slot = slot_of_extent(e);
  uintptr_t base = (uintptr_t)slot, size = slot->size;
  region_huge_free(e);
  CHECK("huge free: every table entry cleared", table_clear(base, size));
  CHECK("huge free: the mapping is gone", unmapped(base) && unmapped(base + size - 1));
}

/* Take the datablock at `behind` so that a mapping ending there cannot grow
 * in place: our own reservation (returned, to be unmapped), or NULL when
 * something is mapped there already. */
static void *block_behind(uintptr_t behind) {
  void *p = mmap((void *)behind, DB, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == (void *)behind) return p;
  if (p != MAP_FAILED) munmap(p, DB); /* taken as a hint: not the address asked for */
  REQUIRE("the address space behind the mapping is taken", p == MAP_FAILED && errno == EEXIST);
  return NULL;
}

/* Force a move: reserve the address space right behind e's mapping, so
 * that growing in place fails, then grow e to new_size.  The block must
 * move (mremap, no copy), keep its first keep bytes, leave the old range
 * unmapped with its table entries cleared, and set the new ones.  Frees
 * the block. */
/* must_move: the move has to succeed.  Otherwise region_huge_resize may
 * also refuse (NULL, nothing changed: its contract), and which it did is
 * printed; see test_huge_move_default. */
static void huge_forced_move(const char *what, extent_t *e, size_t new_size, size_t keep, uint8_t salt,
                             bool must_move) {
  slot_t *slot = slot_of_extent(e);
  uintptr_t base = (uintptr_t)slot, start = e->node.start, off = start - base;
  uintptr_t old_msize = slot->size, old_n = e->node.ndatablocks;
  uint32_t heap = slot->heap;
  uintptr_t behind = base + old_msize;
  void *blocker = block_behind(behind);
  errno = 0;
  extent_t *r = region_huge_resize(e, new_size, false);
  if (must_move) CHECK("move: region_huge_resize succeeds", r != NULL);
  if (!r) {
    int err = errno;
    fprintf(stderr, "  %s: region_huge_resize refused the move (NULL, errno %d)\n", what, err);
    CHECK("move refused with ENOMEM", err == ENOMEM);
    CHECK("move refused: nothing changed", e->node.start == start && slot->size == old_msize &&
                                              e->node.ndatablocks == old_n && huge_table_ok(e) &&
                                              intact_huge(start, start, keep, salt));
    r = e;
  } else {
    slot_t *ns = slot_of_extent(r);
    uintptr_t nbase = (uintptr_t)ns;
    CHECK("move: the block moved", r->node.start != start && nbase != base);
    CHECK("move: the new mapping's first descriptor, at the same offset",
          r == slot_extents(ns) && r->node.start - nbase == off && r->kind == MM_EXTENT_LARGE);
    CHECK("move: header", ns->huge == 1 && ns->heap == heap && ns->desc_used == 1 &&
                              ns->size == off + new_size && ns->committed == ns->size);
    CHECK("move: the new size", r->node.ndatablocks == new_size >> MM_DATABLOCK_SHIFT);
    CHECK("move: contents kept", intact_huge(r->node.start, start, keep, salt));
    CHECK("move: the grown part is writable and zero",
          readable_writable(extent_end(r) - 1) && *(volatile unsigned char *)(extent_end(r) - 1) == 0);
    CHECK("move: the old range's table entries cleared", table_clear(base, old_msize));
    CHECK("move: the new range's table entries set", huge_table_ok(r));
    CHECK("move: the old range is unmapped", unmapped(base) && unmapped(start) &&
                                                 unmapped(base + old_msize - 1));
    if (blocker) CHECK("move: the reservation behind it is untouched", reserved_no_access(behind));
    bool ok = huge_valid(r);
    if (!ok) fprintf(stderr, "  %s: %s\n", what, why);
    CHECK("move: checker accepts", ok);
  }
  if (blocker) munmap(blocker, DB);
  huge_free_checked(r);
}

static void test_huge(uint32_t heap) {
  /* Default alignment, bigger than a slot: HUGE then HUGE_TAIL.  With
   * transparent huge pages off (options.hugepages 0): see the forced move
   * at the end, and test_huge_move_default. */
  long hugepages = options.hugepages;
  options.hugepages = 0;
  extent_t *e = huge_new_checked("huge, default alignment", heap, 200 * MIB + 123, 0);
  slot_t *slot = slot_of_extent(e);
  uintptr_t base = (uintptr_t)slot, start = e->node.start;
  size_t size0 = e->node.ndatablocks << MM_DATABLOCK_SHIFT;
  uintptr_t msize0 = slot->size;
  CHECK("huge: two table pieces", table_at(base) == MM_SLOT_HUGE &&
                                      table_at(base + MM_SLOT_SIZE) == MM_SLOT_HUGE_TAIL);
  NEGATIVE("huge: table entry of its tail cleared", huge_valid(e),
           { atomic_store_relaxed(&mm_xslot_table[(base >> MM_SLOT_SHIFT) + 1], MM_SLOT_NONE); },
           { atomic_store_relaxed(&mm_xslot_table[(base >> MM_SLOT_SHIFT) + 1], MM_SLOT_HUGE_TAIL); },
           "slot table entry disagrees");
  CHECK("huge: no base entry (the free fast path passes it by)", slot_heap_base(base) == 0 &&
                                                                   slot_heap_base(start) == 0);
  NEGATIVE("huge: a base entry set", huge_valid(e),
           { atomic_store_relaxed(&mm_xslot_base[base >> MM_SLOT_SHIFT], base); },
           { atomic_store_relaxed(&mm_xslot_base[base >> MM_SLOT_SHIFT], 0); },
           "slot base entry disagrees");
  NEGATIVE("huge: block past its commit mark", huge_valid(e), { slot->committed -= DB; },
           { slot->committed += DB; }, "past its mapping or its commit mark");
  NEGATIVE("huge: kind FREE", huge_valid(e), { e->kind = MM_EXTENT_FREE; }, { e->kind = MM_EXTENT_LARGE; },
           "neither in use nor cached");
  NEGATIVE("huge: not the mapping's only descriptor", huge_valid(e), { slot->desc_used = 2; },
           { slot->desc_used = 1; }, "not the one extent of a huge mapping");

  /* shrink, keeping the tail: only the extent shrinks */
  extent_t *r = region_huge_resize(e, 150 * MIB, true);
  CHECK("shrink keep_tail: in place", r == e && e->node.start == start);
  CHECK("shrink keep_tail: the extent shrinks", e->node.ndatablocks == (150 * MIB) >> MM_DATABLOCK_SHIFT);
  CHECK("shrink keep_tail: the mapping does not", slot->size == msize0 && slot->committed == msize0);
  CHECK("shrink keep_tail: table unchanged", huge_table_ok(e) &&
                                                 table_at(base + MM_SLOT_SIZE) == MM_SLOT_HUGE_TAIL);
  CHECK("shrink keep_tail: the tail keeps its memory and contents",
        readable_writable(start + 180 * MIB) && intact_huge(start, start, size0, 0));
  bool ok = huge_valid(e);
  if (!ok) fprintf(stderr, "  shrink keep_tail: %s\n", why);
  CHECK("shrink keep_tail: checker accepts", ok);
  /* grow again within the mapping */
  r = region_huge_resize(e, size0, false);
  CHECK("grow within the mapping: in place", r == e && e->node.start == start &&
                                                 e->node.ndatablocks == size0 >> MM_DATABLOCK_SHIFT);
  CHECK("grow within the mapping: mapping unchanged", slot->size == msize0);
  CHECK("grow within the mapping: contents kept", intact_huge(start, start, size0, 0));
  /* shrink without keep_tail: the mapping shrinks, the tail's table entry goes */
  r = region_huge_resize(e, 100 * MIB, false);
  CHECK("shrink: in place", r == e && e->node.start == start &&
                                e->node.ndatablocks == (100 * MIB) >> MM_DATABLOCK_SHIFT);
  CHECK("shrink: the mapping shrinks", slot->size == MM_SLOT_META_SIZE + 100 * MIB &&
                                           slot->committed == slot->size);
  CHECK("shrink: the tail's table entry is cleared", table_at(base + MM_SLOT_SIZE) == MM_SLOT_NONE &&
                                                         table_at(base) == MM_SLOT_HUGE);
  CHECK("shrink: the tail is unmapped", unmapped(base + slot->size) && unmapped(base + msize0 - 1));
  CHECK("shrink: contents kept", intact_huge(start, start, 100 * MIB, 0));
  ok = huge_valid(e);
  if (!ok) fprintf(stderr, "  shrink: %s\n", why);
  CHECK("shrink: checker accepts", ok);
  /* grow in place: the address space behind is free (nothing was mapped since) */
  r = region_huge_resize(e, 150 * MIB, false);
  REQUIRE("grow in place", r == e && e->node.start == start &&
                             e->node.ndatablocks == (150 * MIB) >> MM_DATABLOCK_SHIFT);
  CHECK("grow in place: the mapping grows", slot->size == MM_SLOT_META_SIZE + 150 * MIB &&
                                                slot->committed == slot->size);
  CHECK("grow in place: table entries", huge_table_ok(e) &&
                                            table_at(base + MM_SLOT_SIZE) == MM_SLOT_HUGE_TAIL);
  CHECK("grow in place: old contents kept", intact_huge(start, start, 100 * MIB, 0));
  CHECK("grow in place: the new part reads zero (the old tail was given back)",
        *(volatile unsigned char *)(start + 120 * MIB) == 0 &&
            *(volatile unsigned char *)(start + 150 * MIB - 1) == 0);
  fill_huge(start + 100 * MIB, 50 * MIB, 0);
  ok = huge_valid(e);
  if (!ok) fprintf(stderr, "  grow in place: %s\n", why);
  CHECK("grow in place: checker accepts", ok);
  /* a forced move (mremap of the header and the data: one mapping here) */
  huge_forced_move("huge, default alignment, no THP", e, 180 * MIB, 150 * MIB, 0, true);
  options.hugepages = hugepages;

  /* 4 MiB aligned: the block starts 4 MiB into its mapping */
  e = huge_new_checked("huge, 4 MiB aligned", heap, 33 * MIB, 4 * MIB);
  slot = slot_of_extent(e);
  base = (uintptr_t)slot;
  start = e->node.start;
  CHECK("4 MiB aligned: the gap before the block is not accessible",
        reserved_no_access(base + MM_SLOT_META_SIZE) && reserved_no_access(start - 1));
  r = region_huge_resize(e, 20 * MIB, true);
  CHECK("4 MiB aligned: shrinks keeping the tail", r == e && slot->size == 4 * MIB + 33 * MIB &&
                                                       e->node.ndatablocks == (20 * MIB) >> MM_DATABLOCK_SHIFT);
  r = region_huge_resize(e, 16 * MIB, false);
  CHECK("4 MiB aligned: shrinks", r == e && slot->size == 4 * MIB + 16 * MIB && huge_table_ok(e) &&
                                      unmapped(start + 16 * MIB));
  /* grow into the address space just given back (nothing was mapped since:
   * whatever lies further behind was there before the block) */
  r = region_huge_resize(e, 30 * MIB, false);
  REQUIRE("4 MiB aligned: grows in place", r == e && e->node.start == start && huge_table_ok(e) &&
                                             slot->size == 4 * MIB + 30 * MIB &&
                                             slot->committed == slot->size);
  CHECK("4 MiB aligned: contents kept", intact_huge(start, start, 16 * MIB, 0));
  ok = huge_valid(e);
  if (!ok) fprintf(stderr, "  4 MiB aligned: %s\n", why);
  CHECK("4 MiB aligned: checker accepts after the resizes", ok);
  huge_free_checked(e);

  /* 256 MiB aligned (>= MM_SLOT_SIZE): the block starts a slot in,
   * HUGE_AT, its header one slot below */
  e = huge_new_checked("huge, 256 MiB aligned", heap, 40 * MIB, 2 * MM_SLOT_SIZE);
  slot = slot_of_extent(e);
  base = (uintptr_t)slot;
  start = e->node.start;
  CHECK("HUGE_AT: table HUGE, then HUGE_AT at the block",
        table_at(base) == MM_SLOT_HUGE && table_at(start) == MM_SLOT_HUGE_AT &&
            start == base + MM_SLOT_SIZE);
  CHECK("HUGE_AT: the slot below the block is reserved, not accessible",
        reserved_no_access(base + MM_SLOT_META_SIZE) && reserved_no_access(start - 1));
  r = region_huge_resize(e, 30 * MIB, false);
  CHECK("HUGE_AT: shrinks in place", r == e && slot->size == MM_SLOT_SIZE + 30 * MIB &&
                                         huge_table_ok(e) && unmapped(start + 30 * MIB));
  r = region_huge_resize(e, 40 * MIB, false); /* into what the shrink gave back */
  REQUIRE("HUGE_AT: grows in place", r == e && e->node.start == start && slot->size == MM_SLOT_SIZE + 40 * MIB &&
                                       huge_table_ok(e));
  CHECK("HUGE_AT: contents kept", intact_huge(start, start, 30 * MIB, 0));
  ok = huge_valid(e);
  if (!ok) fprintf(stderr, "  HUGE_AT: %s\n", why);
  CHECK("HUGE_AT: checker accepts after the resizes", ok);
  void *blocker = block_behind(base + slot->size);
  errno = 0;
  r = region_huge_resize(e, 60 * MIB, false);
  CHECK("HUGE_AT: a block that would have to move is refused (ENOMEM)", r == NULL && errno == ENOMEM);
  CHECK("HUGE_AT: ... and nothing changed",
        e->node.start == start && slot->size == MM_SLOT_SIZE + 40 * MIB &&
            e->node.ndatablocks == (40 * MIB) >> MM_DATABLOCK_SHIFT && huge_table_ok(e) &&
            region_huge_at(start) == e && intact_huge(start, start, 30 * MIB, 0));
  if (blocker) munmap(blocker, DB);
  huge_free_checked(e);
}

/* The forced move in the process's default configuration: transparent huge
 * pages asked for on the block (options.hugepages 2), and a block with a
 * gap between its header and its data (alignment in (2 MiB, MM_SLOT_SIZE)).
 * Header and data are then two kernel mappings, which one mremap cannot
 * span: region_huge_resize moves them apart, and the move must succeed.  A
 * separate ctest (unit_region_huge_move): see the CMakeLists. */
static void test_huge_move_default(uint32_t heap) {
  CHECK("default hugepages option", options.hugepages == 2);
  extent_t *e = huge_new_checked("huge, default alignment, THP", heap, 60 * MIB, 0);
  huge_forced_move("huge, default alignment, THP", e, 90 * MIB, 60 * MIB, 0, true);
  e = huge_new_checked("huge, 4 MiB aligned", heap, 33 * MIB, 4 * MIB);
  huge_forced_move("huge, 4 MiB aligned", e, 60 * MIB, 33 * MIB, 0, true);
  e = huge_new_checked("huge, 64 MiB aligned", heap, 20 * MIB, 64 * MIB);
  huge_forced_move("huge, 64 MiB aligned", e, 50 * MIB, 20 * MIB, 0, true);
}

int main(int argc, char **argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x5eed0001ULL;
  bool move_only = argc > 2 && strcmp(argv[2], "huge-move") == 0;
  rng = seed | 1;
  verbose = true; /* every rejection's reason, as this test always printed them */
  fprintf(stderr, "unit_region: seed 0x%llx%s\n", (unsigned long long)seed,
          move_only ? ", huge-move" : "");
  REQUIRE("plain mode (no secure guards)", options.secure == 0);
  const uint32_t heap = 3;
  if (move_only) {
    test_huge_move_default(heap);
    return check_summary("unit_region huge-move");
  }

  /* slot A: a new slot, then carved by hand */
  extent_t *fa;
  slot_t *a = region_slot_new(heap, &fa);
  REQUIRE("region_slot_new", a != NULL);
  test_new_slot(a, fa, heap);

  /* slot B: the commit mark and descriptors */
  extent_t *fb;
  slot_t *b = region_slot_new(heap, &fb);
  REQUIRE("region_slot_new (second)", b != NULL && b != a);
  CHECK("two slots: both HEAP", table_at((uintptr_t)a) == MM_SLOT_HEAP && table_at((uintptr_t)b) == MM_SLOT_HEAP);
  test_commit(b);
  test_descriptors(b);
  uintptr_t bb = (uintptr_t)b;
  region_slot_release(b);
  CHECK("release: table entry cleared", table_at(bb) == MM_SLOT_NONE);
  CHECK("release: base entry cleared", slot_heap_base(bb) == 0);
  CHECK("release: the slot is unmapped", unmapped(bb) && unmapped(bb + MM_SLOT_SIZE - 1));
  CHECK("release: the other slot stays", table_at((uintptr_t)a) == MM_SLOT_HEAP);

  test_extent_map(a, fa);
  uintptr_t ab = (uintptr_t)a;
  region_slot_release(a);
  CHECK("release: table entry cleared", table_at(ab) == MM_SLOT_NONE && unmapped(ab));

  test_huge(heap);
  return check_summary("unit_region");
}
