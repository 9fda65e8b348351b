/* idle.c — the idle probe: how much of a freed burst an allocator still
 * holds when the program stops calling it.
 *
 * Allocates MIB MiB in mixed objects (15 of every 16 are 48-816 bytes, one
 * is 64-88 KiB; a fixed seed), frees all of them, and then makes no
 * allocator call at all, as a server blocked in epoll_wait or a tool
 * waiting on a child would: it sleeps, and reads its resident size from
 * /proc/self/statm with open and read (stdio would allocate).  Prints one
 * JSON line: resident MiB before the burst, at its peak, and at each of the
 * given idle times after the last free.  The allocator comes in through
 * LD_PRELOAD.  Not a timed benchmark: the times are sleeps.
 *
 * usage: idle [mib=1024] [at=1000,5000] (milliseconds after the last free)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double rss_mib(void) {
  char buf[128];
  int fd = open("/proc/self/statm", O_RDONLY);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  char *p = strchr(buf, ' ');
  if (!p) return -1;
  return (double)strtoull(p + 1, NULL, 10) * (double)sysconf(_SC_PAGESIZE) / (1 << 20);
}

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void sleep_until(const struct timespec *t0, long ms) {
  struct timespec t = *t0;
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0) {
  }
}

int main(int argc, char **argv) {
  size_t mib = 1024;
  const char *at = "1000,5000";
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "mib=", 4)) mib = strtoull(argv[i] + 4, NULL, 10);
    else if (!strncmp(argv[i], "at=", 3)) at = argv[i] + 3;
    else {
      fprintf(stderr, "idle: unknown argument %s (mib=N at=MS,MS..)\n", argv[i]);
      return 2;
    }
  }
  long times[16];
  int ntimes = 0;
  for (const char *p = at; *p && ntimes < 16;) {
    times[ntimes++] = strtol(p, (char **)&p, 10);
    if (*p == ',') p++;
  }
  double before = rss_mib();
  size_t cap = mib << 20, total = 0, n = 0, max = (mib << 20) / 64 + 16;
  void **objs = malloc(max * sizeof(void *));
  if (!objs) return 3;
  uint64_t s = 0x1d1e5eedull | 1;
  while (total < cap && n < max) {
    uint64_t r = next(&s);
    size_t size = r % 16 == 0 ? 64 * 1024 + r / 16 % (24 * 1024) : 48 + r / 16 % 769;
    char *p = malloc(size);
    if (!p) {
      fprintf(stderr, "idle: malloc(%zu) failed after %zu MiB\n", size, total >> 20);
      return 3;
    }
    memset(p, (int)(n & 0xff), size); /* resident, as a real program's data */
    objs[n++] = p;
    total += size;
  }
  double peak = rss_mib();
  for (size_t i = 0; i < n; i++) free(objs[i]);
  free(objs);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  double after[16];
  for (int i = 0; i < ntimes; i++) {
    sleep_until(&t0, times[i]);
    after[i] = rss_mib();
  }
  char line[512];
  int len = snprintf(line, sizeof(line), "{\"mib\": %zu, \"objects\": %zu, \"rss_before_mib\": %.1f, "
                     "\"rss_peak_mib\": %.1f", mib, n, before, peak);
  for (int i = 0; i < ntimes; i++)
    len += snprintf(line + len, sizeof(line) - (size_t)len, ", \"rss_%ldms_mib\": %.1f", times[i],
                    after[i]);
  printf("%s}\n", line);
  return 0;
}
