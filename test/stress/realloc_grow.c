/* realloc_grow.c — buffers that grow by realloc: what mmalloc promises
 * about their memory (src/realloc.c, src/large.c).
 *
 *   grow   a vector doubled from 16 B to 64 MiB keeps every byte; past
 *          MM_GROW_MAP_MIN (1 MiB) it gets a mapping of its own, once, and
 *          from then on grows without a new block (in place or by mremap)
 *   onto   a huge block that outgrows its mapping moves onto a freed
 *          mapping waiting in the huge cache, without a copy: it lands on
 *          that mapping's address, and the process's RSS falls by the
 *          cached pages it replaced instead of rising by the growth
 *   tail   a block that is not growing, given a bigger cached mapping,
 *          gives the rest of it back at once
 *   bound  a growing block takes a cached mapping only up to MM_HUGE_KEEP
 *          (64) times its size, and the statistics count the room it keeps
 *          (huge_room_bytes)
 *   peak   two vectors grown in turn to 64 MiB, one freed as the other
 *          still grows (the realloc-grow benchmark's pattern): the peak RSS
 *          stays within 8 MiB of the live peak (96 MiB), where keeping
 *          every freed mapping and every left-behind block cost 64 MiB more
 *
 * The purge delay is 60 s and the purge thread off, so that what is cached
 * stays cached while a part looks; each part starts from an empty huge
 * cache (mm_collect).  One thread: every block is of one local heap.  Not a
 * benchmark.
 *
 * usage: realloc_grow [grow|onto|tail|bound|peak|all] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memtest.h"

#define MiB ((size_t)1 << 20)

/* A number of the statistics' "total" object. */
static int64_t total(const char *key) {
  char path[64];
  snprintf(path, sizeof(path), "total.%s", key);
  return stats_number(path);
}

static uint64_t word_at(uint64_t id, size_t off) {
  uint64_t x = (id << 32) ^ off ^ 0x9e3779b97f4a7c15ull;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  return x ^ (x >> 29);
}

/* One word per 4 KiB and the last word of [from, to). */
static void fill(unsigned char *p, uint64_t id, size_t from, size_t to) {
  for (size_t off = from; off + 8 <= to; off += 4096) {
    uint64_t w = word_at(id, off);
    memcpy(p + off, &w, 8);
  }
  uint64_t w = word_at(id, to - 8);
  memcpy(p + to - 8, &w, 8);
}

/* fill's words on [0, to), written in doubling steps from 16 B. */
static bool intact(const unsigned char *p, uint64_t id, size_t to) {
  for (size_t end = 16; end <= to; end *= 2) {
    size_t from = end == 16 ? 0 : end / 2;
    for (size_t off = from; off + 8 <= end; off += 4096) {
      uint64_t w;
      memcpy(&w, p + off, 8);
      if (w != word_at(id, off)) return false;
    }
    uint64_t w;
    memcpy(&w, p + end - 8, 8);
    if (w != word_at(id, end - 8)) return false;
  }
  return true;
}

/* Grow p (size bytes, id's pattern) by doubling to `to`; every step checked. */
static unsigned char *grow_to(unsigned char *p, uint64_t id, size_t *size, size_t to) {
  while (*size < to) {
    unsigned char *q = mm_realloc(p, *size * 2);
    REQUIRE("realloc grows", q != NULL);
    REQUIRE("realloc keeps the first and last word",
            memcmp(q, &(uint64_t){word_at(id, 0)}, 8) == 0 &&
            memcmp(q + *size - 8, &(uint64_t){word_at(id, *size - 8)}, 8) == 0);
    fill(q, id, *size, *size * 2);
    *size *= 2;
    p = q;
  }
  return p;
}

static unsigned char *vec_new(uint64_t id, size_t *size) {
  unsigned char *p = mm_malloc(16);
  REQUIRE("malloc(16)", p != NULL);
  *size = 16;
  fill(p, id, 0, 16);
  return p;
}

static void part_grow(void) {
  int64_t huge0 = total("huge_allocs"), remapped0 = total("realloc_remapped");
  size_t size;
  unsigned char *v = vec_new(1, &size);
  v = grow_to(v, 1, &size, MiB / 2);
  CHECK("grow: below 1 MiB the vector is no mapping of its own", total("huge_allocs") == huge0);
  v = grow_to(v, 1, &size, 2 * MiB);
  CHECK("grow: by 2 MiB it has a mapping of its own", total("huge_allocs") == huge0 + 1 &&
                                                          total("huge_live_bytes") == (int64_t)(2 * MiB));
  v = grow_to(v, 1, &size, 64 * MiB);
  CHECK("grow: every byte survives 22 doublings", intact(v, 1, size));
  CHECK("grow: it got that mapping once", total("huge_allocs") == huge0 + 1);
  CHECK("grow: the mapping holds it", total("huge_live_bytes") == (int64_t)(64 * MiB));
  fprintf(stderr, "realloc_grow grow: %lld huge block(s), %lld moved by mremap\n",
          (long long)(total("huge_allocs") - huge0),
          (long long)(total("realloc_remapped") - remapped0));
  mm_free(v);
}

static void part_onto(void) {
  size_t size;
  unsigned char *v = vec_new(2, &size);
  v = grow_to(v, 2, &size, 32 * MiB);
  unsigned char *x = mm_malloc(64 * MiB);
  REQUIRE("onto: malloc(64 MiB)", x != NULL);
  memset(x, 7, 64 * MiB);
  mm_free(x);
  CHECK("onto: the freed mapping waits in the huge cache",
        total("huge_cached_bytes") >= (int64_t)(64 * MiB));
  int64_t remapped0 = total("realloc_remapped");
  size_t rss0 = rss_bytes();
  unsigned char *w = mm_realloc(v, 64 * MiB);
  size_t rss1 = rss_bytes();
  REQUIRE("onto: realloc to 64 MiB", w != NULL);
  fill(w, 2, 32 * MiB, 64 * MiB);
  size = 64 * MiB;
  size_t rss2 = rss_bytes();
  fprintf(stderr, "realloc_grow onto: RSS %+.1f MiB at the realloc, %+.1f MiB after writing the new half\n",
          ((double)rss1 - (double)rss0) / MiB, ((double)rss2 - (double)rss0) / MiB);
  CHECK("onto: the block moved onto the cached mapping", w == x);
  CHECK("onto: moved by mremap", total("realloc_remapped") == remapped0 + 1);
  CHECK("onto: the cache gave it up", total("huge_cached_bytes") == 0);
  CHECK("onto: every byte moved", intact(w, 2, size));
  CHECK("onto: the RSS fell by the cached pages the block replaced", rss1 + 24 * MiB <= rss0);
  CHECK("onto: writing the new half faults in nothing new", rss2 <= rss1 + 4 * MiB);
  mm_free(w);
}

static void part_tail(void) {
  unsigned char *x = mm_malloc(64 * MiB);
  REQUIRE("tail: malloc(64 MiB)", x != NULL);
  memset(x, 7, 64 * MiB);
  mm_free(x);
  size_t rss0 = rss_bytes();
  unsigned char *y = mm_malloc(40 * MiB);
  REQUIRE("tail: malloc(40 MiB)", y != NULL);
  size_t rss1 = rss_bytes();
  fprintf(stderr, "realloc_grow tail: RSS %+.1f MiB\n", ((double)rss1 - (double)rss0) / MiB);
  CHECK("tail: the cached mapping is reused", y == x);
  CHECK("tail: the 24 MiB it does not need go back", rss1 + 16 * MiB <= rss0);
  mm_free(y);
}

static void part_bound(void) {
  /* the huge caches hold at most a sixteenth of the machine's memory
   * (MM_HUGE_CACHE_SHARE): a machine under 4 GiB cannot keep this block */
  long long limit = stats_number("huge_cache.limit_bytes");
  if (limit < (long long)(256 * MiB)) {
    fprintf(stderr, "realloc_grow bound: skipped, the huge caches may hold only %lld MiB here\n", limit >> 20);
    return;
  }
  unsigned char *x = mm_malloc(256 * MiB); /* only reserved: never touched */
  REQUIRE("bound: malloc(256 MiB)", x != NULL);
  mm_free(x);
  size_t size;
  unsigned char *v = vec_new(3, &size);
  bool inside = false;
  while (size < 2 * MiB) {
    v = grow_to(v, 3, &size, size * 2);
    inside |= v >= x && v < x + 256 * MiB;
  }
  CHECK("bound: up to 2 MiB (64 x 2 MiB < 256 MiB) the vector never takes the cached mapping", !inside);
  v = grow_to(v, 3, &size, 4 * MiB);
  CHECK("bound: at 4 MiB (64 x 4 MiB >= 256 MiB) it moves onto it", v == x);
  CHECK("bound: every byte survives", intact(v, 3, size));
  CHECK("bound: the statistics count the room kept behind it",
        total("huge_room_bytes") == (int64_t)(256 * MiB - size));
  mm_free(v);
  CHECK("bound: and no room once it is freed", total("huge_room_bytes") == 0);
}

static void part_peak(void) {
  size_t base = rss_bytes(), peak = base;
  unsigned char *v[2];
  size_t size[2];
  uint64_t next = 10;
  for (int k = 0; k < 2; k++) v[k] = vec_new(next++, &size[k]);
  uint64_t id[2] = {10, 11};
  int done = 0;
  while (done < 8) {
    for (int k = 0; k < 2; k++) {
      v[k] = grow_to(v[k], id[k], &size[k], size[k] * 2);
      size_t r = rss_bytes();
      if (r > peak) peak = r;
      if (size[k] < 64 * MiB) continue;
      REQUIRE("peak: every byte survives", intact(v[k], id[k], size[k]));
      mm_free(v[k]);
      done++;
      id[k] = next++;
      v[k] = vec_new(id[k], &size[k]);
    }
  }
  for (int k = 0; k < 2; k++) mm_free(v[k]);
  fprintf(stderr, "realloc_grow peak: %.1f MiB above the start (live peak 96 MiB)\n",
          ((double)peak - (double)base) / MiB);
  CHECK("peak: RSS within 8 MiB of the live peak", peak - base <= 104 * MiB);
}

int main(int argc, char **argv) {
  const char *part = argc > 1 ? argv[1] : "all";
  bool all = strcmp(part, "all") == 0;
  CHECK("a long purge delay", mm_option_set("purge_delay_ms", 60000) == 0);
  CHECK("no purge thread", mm_option_set("purge_thread_mib", 0) == 0);
  bool known = false;
  if (all || strcmp(part, "grow") == 0) mm_collect(), part_grow(), known = true;
  if (all || strcmp(part, "onto") == 0) mm_collect(), part_onto(), known = true;
  if (all || strcmp(part, "tail") == 0) mm_collect(), part_tail(), known = true;
  if (all || strcmp(part, "bound") == 0) mm_collect(), part_bound(), known = true;
  if (all || strcmp(part, "peak") == 0) mm_collect(), part_peak(), known = true;
  CHECK("a known part", known);
  mm_collect();
  return check_summary("realloc_grow");
}
