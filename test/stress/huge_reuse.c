/* huge_reuse.c — a block below MM_HUGE_MIN takes the resident head of a
 * freed huge mapping instead of fresh memory (config.h, MM_HUGE_REUSE_ROOM).
 *
 * The pattern is sort's (`sort -S 50M --parallel=2`): one 48 MiB buffer,
 * freed, then two of 20 MiB.  Without the reuse the freed 48 MiB waits in
 * the huge cache, resident for the purge delay, while the two new blocks
 * fault in 40 MiB of fresh memory beside it.  Checked, with a 60 s purge
 * delay so that nothing goes back by the clock:
 *   - the first 20 MiB block is the cached mapping's head (same address),
 *     the cache is empty after it, and the process's resident size fell by
 *     about the mapping's 28 MiB tail instead of growing by 20 MiB;
 *   - its bytes are what the caller writes (the mapping was someone else's);
 *   - calloc from the cache reads as zero;
 *   - a block much smaller than a cached mapping (2 MiB against 20) does
 *     not take it: the mapping stays cached for a block of its size;
 *   - a block below MM_GROW_MAP_MIN never takes one.
 *
 * usage: huge_reuse */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memtest.h"

#define MiB ((size_t)1 << 20)

static long long cached(void) { return stats_number("huge_cache.cached_bytes"); }

int main(void) {
  CHECK("a long purge delay", mm_option_set("purge_delay_ms", 60000) == 0);
  CHECK("no purge thread", mm_option_set("purge_thread_mib", 0) == 0);

  unsigned char *big = mm_malloc(48 * MiB);
  CHECK("a 48 MiB block", big != NULL);
  if (!big) return check_summary("huge_reuse");
  memset(big, 0xA5, 48 * MiB);
  mm_free(big);
  CHECK("the freed 48 MiB waits in the huge cache", cached() >= (long long)(48 * MiB));
  size_t rss_freed = rss_bytes();

  unsigned char *a = mm_malloc(20 * MiB);
  CHECK("a 20 MiB block", a != NULL);
  if (!a) return check_summary("huge_reuse");
  CHECK("it is the cached mapping's head", a == big);
  CHECK("the cache gave the mapping up", cached() == 0);
  memset(a, 0x3C, 20 * MiB);
  size_t rss_a = rss_bytes();
  fprintf(stderr, "huge_reuse: RSS %zu MiB with the 48 MiB cached, %zu MiB with the 20 MiB block on it\n",
          rss_freed / MiB, rss_a / MiB);
  CHECK("the mapping's tail went back, nothing fresh came in",
        rss_a + 20 * MiB < rss_freed && rss_a > rss_freed - 40 * MiB);
  int same = 1;
  for (size_t off = 0; off < 20 * MiB; off += 4093) same &= a[off] == 0x3C;
  CHECK("its bytes are the caller's", same);

  unsigned char *b = mm_malloc(20 * MiB); /* nothing cached: from a slot */
  CHECK("a second 20 MiB block, elsewhere", b != NULL && b != a);
  mm_free(b);

  mm_free(a); /* 20 MiB cached */
  CHECK("the 20 MiB mapping is cached", cached() >= (long long)(20 * MiB));
  unsigned char *small = mm_malloc(2 * MiB);
  CHECK("a 2 MiB block does not take a 20 MiB mapping",
        small != NULL && small != a && cached() >= (long long)(20 * MiB));
  mm_free(small);
  unsigned char *tiny = mm_malloc(512 << 10);
  CHECK("a 512 KiB block does not take one", tiny != NULL && tiny != a && cached() >= (long long)(20 * MiB));
  mm_free(tiny);

  unsigned char *z = mm_calloc(1, 16 * MiB);
  CHECK("calloc's 16 MiB takes the cached mapping", z == a && cached() == 0);
  int zero = z != NULL;
  for (size_t off = 0; zero && off < 16 * MiB; off += 511) zero &= z[off] == 0;
  CHECK("and reads as zero", zero);
  mm_free(z);
  return check_summary("huge_reuse");
}
