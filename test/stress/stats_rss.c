/* stats_rss.c — the statistics a user can trust: mmalloc's own figure of
 * the memory it holds resident (resident_bytes in mm_stats_json) moves with
 * the kernel's (/proc/self/statm) through a burst, the free of it and the
 * purge, and live_bytes and returned_bytes say what happened.
 *
 * The margin, as the README states it: the change of resident_bytes from
 * the start is within 5% of the burst plus 8 MiB of the change of the
 * process's resident size.  resident_bytes counts what may be resident
 * (every byte of a block handed out, every carved byte of a page, free
 * memory not yet given back), so a program that touches what it allocates,
 * as this one does, sees the two agree.
 *
 * The burst: 15 of 16 objects small (16-1024 B), 1 of 16 large (64 KiB to
 * 1 MiB), and up to eight 40 MiB huge blocks; every byte written.  The
 * purge delay is 60 s and the purge thread off, so nothing goes back until
 * mm_collect() but the huge blocks the huge cache cannot keep (unmapped at
 * once, and counted as returned).  Not a benchmark.
 *
 * usage: stats_rss [MIB]   (default 512) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "memtest.h"

/* A number in the statistics' "total" object. */
static int64_t total(const char *key) {
  char path[64];
  snprintf(path, sizeof(path), "total.%s", key);
  return stats_number(path);
}

typedef struct snap_s {
  int64_t rss, resident, live, returned;
} snap_t;

static snap_t snap(void) {
  snap_t s = {(int64_t)rss_bytes(), total("resident_bytes"), total("live_bytes"), total("returned_bytes")};
  return s;
}

static void show(const char *when, snap_t s, snap_t base) {
  fprintf(stderr,
          "stats_rss %-9s RSS %+8.1f MiB, resident_bytes %+8.1f MiB (differ by %6.1f MiB), "
          "live %8.1f MiB, returned %8.1f MiB\n",
          when, (double)(s.rss - base.rss) / (1 << 20),
          (double)(s.resident - base.resident) / (1 << 20),
          (double)((s.resident - base.resident) - (s.rss - base.rss)) / (1 << 20),
          (double)s.live / (1 << 20), (double)s.returned / (1 << 20));
}

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 512;
  size_t burst = mib << 20;
  int64_t margin = (int64_t)burst / 20 + ((int64_t)8 << 20);
  CHECK("a long purge delay", mm_option_set("purge_delay_ms", 60000) == 0);
  CHECK("no purge thread", mm_option_set("purge_thread_mib", 0) == 0);
  size_t cap = burst / 64 + 64;
  void **objs = mm_malloc(cap * sizeof(void *)); /* bookkeeping, live throughout */
  REQUIRE("bookkeeping", objs != NULL);
  snap_t base = snap();
  show("start", base, base);

  size_t n = 0, asked = 0;
  uint64_t s = 2024;
  const size_t huge = (size_t)40 << 20;
  for (int i = 0; i < 8 && asked + huge < burst / 2; i++) {
    char *p = mm_malloc(huge);
    REQUIRE("a huge block", p != NULL);
    memset(p, 5, huge);
    objs[n++] = p;
    asked += huge;
  }
  while (asked < burst && n < cap) {
    s = s * 6364136223846793005ull + 1;
    uint64_t r = s >> 33;
    size_t size = r % 16 == 0 ? (64 << 10) + r / 16 % (960 << 10) : 16 + r / 16 % 1009;
    char *p = mm_malloc(size);
    REQUIRE("a block", p != NULL);
    memset(p, 6, size);
    objs[n++] = p;
    asked += size;
  }
  snap_t full = snap();
  show("burst", full, base);
  CHECK("burst: resident_bytes follows the process's RSS",
        abs64((full.resident - base.resident) - (full.rss - base.rss)) <= margin);
  CHECK("burst: live_bytes holds what was asked for, rounded to size classes",
        full.live - base.live >= (int64_t)asked && full.live - base.live <= (int64_t)asked * 5 / 4);

  for (size_t i = 0; i < n; i++) mm_free(objs[i]);
  snap_t freed = snap();
  show("freed", freed, base);
  CHECK("freed: resident_bytes follows the process's RSS",
        abs64((freed.resident - base.resident) - (freed.rss - base.rss)) <= margin);
  CHECK("freed: nothing is live but the bookkeeping", freed.live - base.live < (1 << 20));
  CHECK("freed: the burst is still resident (a 60 s delay)", freed.rss - base.rss > (int64_t)burst / 2);
  /* huge blocks beyond the huge cache's few are unmapped at once */
  CHECK("freed: what was returned is what left the RSS",
        abs64((freed.returned - base.returned) - (full.rss - freed.rss)) <= margin);

  mm_collect();
  snap_t purged = snap();
  show("collected", purged, base);
  CHECK("collected: resident_bytes follows the process's RSS",
        abs64((purged.resident - base.resident) - (purged.rss - base.rss)) <= margin);
  CHECK("collected: most of the burst went back", purged.rss - base.rss < (int64_t)burst / 10);
  CHECK("collected: returned_bytes counts it",
        purged.returned - base.returned >= (freed.resident - purged.resident) * 9 / 10 &&
            purged.returned - base.returned > (int64_t)burst / 2);
  mm_free(objs);
  return check_summary("stats_rss");
}
