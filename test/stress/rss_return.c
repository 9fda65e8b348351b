/* rss_return.c — memory comes back: after a 1 GiB burst is freed, RSS
 * falls below 64 MiB within a second, whether the program goes on lightly
 * or never calls the allocator again, even if the thread that freed it
 * goes idle; mm_collect() does it at once.  And a program that stays small
 * never gets a second thread.  Not a benchmark: it reports how long the
 * fall took.
 *
 * usage: rss_return local|remote|collect|idle|freeonly|small|nothread|threadfails [MiB]
 *   local    a worker allocates the burst, frees it, and blocks for good;
 *            the main thread goes on allocating a little every millisecond
 *   remote   the main thread allocates the burst, a worker frees all of it
 *            (every free remote) and blocks; the main thread goes on lightly
 *   collect  the main thread allocates and frees the burst, then calls
 *            mm_collect() once and reads RSS right away
 *   idle     the main thread allocates and frees the burst, then makes no
 *            allocator call at all (RSS is read with open and read): the
 *            purge thread must give it back, and it must be running
 *   freeonly purge_thread_mib is 0 while the burst is allocated, then 32,
 *            and the burst is freed: the held memory makes the thread
 *            wanted, but no free may start it (glibc frees thread-stack
 *            TLS while holding a lock pthread_create takes: a thread
 *            started there deadlocks, which the first version did in
 *            pthread_join); threads are created and joined past glibc's
 *            stack cache, so glibc frees under that lock; then one malloc
 *            starts it, and the burst goes back with no call after that
 *   small    the program churns 4 MiB for a while: no purge thread starts,
 *            the process keeps one thread
 *   nothread purge_thread_mib set to 0, then as idle: no thread starts, and
 *            nothing comes back while no call is made (then a call or two
 *            and it does, as in local)
 *   threadfails  (MM_FAULT_INJECTION builds) the OS refuses the purge
 *            thread (tried by a malloc during the burst, once the heaps
 *            have taken 32 MiB): the program's errno is kept, the state
 *            says "failed",
 *            the process keeps one thread, and the burst comes back on
 *            allocator calls as without the thread
 *
 * The deadline checked is 2 s (the requirement is 1 s; the margin absorbs a
 * loaded CI machine; the measured time is printed). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "memtest.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static size_t burst_bytes;
static size_t peak; /* RSS with the whole burst allocated */
static void **objs;
static size_t nobjs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int phase; /* 1: burst freed, 2: objects ready to be freed by the worker */

static int threads(void) { return threads_named(""); }

static void *idle_thread(void *arg) { return arg; }

/* No allocator call until RSS is below limit or the deadline passes. */
static double idle_until_rss_below(size_t limit, double deadline) {
  double t0 = now_s();
  while (now_s() - t0 < deadline && rss_bytes() >= limit) usleep(5000);
  return now_s() - t0;
}

/* The fault hook of a MM_FAULT_INJECTION build (absent elsewhere). */
void mm_test_fault_set(int kind, long n, int sticky) __attribute__((weak));
enum { FAULT_THREAD = 3 }; /* MM_FAULT_THREAD in src/os.h */

static const char *purger_state(void) { return stats_string("purge_thread.state"); }

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
  } else if (strcmp(mode, "idle") == 0) {
    burst_alloc();
    peak = rss_bytes();
    burst_free();
    took = idle_until_rss_below(limit, deadline);
    CHECK("the purge thread runs", strcmp(purger_state(), "running") == 0);
    CHECK("the process has two threads: its own and the purge thread", threads() == 2);
  } else if (strcmp(mode, "freeonly") == 0) {
    CHECK("purge_thread_mib can be set to 0", mm_option_set("purge_thread_mib", 0) == 0);
    burst_alloc();
    peak = rss_bytes();
    CHECK("and back to 32", mm_option_set("purge_thread_mib", 32) == 0);
    burst_free();
    CHECK("the frees made the thread wanted", strcmp(purger_state(), "wanted") == 0);
    CHECK("no free started it", threads() == 1);
    /* 8 MiB stacks: past glibc's 40 MiB stack cache, pthread_join frees the
     * oldest cached stacks' TLS vectors, calling free() under its lock */
    for (int i = 0; i < 12; i++) {
      pthread_t j;
      CHECK("a thread starts", pthread_create(&j, NULL, idle_thread, NULL) == 0);
      pthread_join(j, NULL);
    }
    void *p = mm_malloc(1 << 20); /* an allocating call on the slow path */
    mm_free(p);
    CHECK("a malloc started it", strcmp(purger_state(), "running") == 0 && threads() == 2);
    took = idle_until_rss_below(limit, deadline);
  } else if (strcmp(mode, "nothread") == 0) {
    CHECK("purge_thread_mib can be set to 0", mm_option_set("purge_thread_mib", 0) == 0);
    burst_alloc();
    peak = rss_bytes();
    burst_free();
    /* The frees are calls, and their heartbeats purge what has been free
     * for a purge delay: how much of the burst is left when they end
     * depends on how long they took (seconds in an MM_DEBUG=3 build on a
     * loaded machine).  What must hold is that nothing comes back after
     * the last call: RSS then does not fall. */
    size_t at_last_call = rss_bytes();
    double waited = idle_until_rss_below(limit, 1.0);
    size_t held = rss_bytes();
    fprintf(stderr, "rss_return nothread: %zu MiB resident at the last call, %zu MiB after %.3f s "
            "without a call\n", at_last_call >> 20, held >> 20, waited);
    CHECK("when the frees end, memory of the burst is still resident", at_last_call >= 2 * limit);
    CHECK("without the thread and without a call, nothing comes back",
          held + ((size_t)1 << 20) >= at_last_call);
    CHECK("no thread started", threads() == 1 && strcmp(purger_state(), "off") == 0);
    took = light_until_rss_below(limit, deadline);
  } else if (strcmp(mode, "threadfails") == 0) {
    REQUIRE("a MM_FAULT_INJECTION build", mm_test_fault_set != NULL);
    mm_test_fault_set(FAULT_THREAD, 1, 1); /* every thread start from now fails */
    errno = 1234;
    burst_alloc(); /* past 32 MiB taken from the OS, a malloc tries to start it */
    CHECK("a refused thread leaves errno alone", errno == 1234);
    CHECK("the state says the thread could not start", strcmp(purger_state(), "failed") == 0);
    peak = rss_bytes();
    burst_free();
    CHECK("no thread started", threads() == 1);
    took = light_until_rss_below(limit, deadline);
    CHECK("it is not tried again", strcmp(purger_state(), "failed") == 0 && threads() == 1);
  } else if (strcmp(mode, "small") == 0) {
    double t0 = now_s();
    void *keep[64] = {0};
    for (unsigned k = 0; now_s() - t0 < 0.5; k++) { /* 64 blocks of up to 64 KiB: 4 MiB */
      mm_free(keep[k % 64]);
      keep[k % 64] = mm_malloc(16 + (size_t)(k * 7919u) % 65536);
      if (k % 4096 == 0) usleep(1000);
    }
    for (int i = 0; i < 64; i++) mm_free(keep[i]);
    usleep(300 * 1000); /* past the purge delay */
    free(objs);
    CHECK("a small program keeps one thread", threads() == 1);
    CHECK("the purge thread is off", strcmp(purger_state(), "off") == 0);
    return check_summary("rss_return");
  } else {
    fprintf(stderr, "usage: rss_return local|remote|collect|idle|freeonly|small|nothread|threadfails [MiB]\n");
    return 2;
  }
  size_t end = rss_bytes();
  fprintf(stderr, "rss_return %s: RSS %zu MiB at the burst, %zu MiB after %.3f s\n", mode,
          peak >> 20, end >> 20, took);
  CHECK("the burst was resident", peak >= burst_bytes * 9 / 10);
  CHECK("RSS fell below 64 MiB in time", end < limit && took < deadline);
  free(objs);
  if (strcmp(mode, "local") == 0 || strcmp(mode, "remote") == 0) {
    set_phase(99);
    pthread_join(t, NULL);
  }
  return check_summary("rss_return");
}
