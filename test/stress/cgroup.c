/* cgroup.c — mmalloc in a container: the number of local heaps follows the
 * cgroup's CPU quota, and memory goes back at once, not after the purge
 * delay, when the cgroup's usage nears its memory limit.
 *
 * usage: cgroup fake        writes cgroup files into a temporary directory
 *                           and runs the checks below in children pointed
 *                           at it with MMALLOC_CGROUP=DIR (no root needed)
 *        cgroup real MIB [1]  run inside a real cgroup whose memory limit
 *                           is MIB MiB (test/stress/cgroup_real.sh makes
 *                           one): memory freed far from the limit comes back
 *                           at once when mappings of its own bring the usage near it;
 *                           with 1, the cgroup has a quota of one CPU and
 *                           mmalloc must make one heap
 *        cgroup CHILD-MODE  what `fake` runs (below)
 *
 * The child modes, each in a fresh process (the cgroup is read at start-up):
 *   quota-half   cpu.max "50000 100000": one heap, cgroup.cpus 1
 *   quota-three  cpu.max "300000 100000": min(3, CPUs) heaps
 *   quota-none   cpu.max "max 100000": as many heaps as CPUs
 *   garbage      every file holds garbage: no quota, no limit, no crash
 *   off          MMALLOC_CGROUP=0 beside a directory with a quota: ignored
 *   calls        purge delay 60 s, no purge thread; a 256 MiB burst is freed
 *                while memory.current says the cgroup is far from its 1 GiB
 *                limit: it stays resident through 300 ms of allocator calls;
 *                then memory.current says 95% of the limit: RSS falls below
 *                64 MiB within 2 s of calls, and the statistics say why
 *   idle         the same, but with the purge thread and no allocator call
 *                at all after the free
 *   hugecap      memory.high 1 GiB: the huge caches may hold 64 MiB (a
 *                sixteenth); purge delay 60 s, no purge thread.  A freed
 *                48 MiB block stays resident for reuse; a freed 96 MiB
 *                block then takes both back to the OS in the free itself;
 *                of two 40 MiB blocks freed in turn the second stays
 * Not a benchmark. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "memtest.h"

static const char *dir;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void write_file(const char *name, const char *text) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
    perror(path);
    exit(2);
  }
  close(fd);
}

static long cpus(void) { return sysconf(_SC_NPROCESSORS_ONLN); }

/* ---- the burst ------------------------------------------------------------------ */

static void **objs;
static size_t nobjs;

/* Half in small objects, half in 1 MiB blocks; every byte written. */
static void burst(size_t bytes) {
  objs = mm_malloc((bytes / 64 + 1024) * sizeof(void *));
  nobjs = 0;
  size_t used = 0;
  uint64_t s = 99;
  while (used < bytes) {
    s = s * 6364136223846793005ull + 1;
    size_t size = used < bytes / 2 ? 64 + (s >> 33) % 961 : (size_t)1 << 20;
    char *p = mm_malloc(size);
    if (!p) break;
    memset(p, 1, size);
    objs[nobjs++] = p;
    used += size;
  }
  for (size_t i = 0; i < nobjs; i++) mm_free(objs[i]);
  mm_free(objs);
}

/* A few small allocator calls per millisecond until RSS < limit or the
 * time is up; how long it took. */
static double light_until_below(size_t limit, double seconds) {
  double t0 = now_s();
  void *keep[16] = {0};
  for (unsigned k = 0; now_s() - t0 < seconds; k++) {
    mm_free(keep[k % 16]);
    keep[k % 16] = mm_malloc(16 + (k * 37) % 200);
    if (k % 4 == 0) {
      if (rss_bytes() < limit) break;
      usleep(1000);
    }
  }
  for (int i = 0; i < 16; i++) mm_free(keep[i]);
  return now_s() - t0;
}

static double idle_until_below(size_t limit, double seconds) {
  double t0 = now_s();
  while (now_s() - t0 < seconds && rss_bytes() >= limit) usleep(5000);
  return now_s() - t0;
}

/* ---- child modes (each runs with MMALLOC_CGROUP set by the parent) -------------- */

static int child(const char *mode) {
  const size_t below = (size_t)64 << 20, burst_bytes = (size_t)256 << 20;
  if (strcmp(mode, "quota-half") == 0) {
    CHECK("a quota of half a CPU: one heap", stats_number("options.heaps") == 1);
    CHECK("the statistics report one CPU", stats_number("cgroup.cpus") == 1 && stats_bool("cgroup.found"));
  } else if (strcmp(mode, "quota-three") == 0) {
    long want = cpus() < 3 ? cpus() : 3;
    CHECK("a quota of three CPUs: min(3, CPUs) heaps", stats_number("options.heaps") == want);
    CHECK("the statistics report three CPUs", stats_number("cgroup.cpus") == 3);
  } else if (strcmp(mode, "quota-none") == 0) {
    CHECK("no quota: one heap per CPU", stats_number("options.heaps") == cpus());
    CHECK("no quota in the statistics", stats_number("cgroup.cpus") == 0);
  } else if (strcmp(mode, "garbage") == 0) {
    CHECK("garbage files: one heap per CPU", stats_number("options.heaps") == cpus());
    CHECK("garbage files: nothing found", !stats_bool("cgroup.found") && stats_number("cgroup.limit_bytes") == 0);
    burst((size_t)8 << 20);
    char *p = mm_malloc(1000);
    CHECK("garbage files: the allocator works", p && mm_malloc_usable_size(p) >= 1000);
    if (p) memset(p, 1, 1000);
    mm_free(p);
  } else if (strcmp(mode, "off") == 0) {
    CHECK("MMALLOC_CGROUP=0: nothing read", !stats_bool("cgroup.found") && stats_number("options.heaps") == cpus());
    long long phys = (long long)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
    CHECK("MMALLOC_CGROUP=0: the huge caches may hold a sixteenth of the machine's memory",
          stats_number("huge_cache.limit_bytes") == phys / 16);
  } else if (strcmp(mode, "hugecap") == 0) {
    CHECK("hugecap: a sixteenth of the 1 GiB limit", stats_number("huge_cache.limit_bytes") == 64LL << 20);
    CHECK("hugecap: a long purge delay", mm_option_set("purge_delay_ms", 60000) == 0);
    CHECK("hugecap: no purge thread", mm_option_set("purge_thread_mib", 0) == 0);
    const size_t mib = (size_t)1 << 20;
    size_t sizes[4] = {48 * mib, 96 * mib, 40 * mib, 40 * mib};
    char *b[4];
    for (int i = 0; i < 4; i++) {
      b[i] = mm_malloc(sizes[i]);
      REQUIRE("hugecap: a huge block", b[i] != NULL);
      memset(b[i], 5, sizes[i]);
    }
    size_t r0 = rss_bytes();
    mm_free(b[0]);
    size_t r1 = rss_bytes();
    long long cached = stats_number("huge_cache.cached_bytes");
    fprintf(stderr, "cgroup hugecap: 48 MiB freed: RSS %+.1f MiB, %lld MiB cached\n",
            ((double)r1 - (double)r0) / mib, cached >> 20);
    CHECK("hugecap: a 48 MiB block stays for reuse", r1 + 8 * mib >= r0 && cached >= (long long)(48 * mib));
    CHECK("hugecap: under the limit", stats_number("huge_cache.over_limit") == 0);
    mm_free(b[1]);
    size_t r2 = rss_bytes();
    cached = stats_number("huge_cache.cached_bytes");
    fprintf(stderr, "cgroup hugecap: 96 MiB freed: RSS %+.1f MiB, %lld MiB cached\n",
            ((double)r2 - (double)r1) / mib, cached >> 20);
    CHECK("hugecap: a 96 MiB block and the cached 48 go back in the free", r2 + 136 * mib <= r1 && cached == 0);
    CHECK("hugecap: the free counted over the limit", stats_number("huge_cache.over_limit") == 1);
    mm_free(b[2]);
    mm_free(b[3]);
    size_t r3 = rss_bytes();
    cached = stats_number("huge_cache.cached_bytes");
    fprintf(stderr, "cgroup hugecap: two 40 MiB freed: RSS %+.1f MiB, %lld MiB cached\n",
            ((double)r3 - (double)r2) / mib, cached >> 20);
    CHECK("hugecap: of two 40 MiB blocks the newer stays",
          cached >= (long long)(40 * mib) && cached <= (long long)(64 * mib) && r3 + 32 * mib <= r2 &&
              r3 + 48 * mib >= r2);
    CHECK("hugecap: the second free counted over the limit", stats_number("huge_cache.over_limit") == 2);
    CHECK("hugecap: the caches' sum is the heaps' huge_cached_bytes",
          stats_number("huge_cache.cached_bytes") == stats_number("total.huge_cached_bytes"));
  } else if (strcmp(mode, "calls") == 0 || strcmp(mode, "idle") == 0) {
    bool idle = strcmp(mode, "idle") == 0;
    CHECK("a long purge delay", mm_option_set("purge_delay_ms", 60000) == 0);
    if (!idle) CHECK("no purge thread", mm_option_set("purge_thread_mib", 0) == 0);
    CHECK("the limit is read at start-up", stats_number("cgroup.limit_bytes") == 1LL << 30);
    burst(burst_bytes);
    light_until_below(0, 0.3); /* far from the limit: nothing may come back */
    size_t held = rss_bytes();
    fprintf(stderr, "cgroup %s: %zu MiB resident 0.3 s after the free, far from the limit\n",
            mode, held >> 20);
    CHECK("far from the limit, the freed burst waits for the delay", held >= burst_bytes / 2);
    CHECK("far from the limit, no forced purge", stats_number("total.pressure_purges") == 0);
    write_file("memory.current", "1020054732\n"); /* 95% of 1 GiB */
    double took = idle ? idle_until_below(below, 2.0) : light_until_below(below, 2.0);
    size_t end = rss_bytes();
    fprintf(stderr, "cgroup %s: %zu MiB resident %.3f s after the usage neared the limit\n",
            mode, end >> 20, took);
    CHECK("near the limit, the burst comes back at once", end < below && took < 2.0);
    CHECK("the statistics count the looks near the limit", stats_number("cgroup.near_limit") > 0);
    CHECK("the statistics count the forced purges", stats_number("total.pressure_purges") > 0);
  } else {
    fprintf(stderr, "cgroup: unknown mode %s\n", mode);
    return 2;
  }
  return check_summary(mode);
}

/* ---- the driver ---------------------------------------------------------------------- */

static int run_child(const char *self, const char *mode, const char *env_dir) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("MMALLOC_CGROUP", env_dir, 1);
    execl("/proc/self/exe", self, mode, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) fprintf(stderr, "cgroup: child %s failed (status %d)\n", mode, status);
  return ok;
}

static int fake(const char *self) {
  char tmpl[] = "/tmp/mmalloc-cgroup-XXXXXX";
  dir = mkdtemp(tmpl);
  if (!dir) {
    perror("mkdtemp");
    return 2;
  }
  write_file("memory.max", "max\n");
  write_file("memory.high", "1073741824\n");
  write_file("memory.current", "1000000\n");
  write_file("cpu.max", "50000 100000\n");
  CHECK("quota 0.5", run_child(self, "quota-half", dir));
  write_file("cpu.max", "300000 100000\n");
  CHECK("quota 3", run_child(self, "quota-three", dir));
  CHECK("MMALLOC_CGROUP=0", run_child(self, "off", "0"));
  write_file("cpu.max", "max 100000\n");
  CHECK("no quota", run_child(self, "quota-none", dir));
  CHECK("pressure seen on allocator calls", run_child(self, "calls", dir));
  write_file("memory.current", "1000000\n");
  CHECK("pressure seen by the purge thread", run_child(self, "idle", dir));
  CHECK("the huge caches held to a share of the limit", run_child(self, "hugecap", dir));
  write_file("cpu.max", "lots\n");
  write_file("memory.max", "\n");
  write_file("memory.high", "-12abc\n");
  write_file("memory.current", "x\n");
  CHECK("garbage", run_child(self, "garbage", dir));
  const char *names[] = {"cpu.max", "memory.max", "memory.high", "memory.current"};
  char path[4096];
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
  return check_summary("cgroup fake");
}

/* Inside a real cgroup with a memory limit of mib MiB and, if quota, a CPU
 * quota of one CPU (cgroup_real.sh).  A first phase allocates and frees 60%
 * of the limit (far from it: the memory waits for the 60 s delay); a second
 * phase writes 40 MiB mappings of its own (memory the allocator does not
 * see, as a file cache or another allocator would take; the allocator's
 * own big blocks would make it give back as much at once, decay.c) up to
 * about 93% of the limit, which must make the first phase's memory come
 * back at once, on the next allocator calls. */
static int real(long mib, bool quota) {
  const size_t huge = (size_t)40 << 20;
  size_t first = (size_t)mib * 60 / 100 << 20, nhuge = ((size_t)mib * 33 / 100 << 20) / huge;
  CHECK("the cgroup's limit is found", stats_number("cgroup.limit_bytes") == mib << 20);
  if (quota) CHECK("a quota of one CPU: one heap", stats_number("cgroup.cpus") == 1 && stats_number("options.heaps") == 1);
  CHECK("a long purge delay", mm_option_set("purge_delay_ms", 60000) == 0);
  CHECK("no purge thread", mm_option_set("purge_thread_mib", 0) == 0);
  burst(first);
  size_t after_free = rss_bytes();
  CHECK("far from the limit, the freed memory waits for the delay", after_free >= first / 2);
  CHECK("far from the limit, no forced purge", stats_number("total.pressure_purges") == 0);
  char *blocks[16];
  for (size_t i = 0; i < nhuge && i < 16; i++) {
    blocks[i] = mmap(NULL, huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE("a 40 MiB mapping", blocks[i] != MAP_FAILED);
    memset(blocks[i], 3, huge);
  }
  size_t below = nhuge * huge + ((size_t)64 << 20);
  double took = light_until_below(below, 2.0);
  size_t end = rss_bytes();
  fprintf(stderr, "cgroup real: %zu MiB freed under a %ld MiB limit (%zu MiB resident after the "
          "free); %zu MiB of mappings then: %zu MiB resident %.3f s later (usage %lld MiB at "
          "the last look)\n", first >> 20, mib, after_free >> 20, (nhuge * huge) >> 20,
          end >> 20, took, stats_number("cgroup.usage_bytes") >> 20);
  CHECK("near the limit, the freed memory comes back at once", end < below && took < 2.0);
  CHECK("the statistics count the forced purges", stats_number("total.pressure_purges") > 0);
  CHECK("and not by big blocks' growth", stats_number("total.growth_purges") == 0);
  for (size_t i = 0; i < nhuge && i < 16; i++) munmap(blocks[i], huge);
  return check_summary("cgroup real");
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "fake";
  if (strcmp(mode, "fake") == 0) return fake(argv[0]);
  if (strcmp(mode, "real") == 0)
    return real(argc > 2 ? atol(argv[2]) : 512, argc > 3 && strcmp(argv[3], "1") == 0);
  dir = getenv("MMALLOC_CGROUP");
  return child(mode);
}
