/* binding.c — which local heap a new thread binds to, black-box through the
 * statistics (heaps.N.threads_live).
 *
 * Run with MMALLOC_HEAPS=4 (CMakeLists.txt).  Every thread starts on one CPU
 * (the main thread pins itself before starting them; they inherit the
 * mask), which is how threads started together often begin.  Binding by
 * CPU alone would put all of them on that CPU's heap; a new thread must
 * instead take the nearest heap with the fewest live threads:
 *   - main and three threads, started one after another: one per heap;
 *   - when they exit their heaps count them no more: three new threads
 *     spread over the same three heaps again;
 *   - a fifth live thread shares a heap (every heap has one).
 * The threads start one at a time (each waits for the previous one's first
 * malloc), so the answer does not depend on timing.  Where pinning is not
 * allowed the assertions still hold; they only lose the worst case.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

#include "api/json.h"
#include "check.h"
#include "mmalloc.h"

#define HEAPS 4

static char json[1 << 16];
static atomic_int started;
static atomic_int release;

static void *worker(void *arg) {
  (void)arg;
  void *p = mm_malloc(64); /* binds this thread (mm_: sanitizers keep malloc) */
  atomic_fetch_add(&started, 1);
  while (!atomic_load(&release)) sched_yield();
  mm_free(p);
  return NULL;
}

/* live[i] = heaps.i.threads_live; false when the statistics cannot say. */
static bool live_per_heap(long live[HEAPS]) {
  size_t n = mm_stats_json(json, sizeof(json));
  if (n >= sizeof(json) || json_array_length(json, "heaps") != HEAPS) return false;
  for (int i = 0; i < HEAPS; i++) {
    char path[64];
    double v;
    snprintf(path, sizeof(path), "heaps.%d.threads_live", i);
    if (!json_number(json, path, &v)) return false;
    live[i] = (long)v;
  }
  return true;
}

/* Starts n threads one after another (each after the previous one's first malloc). */
static void start(pthread_t *t, int n) {
  atomic_store(&release, 0);
  atomic_store(&started, 0);
  for (int i = 0; i < n; i++) {
    REQUIRE("pthread_create", pthread_create(&t[i], NULL, worker, NULL) == 0);
    while (atomic_load(&started) != i + 1) sched_yield();
  }
}

static void stop(pthread_t *t, int n) {
  atomic_store(&release, 1);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

static int count_with(const long live[HEAPS], long k) {
  int c = 0;
  for (int i = 0; i < HEAPS; i++) c += live[i] == k;
  return c;
}

int main(void) {
  mm_free(mm_malloc(1)); /* the main thread binds first */
  REQUIRE("run with MMALLOC_HEAPS=4", mm_option_get("heaps") == HEAPS);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
  if (sched_setaffinity(0, sizeof(one), &one) != 0)
    fprintf(stderr, "binding: cannot pin to one CPU; checking without the worst case\n");

  long live[HEAPS];
  pthread_t t[HEAPS];
  start(t, HEAPS - 1);
  REQUIRE("statistics list every heap", live_per_heap(live));
  CHECK("main and 3 threads started on one CPU: one per heap", count_with(live, 1) == HEAPS);
  stop(t, HEAPS - 1);

  REQUIRE("statistics after the exits", live_per_heap(live));
  CHECK("exited threads no longer counted: only main is live", count_with(live, 0) == HEAPS - 1);
  start(t, HEAPS - 1);
  REQUIRE("statistics, second round", live_per_heap(live));
  CHECK("a new generation spreads over the freed heaps again", count_with(live, 1) == HEAPS);

  pthread_t extra;
  atomic_store(&started, 0);
  REQUIRE("pthread_create", pthread_create(&extra, NULL, worker, NULL) == 0);
  while (atomic_load(&started) != 1) sched_yield();
  REQUIRE("statistics with 5 threads", live_per_heap(live));
  CHECK("a fifth thread shares one heap", count_with(live, 2) == 1 && count_with(live, 1) == HEAPS - 1);
  atomic_store(&release, 1);
  pthread_join(extra, NULL);
  stop(t, HEAPS - 1);
  return check_summary("api_binding");
}
