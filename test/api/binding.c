/* binding.c — which local heap a thread is bound to, black-box, through the
 * statistics' per-heap count of live threads (heaps.N.threads_live).
 *
 * Run with MMALLOC_HEAPS=3 (set by ctest) and the whole process pinned to
 * one CPU: a thread binds, at its first allocation, to the local heap with
 * the fewest live threads, the lowest index among equals, wherever it
 * runs.  (Bound by the CPU it first allocates on, as before, every thread
 * here would land on one heap.)  Threads are started one at a time, each
 * allocating before the next starts, so the expected counts are exact:
 *   main alone                 1 0 0
 *   five threads more          2 2 2   (heap 1, 2, 0, 1, 2)
 *   the first two exit         2 1 1
 *   one more starts            2 2 1   (heap 1: the fewest, the lowest)
 * and every count matches the total of live threads.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>

#include "api/harness.h"
#include "api/json.h"
#include "api/stats_json.h"
#include "check.h"
#include "mmalloc.h"

#define HEAPS 3
#define THREADS 6

/* Live threads per local heap, as the statistics say; false if unreadable. */
static bool live_per_heap(long live[HEAPS]) {
  char *j = stats_json();
  bool ok = json_array_length(j, "heaps") == HEAPS;
  for (int i = 0; i < HEAPS && ok; i++) {
    char path[32];
    double v = -1;
    snprintf(path, sizeof(path), "heaps.%d.threads_live", i);
    ok = json_number(j, path, &v);
    live[i] = ok ? (long)v : -1;
  }
  mm_free(j);
  return ok;
}

static bool expect(const char *when, long a, long b, long c) {
  long live[HEAPS];
  if (!live_per_heap(live)) {
    fprintf(stderr, "  %s: statistics unreadable\n", when);
    return false;
  }
  fprintf(stderr, "  %s: live threads per heap %ld %ld %ld (expected %ld %ld %ld)\n", when,
          live[0], live[1], live[2], a, b, c);
  return live[0] == a && live[1] == b && live[2] == c;
}

typedef struct worker_s {
  pthread_t tid;
  sem_t allocated, release;
  void *block;
} worker_t;

static void *worker(void *arg) {
  worker_t *w = arg;
  w->block = malloc(opaque_size(100)); /* binds this thread */
  sem_post(&w->allocated);
  while (sem_wait(&w->release) != 0) {
  }
  free(w->block);
  return NULL;
}

static void start(worker_t *w) {
  sem_init(&w->allocated, 0, 0);
  sem_init(&w->release, 0, 0);
  REQUIRE("pthread_create", pthread_create(&w->tid, NULL, worker, w) == 0);
  while (sem_wait(&w->allocated) != 0) {
  }
}

static void stop(worker_t *w) {
  sem_post(&w->release);
  pthread_join(w->tid, NULL);
}

int main(void) {
  /* one CPU for every thread: binding by CPU would put all on one heap */
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &set)) {
        CPU_ZERO(&set);
        CPU_SET(c, &set);
        sched_setaffinity(0, sizeof(set), &set);
        break;
      }
  }
  mm_option_set("purge_thread_mib", 0); /* no purge thread: only our threads */
  free(malloc(opaque_size(100)));       /* the main thread binds */
  REQUIRE("MMALLOC_HEAPS=3 in force", mm_option_get("heaps") == HEAPS);
  CHECK("main alone: on heap 0", expect("main alone", 1, 0, 0));
  static worker_t w[THREADS];
  for (int i = 0; i < 5; i++) start(&w[i]);
  CHECK("five threads more: two on each heap", expect("five more", 2, 2, 2));
  stop(&w[0]);
  stop(&w[1]);
  CHECK("the threads on heaps 1 and 2 exit", expect("two exited", 2, 1, 1));
  start(&w[5]);
  CHECK("the next binds to heap 1, the fewest and the lowest", expect("one more", 2, 2, 1));
  for (int i = 2; i < THREADS; i++) stop(&w[i]);
  CHECK("all workers gone: main alone again", expect("all exited", 1, 0, 0));
  return check_summary("api_binding");
}
