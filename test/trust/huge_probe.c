/* huge_probe.c — whether fresh transparent huge pages pay here (os.c's
 * probe): a big block's first huge page has its first write timed; a slow
 * one gives the rest of the block small pages and keeps fresh huge pages
 * off for MM_HUGE_PAGE_RECHECK_MS.  Fault-injection build only: the
 * MM_FAULT_HUGE_SLOW kind makes every probe read slow, so that the slow
 * branch runs on any machine.
 *
 * What the kernel was asked is read back from /proc/self/smaps: "hg" in a
 * mapping's VmFlags is MADV_HUGEPAGE, "nh" MADV_NOHUGEPAGE.  Skipped (77)
 * on kernels without transparent huge pages.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "stress/memtest.h"

void mm_test_fault_set(int kind, long n, int sticky);
enum { FAULT_HUGE_SLOW = 4 }; /* MM_FAULT_HUGE_SLOW in src/os.h */

static const size_t MIB = (size_t)1 << 20;

/* "hg", "nh" or "" for the mapping holding address a ("?" if none). */
static const char *advice_at(const void *a) {
  static char line[512];
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return "?";
  bool in = false;
  const char *found = "?";
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char dash;
    if (sscanf(line, "%lx%c%lx ", &lo, &dash, &hi) == 3 && dash == '-') {
      in = (uintptr_t)a >= lo && (uintptr_t)a < hi;
      continue;
    }
    if (in && strncmp(line, "VmFlags:", 8) == 0) {
      found = strstr(line, " hg") ? "hg" : strstr(line, " nh") ? "nh" : "";
      break;
    }
  }
  fclose(f);
  return found;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

int main(void) {
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) != 0) {
    printf("huge_probe: skipped: this kernel has no transparent huge pages\n");
    return 77;
  }
  CHECK("no probe before the first big block", stats_number("huge_pages.probes") == 0);

  /* Every probe reads slow. */
  mm_test_fault_set(FAULT_HUGE_SLOW, 1, 1);
  char *a = mm_malloc(16 * MIB); /* a large block of a slot: fresh, not a calloc's */
  REQUIRE("a 16 MiB block", a != NULL);
  CHECK("its first huge page was timed", stats_number("huge_pages.probes") == 1);
  CHECK("and found slow", stats_number("huge_pages.slow") == 1);
  CHECK("the rest of it asks for small pages", strcmp(advice_at(a + 8 * MIB), "nh") == 0);
  char *b = mm_malloc(16 * MIB);
  REQUIRE("a second 16 MiB block", b != NULL);
  CHECK("within the recheck time: no probe", stats_number("huge_pages.probes") == 1);
  CHECK("and no huge pages asked for", strcmp(advice_at(b + 8 * MIB), "hg") != 0);
  char *h = mm_malloc(48 * MIB); /* a huge block: a mapping of its own */
  REQUIRE("a 48 MiB block", h != NULL);
  CHECK("a huge block within the recheck time: no probe", stats_number("huge_pages.probes") == 1);
  CHECK("and no huge pages asked for", strcmp(advice_at(h + 24 * MIB), "hg") != 0);
  memset(a, 1, 16 * MIB);
  memset(b, 2, 16 * MIB);
  memset(h, 3, 48 * MIB);

  /* After the recheck time the probe is real: whatever it finds, the
   * block's advice must say the same. */
  mm_test_fault_set(FAULT_HUGE_SLOW, 0, 0);
  sleep_ms(1200);
  long long slow = stats_number("huge_pages.slow");
  char *c = mm_malloc(16 * MIB);
  REQUIRE("a third 16 MiB block", c != NULL);
  CHECK("after the recheck time: probed again", stats_number("huge_pages.probes") == 2);
  bool found_slow = stats_number("huge_pages.slow") > slow;
  printf("huge_probe: this machine's fresh huge page was %s\n", found_slow ? "slow" : "fast");
  CHECK("the block's advice follows the probe",
        strcmp(advice_at(c + 8 * MIB), found_slow ? "nh" : "hg") == 0);
  memset(c, 4, 16 * MIB);

  /* A calloc's block is not probed: its untouched pages stay out of memory. */
  sleep_ms(1200);
  long long probes = stats_number("huge_pages.probes");
  size_t r0 = rss_bytes();
  char *z = mm_calloc(1, 16 * MIB);
  size_t r1 = rss_bytes();
  REQUIRE("a 16 MiB calloc", z != NULL);
  CHECK("calloc: no probe", stats_number("huge_pages.probes") == probes);
  CHECK("calloc: nothing of it resident", r1 < r0 + MIB);
  CHECK("calloc: zeroed", z[0] == 0 && z[16 * MIB - 1] == 0 && z[8 * MIB] == 0);

  /* The probe's write leaves the content a malloc may have (any) and the
   * blocks keep what was written. */
  CHECK("the blocks hold what was written", a[3 * MIB] == 1 && b[5 * MIB] == 2 &&
                                                h[47 * MIB] == 3 && c[2 * MIB] == 4);
  mm_free(a);
  mm_free(b);
  mm_free(h);
  mm_free(c);
  mm_free(z);
  return check_summary("huge_probe");
}
