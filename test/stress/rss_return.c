/* rss_return.c — memory comes back: after a 1 GiB burst is freed and the
 * program goes on lightly, RSS falls below 64 MiB within a second, even if
 * the thread that freed it goes idle; mm_collect() does it at once.
 * Not a benchmark: it reports how long the fall took.
 *
 * usage: rss_return local|remote|collect [MiB]
 *   local    a worker allocates the burst, frees it, and blocks for good;
 *            the main thread goes on allocating a little every millisecond
 *   remote   the main thread allocates the burst, a worker frees all of it
 *            (every free remote) and blocks; the main thread goes on lightly
 *   collect  the main thread allocates and frees the burst, then calls
 *            mm_collect() once and reads RSS right away
 *
 * The deadline checked is 2 s (the requirement is 1 s; the margin absorbs a
 * loaded CI machine; the measured time is printed). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "mmalloc.h"

static size_t burst_bytes;
static size_t peak; /* RSS with the whole burst allocated */
static void **objs;
static size_t nobjs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int phase; /* 1: burst freed, 2: objects ready to be freed by the worker */

static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, rss = 0;
  if (f) {
    if (fscanf(f, "%lu %lu", &size, &rss) != 2) rss = 0;
    fclose(f);
  }
  return rss * (size_t)sysconf(_SC_PAGESIZE);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Half the burst in small objects (64..1024 B), half in 1 MiB blocks. */
static void burst_alloc(void) {
  size_t cap = burst_bytes / 64 + 1024, used = 0;
  objs = malloc(cap * sizeof(void *)); /* bookkeeping on the process's malloc */
  nobjs = 0;
  uint64_t s = 12345;
  while (used < burst_bytes / 2) {
    s = s * 6364136223846793005ull + 1;
    size_t size = 64 + (s >> 33) % 961;
    char *p = mm_malloc(size);
    if (!p) break;
    memset(p, 1, size);
    objs[nobjs++] = p;
    used += size;
  }
  while (used < burst_bytes) {
    char *p = mm_malloc(1 << 20);
    if (!p) break;
    memset(p, 2, 1 << 20);
    objs[nobjs++] = p;
    used += 1 << 20;
  }
}

static void burst_free(void) {
  for (size_t i = 0; i < nobjs; i++) mm_free(objs[i]);
}

static void wait_phase(int want) {
  pthread_mutex_lock(&lock);
  while (phase < want) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
}

static void set_phase(int p) {
  pthread_mutex_lock(&lock);
  phase = p;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
}

static void *worker_local(void *arg) {
  (void)arg;
  burst_alloc();
  peak = rss_bytes();
  burst_free();
  set_phase(1);
  wait_phase(99); /* idle for good */
  return NULL;
}

static void *worker_remote(void *arg) {
  (void)arg;
  wait_phase(2);
  burst_free();
  set_phase(3);
  wait_phase(99);
  return NULL;
}

/* The main thread going on lightly: a few small blocks per millisecond. */
static double light_until_rss_below(size_t limit, double deadline) {
  double t0 = now_s();
  void *keep[16] = {0};
  unsigned k = 0;
  while (now_s() - t0 < deadline) {
    for (int i = 0; i < 4; i++, k++) {
      mm_free(keep[k % 16]);
      keep[k % 16] = mm_malloc(16 + (k * 37) % 200);
    }
    if (rss_bytes() < limit) break;
    usleep(1000);
  }
  for (int i = 0; i < 16; i++) mm_free(keep[i]);
  return now_s() - t0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "local";
  burst_bytes = (size_t)(argc > 2 ? atoi(argv[2]) : 1024) << 20;
  const size_t limit = (size_t)64 << 20;
  const double deadline = 2.0;
  fprintf(stderr, "rss_return %s: %zu MiB burst, purge delay %ld ms (not a benchmark)\n", mode,
          burst_bytes >> 20, mm_option_get("purge_delay_ms"));
  pthread_t t;
  double took;
  if (strcmp(mode, "local") == 0) {
    pthread_create(&t, NULL, worker_local, NULL);
    wait_phase(1);
    took = light_until_rss_below(limit, deadline);
  } else if (strcmp(mode, "remote") == 0) {
    pthread_create(&t, NULL, worker_remote, NULL);
    burst_alloc();
    peak = rss_bytes();
    set_phase(2);
    wait_phase(3);
    took = light_until_rss_below(limit, deadline);
  } else if (strcmp(mode, "collect") == 0) {
    burst_alloc();
    peak = rss_bytes();
    burst_free();
    double t0 = now_s();
    mm_collect();
    took = now_s() - t0;
    CHECK("RSS below 64 MiB right after mm_collect()", rss_bytes() < limit);
  } else {
    fprintf(stderr, "usage: rss_return local|remote|collect [MiB]\n");
    return 2;
  }
  size_t end = rss_bytes();
  fprintf(stderr, "rss_return %s: RSS %zu MiB at the burst, %zu MiB after %.3f s\n", mode,
          peak >> 20, end >> 20, took);
  CHECK("the burst was resident", peak >= burst_bytes * 9 / 10);
  CHECK("RSS fell below 64 MiB in time", end < limit && took < deadline);
  free(objs);
  if (strcmp(mode, "collect") != 0) {
    set_phase(99);
    pthread_join(t, NULL);
  }
  return check_summary("rss_return");
}
