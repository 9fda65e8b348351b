/* growth_give_back.c — a big block that faults in fresh memory makes its
 * heap give back as much of its free resident memory at once, not after
 * the purge delay (decay.c, decay_give_back_for_growth; config.h,
 * MM_GROWTH_PURGE_MIN).
 *
 * The pattern is sort's (`sort --parallel=2 -S 30M` on a big file): a
 * 30 MiB buffer (a block of a slot, below the huge size, with a live
 * block above it), freed, then three of 10 MiB, which do not all fit
 * where it lay.  Checked, with a
 * 60 s purge delay and no purge thread, so that nothing goes back by the
 * clock:
 *   - big blocks taken on a heap with no free memory give nothing back
 *     (the count stays 0);
 *   - the three blocks hold about 30 MiB resident in all, not 40: the
 *     process's resident size grows by at most 3 MiB past what it was with
 *     the 30 MiB freed, and the statistics count a give-back;
 *   - every byte of the three blocks is what the caller wrote (the purge
 *     touched no live block);
 *   - a free extent smaller than MM_GROWTH_PURGE_MIN datablocks (1 MiB)
 *     stays resident: a 512 KiB tail that realloc gave back between two
 *     live blocks is still dirty after a fresh 4 MiB block.
 *
 * usage: growth_give_back */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "memtest.h"

#define MiB ((size_t)1 << 20)

static long long growth_purges(void) { return stats_number("total.growth_purges"); }

static int holds(const unsigned char *p, size_t n, unsigned char v) {
  int same = 1;
  for (size_t off = 0; off < n; off += 4093) same &= p[off] == v;
  return same && p[n - 1] == v;
}

int main(void) {
  CHECK("a long purge delay", mm_option_set("purge_delay_ms", 60000) == 0);
  CHECK("no purge thread", mm_option_set("purge_thread_mib", 0) == 0);

  /* Fresh big blocks on a heap with nothing free: nothing to give back. */
  unsigned char *first = mm_malloc(6 * MiB), *second = mm_malloc(6 * MiB);
  CHECK("two fresh 6 MiB blocks", first && second);
  if (!first || !second) return check_summary("growth_give_back");
  memset(first, 0x11, 6 * MiB);
  memset(second, 0x22, 6 * MiB);
  CHECK("no give-back without free memory", growth_purges() == 0);

  const size_t big = 30 * MiB + 32, part = 10 * MiB + 32;
  unsigned char *buffer = mm_malloc(big);
  CHECK("a 30 MiB buffer", buffer != NULL);
  if (!buffer) return check_summary("growth_give_back");
  memset(buffer, 0xA5, big);
  unsigned char *fence = mm_malloc(1 * MiB); /* above the buffer: its hole is its size */
  CHECK("a fence above the buffer", fence > buffer);
  mm_free(buffer);
  size_t rss_freed = rss_bytes();

  unsigned char *parts[3];
  for (int i = 0; i < 3; i++) {
    parts[i] = mm_malloc(part);
    CHECK("a 10 MiB block", parts[i] != NULL);
    if (!parts[i]) return check_summary("growth_give_back");
    memset(parts[i], 0x30 + i, part);
  }
  size_t rss_parts = rss_bytes();
  fprintf(stderr, "growth_give_back: RSS %zu MiB with the 30 MiB freed, %zu MiB with three 10 MiB blocks, "
          "%lld give-backs\n", rss_freed / MiB, rss_parts / MiB, growth_purges());
  CHECK("three 10 MiB blocks hold no more than the 30 MiB buffer did", rss_parts < rss_freed + 3 * MiB);
  CHECK("the statistics count the give-back", growth_purges() > 0);
  for (int i = 0; i < 3; i++) CHECK("a 10 MiB block holds its bytes", holds(parts[i], part, (unsigned char)(0x30 + i)));
  CHECK("the first blocks hold theirs", holds(first, 6 * MiB, 0x11) && holds(second, 6 * MiB, 0x22));

  /* A free extent smaller than MM_GROWTH_PURGE_MIN datablocks is not worth
   * a purge: the 512 KiB tail a 2 MiB block gives back when realloc
   * shrinks it to 1.5 MiB, with a live block right behind it. */
  mm_collect(); /* nothing dirty left */
  unsigned char *left = mm_malloc(2 * MiB), *right = mm_malloc(2 * MiB);
  /* (right's extent starts where left's ends, at left + its usable size;
   * the blocks start at their colours, less than a datablock in) */
  CHECK("two 2 MiB blocks, one behind the other",
        left && right >= left + mm_malloc_usable_size(left) &&
        right < left + mm_malloc_usable_size(left) + 4096);
  memset(left, 0x44, 2 * MiB);
  CHECK("realloc shrinks one in place", mm_realloc(left, 3 * MiB / 2) == left);
  CHECK("its tail is free, dirty", stats_number("total.dirty_bytes") >= (512 << 10));
  long long before = growth_purges();
  unsigned char *fresh = mm_malloc(4 * MiB);
  CHECK("a fresh 4 MiB block", fresh != NULL);
  if (fresh) memset(fresh, 0x55, 4 * MiB);
  CHECK("the 512 KiB free extent is left resident", growth_purges() == before &&
        stats_number("total.dirty_bytes") >= (512 << 10));

  mm_free(fresh);
  mm_free(left);
  mm_free(right);
  for (int i = 0; i < 3; i++) mm_free(parts[i]);
  mm_free(first);
  mm_free(second);
  mm_free(fence);
  return check_summary("growth_give_back");
}
