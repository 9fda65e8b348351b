/* churn.c — 5,000 short-lived threads, each leaving objects behind for
 * another thread to free; RSS must stay flat (pages of exited threads are
 * adopted and reused, thread heaps are recycled).  Not a benchmark.
 *
 * usage: churn [THREADS] [OBJECTS_PER_THREAD]
 *
 * Each generation of 8 threads allocates objects of mixed sizes, hands them
 * to the main thread through a shared array and exits; the main thread
 * checks and frees them while the next generation runs.  RSS is read from
 * /proc/self/statm after the first 10% of the threads (warm) and at the end:
 * the end may exceed the warm value by at most 16 MiB. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "mmalloc.h"

#define GEN 8
static int per_thread;

typedef struct handoff_s {
  unsigned char **objs;
  size_t *sizes;
  int n;
} handoff_t;

static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, rss = 0;
  if (f) {
    if (fscanf(f, "%lu %lu", &size, &rss) != 2) rss = 0;
    fclose(f);
  }
  return rss * (size_t)sysconf(_SC_PAGESIZE);
}

static void *leaver(void *arg) {
  handoff_t *h = arg;
  uint64_t s = (uint64_t)(uintptr_t)arg;
  for (int i = 0; i < per_thread; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    size_t size = (s >> 33) % 7 == 0 ? 4096 + (s >> 40) % 60000 : 8 + (s >> 40) % 500;
    unsigned char *p = mm_malloc(size);
    if (!p) return NULL;
    memset(p, (int)(size & 0xff), size);
    h->objs[h->n] = p;
    h->sizes[h->n] = size;
    h->n++;
    /* a little local churn too */
    void *t = mm_malloc(64);
    mm_free(t);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int nthreads = argc > 1 ? atoi(argv[1]) : 5000;
  per_thread = argc > 2 ? atoi(argv[2]) : 200;
  fprintf(stderr, "churn: %d threads, %d objects each (not a benchmark)\n", nthreads, per_thread);
  handoff_t h[GEN];
  for (int g = 0; g < GEN; g++) {
    h[g].objs = calloc((size_t)per_thread, sizeof(void *));
    h[g].sizes = calloc((size_t)per_thread, sizeof(size_t));
  }
  size_t warm = 0;
  long bad = 0, freed = 0;
  for (int done = 0; done < nthreads; done += GEN) {
    pthread_t t[GEN];
    for (int g = 0; g < GEN; g++) {
      h[g].n = 0;
      if (pthread_create(&t[g], NULL, leaver, &h[g]) != 0) {
        fprintf(stderr, "churn: pthread_create failed\n");
        return 1;
      }
    }
    for (int g = 0; g < GEN; g++) pthread_join(t[g], NULL);
    /* The threads are gone: free what they left, from this thread. */
    for (int g = 0; g < GEN; g++)
      for (int i = 0; i < h[g].n; i++) {
        unsigned char *p = h[g].objs[i];
        size_t size = h[g].sizes[i];
        if (p[0] != (unsigned char)(size & 0xff) || p[size - 1] != (unsigned char)(size & 0xff)) bad++;
        mm_free(p);
        freed++;
      }
    if (!warm && done + GEN >= nthreads / 10) warm = rss_bytes();
  }
  size_t end = rss_bytes();
  char json[8192];
  mm_stats_json(json, sizeof(json));
  fprintf(stderr, "churn: RSS warm %zu KiB, end %zu KiB, %ld objects freed by another thread\n",
          warm >> 10, end >> 10, freed);
  CHECK("objects left by exited threads are intact", bad == 0);
  CHECK("every object was handed over", freed == (long)((nthreads + GEN - 1) / GEN * GEN) * per_thread);
  CHECK("RSS stays flat (end <= warm + 16 MiB)", end <= warm + (16u << 20));
  /* Thread heaps are recycled: far fewer were ever made than threads ran. */
  const char *live = strstr(json, "\"total\":");
  long threads_live = -1, threads_dead = -1;
  if (live) {
    const char *a = strstr(live, "\"threads_live\":");
    const char *b = strstr(live, "\"threads_dead\":");
    if (a) threads_live = atol(a + 15);
    if (b) threads_dead = atol(b + 15);
  }
  fprintf(stderr, "churn: thread heaps: %ld live, %ld dead (reusable)\n", threads_live, threads_dead);
  CHECK("thread heaps recycled", threads_live >= 1 && threads_live + threads_dead <= 4 * GEN);
  return check_summary("churn");
}
