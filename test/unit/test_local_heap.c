/* test_local_heap.c — one local heap, driven directly: large blocks, pages,
 * in-place resizing, purging, against a model of the live extents, with the
 * heap checker (tree order/balance/maxima/coalescing, dirty accounting,
 * extent map, every extent on one list, the region checker) after every
 * operation.  Not a benchmark.
 *
 * usage: unit_local_heap [SEED] [OPS] */
#include <stdint.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "unit.h"
#include "local_heap.h"
#include "page.h"
#include "thread_heap.h"

typedef struct live_s {
  uintptr_t start;
  size_t bytes;
  extent_t *e;
  int page_class; /* -1 for a large block */
} live_t;

#define MAX_LIVE 512
static live_t live[MAX_LIVE];
static int nlive;

static unsigned char pattern(uintptr_t a) { return (unsigned char)(a >> 12) ^ 0x5a; }

static void fill(live_t *l) {
  unsigned char *p = (unsigned char *)l->start;
  p[0] = pattern(l->start);
  p[l->bytes - 1] = pattern(l->start + 1);
  if (l->bytes > 8192) p[l->bytes / 2] = pattern(l->start + 2);
}

static int intact(const live_t *l) {
  const unsigned char *p = (const unsigned char *)l->start;
  return p[0] == pattern(l->start) && p[l->bytes - 1] == pattern(l->start + 1) &&
         (l->bytes <= 8192 || p[l->bytes / 2] == pattern(l->start + 2));
}

static int heap_ok(local_heap_t *h, const char *when) {
  char why[256];
  local_heap_lock(h);
  bool valid = local_heap_is_valid(h, why, sizeof(why));
  local_heap_unlock(h);
  if (!valid) {
    fprintf(stderr, "heap invalid after %s: %s\n", when, why);
    return 0;
  }
  /* live extents never overlap, and the extent map names them */
  for (int i = 0; i < nlive; i++) {
    slot_t *slot = slot_of_address(live[i].start);
    if (region_extent_at(slot, live[i].start) != live[i].e ||
        region_extent_at(slot, (live[i].start + live[i].bytes - 1) & ~(MM_DATABLOCK_SIZE - 1)) != live[i].e) {
      fprintf(stderr, "extent map does not name live extent %p after %s\n", (void *)live[i].start, when);
      return 0;
    }
    for (int j = i + 1; j < nlive; j++)
      if (live[i].start < live[j].start + live[j].bytes && live[j].start < live[i].start + live[i].bytes) {
        fprintf(stderr, "extents %p and %p overlap after %s\n", (void *)live[i].start,
                (void *)live[j].start, when);
        return 0;
      }
  }
  return 1;
}

/* The thread heap's side of a page hand-over, done here by hand: a page
 * block is claimed (initialised, owned by a stand-in heap) under its home
 * heap's lock, and comes back with its owner cleared under that lock. */
static thread_heap_t stand_in;

static void claim(extent_t *page, void *arg) {
  page_init(page, *(unsigned *)arg);
  page_set_owner(page, &stand_in, 1);
}

static void give_back_page(extent_t *page) {
  local_heap_t *home = local_heap_of_extent(page);
  local_heap_lock(home);
  page_clear_owner(page);
  local_heap_cache_page_locked(home, page);
  local_heap_unlock(home);
}

static void drop(local_heap_t *h, int i) {
  (void)h;
  if (live[i].page_class >= 0) {
    give_back_page(live[i].e);
  } else {
    local_heap_free_large(live[i].e, false);
  }
  live[i] = live[--nlive];
}

/* Under address-space pressure a free extent gives its address space back in
 * place (UNMAPPED, its slot gets holes); if another mapping takes that range
 * before the heap maps it again, the extent is lost: it must stay a LOST
 * extent that tiles the slot, is never handed out, and never merges with a
 * neighbour that is freed next to it.  (Found by the fuzz corpus: the old
 * code deleted its descriptor, leaving a gap in the tiling and map entries
 * naming a descriptor that could be reused.) */
static void test_lost_hole(local_heap_t *h) {
  void *p = local_heap_alloc_large(h, 1 << 20, 0, false);
  REQUIRE("a block before the hole", p != NULL);
  slot_t *slot = slot_of_address((uintptr_t)p);
  extent_t *pe = region_extent_at(slot, (uintptr_t)p);
  local_heap_lock(h);
  local_heap_purge(h, true); /* nothing dirty: the hole can be unmapped as it is */
  extent_t *f = region_extent_at(slot, extent_end(pe));
  bool free_behind = f && f->kind == MM_EXTENT_FREE && f->dirty == 0 && f->node.ndatablocks >= 64;
  uintptr_t s = free_behind ? f->node.start : 0;
  size_t bytes = free_behind ? f->node.ndatablocks << MM_DATABLOCK_SHIFT : 0;
  if (free_behind) { /* what the pressure relief does to it */
    os_release((void *)s, bytes);
    f->flags = MM_EXTENT_ZERO | MM_EXTENT_UNMAPPED;
    slot->holes = 1;
  }
  local_heap_unlock(h);
  REQUIRE("a clean free extent behind the block", free_behind);
  /* another mapping takes the start of the hole */
  void *q = mmap((void *)s, 64 << 10, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  REQUIRE("a foreign mapping in the hole", q == (void *)s);
  memset(q, 0x77, 64 << 10);
  void *r = local_heap_alloc_large(h, 1 << 20, 0, false);
  CHECK("the allocation goes elsewhere", r != NULL && ((uintptr_t)r >= s + bytes ||
                                                      (uintptr_t)r + (1 << 20) <= s));
  CHECK("the hole is kept as a LOST extent", region_extent_at(slot, s) == f &&
                                                 f->kind == MM_EXTENT_LOST);
  CHECK("heap valid with a lost hole", heap_ok(h, "a lost hole"));
  local_heap_free_large(pe, false); /* the hole's left neighbour */
  CHECK("the lost extent merged with nothing", f->kind == MM_EXTENT_LOST && f->node.start == s &&
                                                   (f->node.ndatablocks << MM_DATABLOCK_SHIFT) == bytes);
  CHECK("heap valid after freeing the hole's neighbour", heap_ok(h, "a lost hole's neighbour freed"));
  if (r) local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)r), (uintptr_t)r), false);
  CHECK("heap valid after the last free", heap_ok(h, "the last free"));
  unsigned char *b = q;
  CHECK("the foreign mapping untouched", b[0] == 0x77 && b[(64 << 10) - 1] == 0x77);
  munmap(q, 64 << 10);
}

/* Medium large blocks (up to MM_MEDIUM_DATABLOCKS) live in slots of their
 * own: after a burst of 1 MiB buffers is freed, a crowd of 64 KiB blocks
 * does not split the buffers' holes, and the next buffers find them again
 * (first fit over one tree put the small blocks into the lowest hole and
 * sent the buffers to fresh memory). */
/* The extent of a large block (the block starts at its colour in it). */
static extent_t *extent_of_block(void *p) {
  return region_extent_at(slot_of_address((uintptr_t)p), (uintptr_t)p);
}

static void test_medium_apart(local_heap_t *h) {
  enum { NBUF = 8, NMED = 64 };
  void *buf[NBUF], *med[NMED], *again[NBUF];
  for (int i = 0; i < NBUF; i++) buf[i] = local_heap_alloc_large(h, 1 << 20, 0, false);
  for (int i = 0; i < NBUF; i++) REQUIRE("a buffer", buf[i] != NULL);
  uintptr_t lo = UINTPTR_MAX, hi = 0; /* the buffers' extents */
  for (int i = 0; i < NBUF; i++) {
    uintptr_t a = (uintptr_t)buf[i];
    if (extent_of_block(buf[i])->node.start < lo) lo = extent_of_block(buf[i])->node.start;
    if (extent_end(extent_of_block(buf[i])) > hi) hi = extent_end(extent_of_block(buf[i]));
    CHECK("a buffer is not in a medium slot", slot_of_address(a)->tree == MM_TREE_MAIN);
    local_heap_free_large(region_extent_at(slot_of_address(a), a), false);
  }
  for (int i = 0; i < NMED; i++) {
    med[i] = local_heap_alloc_large(h, 64 << 10, 0, false);
    REQUIRE("a medium block", med[i] != NULL);
    CHECK("a medium block is in a medium slot", slot_of_address((uintptr_t)med[i])->tree == MM_TREE_MEDIUM);
    CHECK("a medium block is outside the buffers' holes",
          (uintptr_t)med[i] + (64 << 10) <= lo || (uintptr_t)med[i] >= hi);
  }
  int reused = 0;
  for (int i = 0; i < NBUF; i++) {
    again[i] = local_heap_alloc_large(h, 1 << 20, 0, false);
    REQUIRE("a buffer again", again[i] != NULL);
    if ((uintptr_t)again[i] >= lo && (uintptr_t)again[i] < hi) reused++;
  }
  CHECK("the next buffers reuse the freed buffers' memory", reused == NBUF);
  CHECK("heap valid with medium slots", heap_ok(h, "medium blocks"));
  { /* the checker: a medium slot's free extents found in the other tree */
    slot_t *ms = slot_of_address((uintptr_t)med[0]);
    char why[256];
    local_heap_lock(h);
    ms->tree = MM_TREE_MAIN;
    bool caught_tree = !local_heap_is_valid(h, why, sizeof why) && strstr(why, "other tree") != NULL;
    ms->tree = MM_TREE_MEDIUM;
    local_heap_unlock(h);
    CHECK("the checker catches a free extent in the other tree", caught_tree);
  }
  { /* a medium block takes the first hole (its extent: the block starts at its own colour) */
    void *hole = med[NMED / 2];
    uintptr_t hole_start = extent_of_block(hole)->node.start;
    local_heap_free_large(extent_of_block(hole), false);
    med[NMED / 2] = local_heap_alloc_large(h, 64 << 10, 0, false);
    CHECK("a medium block reuses the first hole", med[NMED / 2] && extent_of_block(med[NMED / 2])->node.start == hole_start);
  }
  for (int i = 0; i < NMED; i++)
    local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)med[i]), (uintptr_t)med[i]), false);
  for (int i = 0; i < NBUF; i++)
    local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)again[i]), (uintptr_t)again[i]), false);
  CHECK("heap valid after the medium test", heap_ok(h, "medium blocks freed"));
}

/* A block that realloc moves because it grows takes the lowest hole that
 * fits, like any other large block, so that the holes growing arrays leave
 * are reused at once.  (Placed in the middle of the largest free extent
 * instead, to leave it room, every moved array went to fresh memory while
 * the holes stayed dirty: 2.4 times glibc's peak RSS on the cover
 * workload, 1.4 with first fit.) */
static void test_growing_first_fit(void) {
  thread_heap_t *th = thread_heap_current();
  REQUIRE("a thread heap", th != NULL);
  local_heap_t *h = th->local;
  enum { BIG = 512 << 10, SMALL = 192 << 10 };
  void *big = local_heap_alloc_large(h, BIG, 0, false);
  void *mid = local_heap_alloc_large(h, SMALL, 0, false);
  void *top = local_heap_alloc_large(h, SMALL, 0, false);
  REQUIRE("three blocks", big && mid && top);
  REQUIRE("the three lie side by side",
          extent_of_block(mid)->node.start == extent_end(extent_of_block(big)) &&
          extent_of_block(top)->node.start == extent_end(extent_of_block(mid)));
  memset(mid, 0x5A, SMALL);
  uintptr_t big_start = extent_of_block(big)->node.start;
  local_heap_free_large(extent_of_block(big), false);
  /* mid cannot grow in place (top is behind it): it moves */
  unsigned char *moved = thread_heap_realloc(mid, 256 << 10);
  REQUIRE("the realloc", moved != NULL);
  CHECK("a growing block that moves keeps its contents", moved[0] == 0x5A && moved[SMALL - 1] == 0x5A);
  CHECK("a growing block that moves takes the lowest hole that fits",
        extent_of_block(moved)->node.start <= big_start);
  { /* the checker: only a page may name an owning thread heap (the
       usable_size fast path takes any extent that does for a page) */
    extent_t *te = region_extent_at(slot_of_address((uintptr_t)top), (uintptr_t)top);
    char why[256] = "";
    local_heap_lock(h);
    atomic_store_relaxed(&te->xowner, th);
    bool caught = !local_heap_is_valid(h, why, sizeof why) && strstr(why, "owning thread heap") != NULL;
    atomic_store_relaxed(&te->xowner, NULL);
    local_heap_unlock(h);
    CHECK("the checker catches a large block that names an owner", caught);
  }
  thread_heap_free_slow(moved, "free");
  thread_heap_free_slow(top, "free");
  CHECK("heap valid after the growing block", heap_ok(h, "a growing block moved"));
}

/* A freed medium block waits in its heap's medium cache and the next
 * request of its size takes it back whole; more than MM_MEDIUM_CACHE_MAX
 * of them send the oldest to the tree, a request of a size the cache does
 * not hold sends all of them, and a forced purge empties it; the heap
 * stays valid throughout. */
static void test_medium_cache(local_heap_t *h) {
  enum { N = MM_MEDIUM_CACHE_MAX + 3, SIZE = 40 << 10 };
  void *b[N];
  for (int i = 0; i < N; i++) {
    b[i] = local_heap_alloc_large(h, SIZE, 0, false);
    REQUIRE("a medium block", b[i] != NULL);
  }
  uint64_t frees0 = h->large_frees;
  extent_t *b0 = extent_of_block(b[0]);
  local_heap_free_large(b0, false);
  local_heap_lock(h);
  extent_t *c = region_extent_at(slot_of_address((uintptr_t)b[0]), (uintptr_t)b[0]);
  bool cached = c && c->kind == MM_EXTENT_CACHED && h->medium_cache.first == c && c->dirty > 0;
  local_heap_unlock(h);
  CHECK("a freed medium block waits in the medium cache, dirty", cached && h->large_frees == frees0 + 1);
  CHECK("heap valid with a cached medium block", heap_ok(h, "a cached medium block"));
  void *again = local_heap_alloc_large(h, SIZE, 0, false);
  CHECK("the next request of its size takes it back", again && extent_of_block(again) == b0);
  CHECK("the cache is empty again", h->medium_cache_count == 0 && h->medium_cache.first == NULL);
  void *other = local_heap_alloc_large(h, 2 * SIZE, 0, false);
  REQUIRE("a medium block of another size", other != NULL);
  CHECK("a request of another size does not take it", other != again);
  local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)other), (uintptr_t)other), false);
  b[0] = again;
  for (int i = 0; i < N; i++)
    local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)b[i]), (uintptr_t)b[i]), false);
  CHECK("the cache holds at most MM_MEDIUM_CACHE_MAX", h->medium_cache_count == MM_MEDIUM_CACHE_MAX);
  CHECK("heap valid with a full medium cache", heap_ok(h, "a full medium cache"));
  void *odd = local_heap_alloc_large(h, 3 * SIZE, 0, false);
  REQUIRE("a medium block of a size nobody freed", odd != NULL);
  CHECK("a request the cache cannot serve sends every cached block to the tree",
        h->medium_cache_count == 0 && h->medium_cache.first == NULL);
  CHECK("heap valid after the cache went to the tree", heap_ok(h, "medium cache flushed"));
  local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)odd), (uintptr_t)odd), false);
  CHECK("a freed block is cached again", h->medium_cache_count == 1);
  local_heap_lock(h);
  local_heap_purge(h, true);
  bool empty = h->medium_cache_count == 0 && h->medium_cache.first == NULL;
  local_heap_unlock(h);
  CHECK("a forced purge empties the medium cache", empty);
  CHECK("heap valid after the medium cache was purged", heap_ok(h, "medium cache purged"));
  { /* the checker: a count that disagrees with the list */
    void *p = local_heap_alloc_large(h, SIZE, 0, false);
    REQUIRE("a medium block", p != NULL);
    local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)p), (uintptr_t)p), false);
    char why[256] = "";
    local_heap_lock(h);
    h->medium_cache_count++;
    bool caught = !local_heap_is_valid(h, why, sizeof why) && strstr(why, "medium_cache_count") != NULL;
    h->medium_cache_count--;
    local_heap_purge(h, true);
    local_heap_unlock(h);
    CHECK("the checker catches a medium cache count that disagrees with its list", caught);
  }
}

/* A free extent idle for the whole purge delay that a newly freed
 * neighbour joins is purged at the merge (decay.c): merged as it was, it
 * would take the neighbour's time and wait a whole delay again, and a
 * region that keeps receiving frees would keep its old free memory
 * resident for ever.  A neighbour freed within the delay stays dirty. */
static void test_idle_neighbour(local_heap_t *h) {
  long delay = options.purge_delay_ms;
  options.purge_delay_ms = 30;
  /* extents of 256 KiB with the colour's room: four fill the 1 MiB hole
   * the earlier tests leave */
  enum { N = 4, SIZE = (256 << 10) - MM_COLOUR_ROOM };
  void *b[N];
  for (int i = 0; i < N; i++) {
    b[i] = local_heap_alloc_large(h, SIZE, 0, false);
    REQUIRE("a block", b[i] != NULL);
    memset(b[i], 0x33, SIZE);
  }
  int ordered = 1; /* carved one after another: each extent right after the previous */
  for (int i = 1; i < N; i++)
    ordered &= region_extent_at(slot_of_address((uintptr_t)b[i]), (uintptr_t)b[i])->node.start ==
               extent_end(region_extent_at(slot_of_address((uintptr_t)b[i - 1]), (uintptr_t)b[i - 1]));
  REQUIRE("the blocks lie side by side", ordered);
#define FREE_BLOCK(p) local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)(p)), (uintptr_t)(p)), false)
  FREE_BLOCK(b[0]);
  /* no scheduled purge (a heartbeat, the purge thread) may take b[0] in
   * the meantime: the heap's next purge is put off for a long while */
  local_heap_lock(h);
  atomic_store_relaxed(&h->xpurge_at, ((uint64_t)1 << 32) | (os_now_ms() + 3600 * 1000u));
  local_heap_unlock(h);
  struct timespec ts = {0, 60 * 1000000L};
  nanosleep(&ts, NULL); /* b[0] idle for twice the delay */
  local_heap_lock(h);
  uint64_t purged0 = h->purged_bytes;
  local_heap_unlock(h);
  FREE_BLOCK(b[1]); /* joins b[0]: b[0] is due, purged now */
  local_heap_lock(h);
  extent_t *e = region_extent_at(slot_of_address((uintptr_t)b[0]), (uintptr_t)b[0]);
  uint64_t purged1 = h->purged_bytes;
  size_t dirty1 = e->dirty;
  local_heap_unlock(h);
  CHECK("a neighbour idle for the delay is purged when a free joins it",
        purged1 - purged0 >= SIZE && dirty1 <= large_datablocks(SIZE));
  FREE_BLOCK(b[2]); /* joins at once: b[1] is not due, nothing purged */
  local_heap_lock(h);
  e = region_extent_at(slot_of_address((uintptr_t)b[0]), (uintptr_t)b[0]);
  CHECK("a neighbour freed within the delay stays dirty",
        h->purged_bytes == purged1 && e->dirty >= 2 * large_datablocks(SIZE));
  local_heap_unlock(h);
  FREE_BLOCK(b[3]);
#undef FREE_BLOCK
  local_heap_lock(h);
  local_heap_purge(h, true); /* the schedule back to normal */
  local_heap_unlock(h);
  CHECK("heap valid after the idle-neighbour test", heap_ok(h, "idle neighbour"));
  options.purge_delay_ms = delay;
}

int main(int argc, char **argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x1234abcdULL;
  long ops = argc > 2 ? atol(argv[2]) : (MM_DEBUG >= 3 ? 3000 : 20000);
  rng = seed | 1;
  fprintf(stderr, "unit_local_heap: seed 0x%llx, %ld ops\n", (unsigned long long)seed, ops);
  thread_heap_process_init();
  local_heap_t *h = &mm_heaps[0];

  /* Placement: first fit.  The first block of a fresh heap has the rest of
   * its slot behind it, and grows in place into it. */
  void *first = local_heap_alloc_large(h, 1 << 20, 0, false);
  REQUIRE("first large block", first != NULL);
  extent_t *fe = region_extent_at(slot_of_address((uintptr_t)first), (uintptr_t)first);
  slot_t *fslot = slot_of_extent(fe);
  extent_t *behind = region_extent_at(fslot, extent_end(fe));
  CHECK("room behind the first large block",
        behind && behind->kind == MM_EXTENT_FREE && behind->node.ndatablocks >= fe->node.ndatablocks);
  CHECK("fresh memory reads as zero", ((unsigned char *)first)[12345] == 0);
  /* ... so it grows in place */
  memset(first, 0xAB, 1 << 20);
  CHECK("grows in place into the room", local_heap_resize_large(fe, 8 << 20));
  CHECK("contents kept when growing in place",
        ((unsigned char *)first)[(1 << 20) - 1] == 0xAB && large_block(fe) == (uintptr_t)first);
  CHECK("shrinks in place",
        local_heap_resize_large(fe, 2 << 20) &&
        fe->node.ndatablocks == (fe->offset + (2 << 20) + MM_DATABLOCK_SIZE - 1) / MM_DATABLOCK_SIZE &&
        large_block(fe) == (uintptr_t)first && large_usable(fe) >= (2 << 20));
  CHECK("heap valid after resizes", heap_ok(h, "resizes"));
  local_heap_free_large(fe, false);
  CHECK("heap valid after the free", heap_ok(h, "first free"));

  /* Aligned large blocks. */
  for (size_t align = 8192; align <= ((size_t)4 << 20); align *= 2) {
    void *p = local_heap_alloc_large(h, 40000, align, true);
    CHECK("aligned large block", p && ((uintptr_t)p & (align - 1)) == 0);
    if (p) local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)p), (uintptr_t)p), false);
  }
  CHECK("heap valid after aligned blocks", heap_ok(h, "aligned"));

  /* Colours (config.h): MM_COLOURS large blocks in a row start at as many
   * different offsets into their first datablock, whole colour steps, each
   * with its size after it; an aligned one, and every one with the colours
   * off, on the datablock itself. */
  {
    void *c[MM_COLOURS];
    uint64_t seen = 0;
    bool fits = true;
    for (int i = 0; i < (int)MM_COLOURS; i++) {
      c[i] = local_heap_alloc_large(h, 256 << 10, 0, false);
      REQUIRE("coloured large block", c[i] != NULL);
      uintptr_t off = (uintptr_t)c[i] & (MM_DATABLOCK_SIZE - 1);
      extent_t *e = region_extent_at(slot_of_address((uintptr_t)c[i]), (uintptr_t)c[i]);
      CHECK("a colour is whole steps, and the extent's offset", off % MM_COLOUR_STEP == 0 && e->offset == off);
      seen |= (uint64_t)1 << (off / MM_COLOUR_STEP);
      fits = fits && large_block(e) == (uintptr_t)c[i] && large_usable(e) >= (256 << 10) &&
             large_block(e) + large_usable(e) == extent_end(e);
    }
    CHECK("MM_COLOURS blocks in a row take every colour", seen == ~(uint64_t)0);
    { /* the checker: a colour that is not a whole step */
      extent_t *e = region_extent_at(slot_of_address((uintptr_t)c[0]), (uintptr_t)c[0]);
      char why[256] = "";
      local_heap_lock(h);
      uint32_t keep = e->offset;
      e->offset = keep + 8;
      bool caught = !local_heap_is_valid(h, why, sizeof why) && strstr(why, "colour") != NULL;
      e->offset = keep;
      local_heap_unlock(h);
      CHECK("the checker catches a large block's colour off its steps", caught);
    }
    CHECK("each coloured block has its size before its extent's end", fits);
    void *a = local_heap_alloc_large(h, 256 << 10, 2 * MM_COLOUR_STEP, false);
    CHECK("a block aligned beyond a colour step starts on its datablock",
          a && ((uintptr_t)a & (MM_DATABLOCK_SIZE - 1)) == 0);
    /* below MM_COLOUR_PAD_MIN a block takes no datablock more: 64 KiB has
     * no colour, 64 KiB less 2 KiB the colours of its 2 KiB of slack */
    void *small = local_heap_alloc_large(h, 64 << 10, 0, false), *slack[8];
    extent_t *se = small ? region_extent_at(slot_of_address((uintptr_t)small), (uintptr_t)small) : NULL;
    CHECK("a 64 KiB block takes 16 datablocks and starts on the first",
          se && se->node.ndatablocks == 16 && se->offset == 0);
    bool within = true, moved = false;
    for (int i = 0; i < 8; i++) {
      slack[i] = local_heap_alloc_large(h, (64 << 10) - 2048, 0, false);
      REQUIRE("a block with 2 KiB of slack", slack[i] != NULL);
      extent_t *e = region_extent_at(slot_of_address((uintptr_t)slack[i]), (uintptr_t)slack[i]);
      within = within && e->node.ndatablocks == 16 && e->offset <= 2048;
      moved = moved || e->offset != 0;
    }
    CHECK("a block with slack is coloured within it, in no more datablocks", within && moved);
    for (int i = 0; i < 8; i++)
      local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)slack[i]), (uintptr_t)slack[i]), false);
    if (se) local_heap_free_large(se, false);
    options.cache_colour = 0;
    void *plain = local_heap_alloc_large(h, 256 << 10, 0, false);
    extent_t *pe = plain ? region_extent_at(slot_of_address((uintptr_t)plain), (uintptr_t)plain) : NULL;
    CHECK("without colours a block starts on its datablock, in no more datablocks than its size",
          pe && ((uintptr_t)plain & (MM_DATABLOCK_SIZE - 1)) == 0 && pe->node.ndatablocks == 64);
    if (pe) local_heap_free_large(pe, false);
    options.cache_colour = 1;
    if (a) local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)a), (uintptr_t)a), false);
    for (int i = 0; i < (int)MM_COLOURS; i++)
      local_heap_free_large(region_extent_at(slot_of_address((uintptr_t)c[i]), (uintptr_t)c[i]), false);
    CHECK("heap valid after coloured blocks", heap_ok(h, "colours"));
  }

  /* Random operations against the model. */
  long counts[6] = {0};
  for (long op = 0; op < ops; op++) {
    unsigned kind = (unsigned)(next_rand() % 100);
    const char *when = "?";
    if (nlive > 0 && (kind < 35 || nlive == MAX_LIVE)) {
      int i = (int)(next_rand() % (uint64_t)nlive);
      REQUIRE("live block intact before free", intact(&live[i]));
      drop(h, i);
      when = "free";
      counts[0]++;
    } else if (kind < 55) {
      unsigned cls = (unsigned)(next_rand() % MM_CLASSES);
      extent_t *e = local_heap_take_page_block(h, mm_size_classes[cls].ndatablocks, 1, 0, claim, &cls);
      REQUIRE("page", e != NULL);
      live_t *l = &live[nlive++];
      l->start = e->node.start;
      l->bytes = e->node.ndatablocks << MM_DATABLOCK_SHIFT;
      l->e = e;
      l->page_class = (int)cls;
      fill(l);
      when = "take page";
      counts[1]++;
    } else if (kind < 85) {
      size_t size = MM_SMALL_MAX + 1 + (size_t)(next_rand() % ((next_rand() % 4) ? (1u << 20) : (16u << 20)));
      size_t align = (next_rand() % 8 == 0) ? (MM_DATABLOCK_SIZE << (next_rand() % 8)) : 0;
      void *p = local_heap_alloc_large(h, size, align, next_rand() % 2);
      REQUIRE("large block", p != NULL);
      REQUIRE("large block aligned", !align || ((uintptr_t)p & (align - 1)) == 0);
      live_t *l = &live[nlive++];
      l->start = (uintptr_t)p;
      l->e = region_extent_at(slot_of_address(l->start), l->start);
      l->bytes = large_usable(l->e);
      REQUIRE("large block at its extent's colour, its size before the extent's end",
              large_block(l->e) == l->start && l->bytes >= size);
      l->page_class = -1;
      fill(l);
      when = "alloc large";
      counts[2]++;
    } else if (kind < 97 && nlive > 0) {
      int i = (int)(next_rand() % (uint64_t)nlive);
      if (live[i].page_class >= 0) continue;
      size_t old = live[i].bytes;
      size_t want = (size_t)(next_rand() % 2 ? old + (next_rand() % (4u << 20)) : MM_SMALL_MAX + 1 + next_rand() % old);
      REQUIRE("intact before resize", intact(&live[i]));
      unsigned char head = ((unsigned char *)live[i].start)[0];
      if (local_heap_resize_large(live[i].e, want)) {
        live[i].bytes = large_usable(live[i].e);
        REQUIRE("resize keeps the start", large_block(live[i].e) == live[i].start);
        REQUIRE("resize fits", live[i].bytes >= want);
        REQUIRE("resize keeps the head byte", ((unsigned char *)live[i].start)[0] == head);
        fill(&live[i]);
        counts[3]++;
      } else {
        REQUIRE("only growth may fail", want > old);
        counts[4]++;
      }
      when = "resize";
    } else {
      local_heap_lock(h);
      local_heap_purge(h, next_rand() % 2);
      local_heap_unlock(h);
      when = "purge";
      counts[5]++;
    }
    if (MM_DEBUG >= 3 || op % 16 == 0 || op == ops - 1) REQUIRE("heap valid", heap_ok(h, when));
  }
  fprintf(stderr, "ops: %ld frees, %ld pages, %ld large, %ld resized, %ld resize refused, %ld purges\n",
          counts[0], counts[1], counts[2], counts[3], counts[4], counts[5]);
  CHECK("exercised every operation", counts[0] && counts[1] && counts[2] && counts[3] && counts[4] && counts[5]);

  for (int i = 0; i < nlive; i++) CHECK("every live block intact at the end", intact(&live[i]));
  while (nlive) drop(h, nlive - 1);
  local_heap_lock(h);
  local_heap_purge(h, true);
  local_heap_unlock(h);
  CHECK("heap valid when empty", heap_ok(h, "drain"));
  size_t free_extents = h->trees[MM_TREE_MAIN].count + h->trees[MM_TREE_MEDIUM].count;
  size_t free_datablocks =
      h->trees[MM_TREE_MAIN].total_datablocks + h->trees[MM_TREE_MEDIUM].total_datablocks;
  CHECK("everything coalesced: one free extent per slot",
        free_extents == h->nslots && free_datablocks == h->nslots * region_slot_data_datablocks());
  CHECK("nothing dirty after a forced purge", h->dirty_datablocks == 0);
  CHECK("page cache drained by the forced purge", h->cache_count == 0);
  test_medium_apart(h);
  test_lost_hole(h);
  test_idle_neighbour(h);
  test_growing_first_fit();
  test_medium_cache(h);
  return check_summary("unit_local_heap");
}
