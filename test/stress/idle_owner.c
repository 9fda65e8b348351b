/* idle_owner.c — memory an idle thread allocated is reused by the threads
 * that free it.  The main thread allocates LIVE MiB of small objects, then
 * blocks in pthread_join while two workers replace every object, slowly
 * (about a second in all): free one of main's objects, allocate a new one
 * of the same size.  Main never runs the allocator in between, so without
 * the take-over of idle heaps (thread_heap.c, "Idle owners") none of what
 * the workers free is reusable and RSS grows by the whole LIVE; with it, the
 * workers adopt main's full pages and RSS grows by a fraction of it.
 * Also checks every object's bytes (the pages changed hands under the
 * objects) and that the statistics count the pages taken over.
 * Not a benchmark: it prints the growth it measured.
 *
 * usage: idle_owner [LIVE_MIB [norss]]   (default 128)
 *   norss: sanitizer builds, whose shadow memory grows with every byte the
 *          program touches, so RSS says nothing about the allocator there;
 *          the race checker still sees pages change hands under load. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "mmalloc.h"

#define WORKERS 2

static unsigned char **objs;
static size_t *sizes;
static size_t nobjs;
static long bad_bytes;

static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, rss = 0;
  if (f) {
    if (fscanf(f, "%lu %lu", &size, &rss) != 2) rss = 0;
    fclose(f);
  }
  return rss * (size_t)sysconf(_SC_PAGESIZE);
}

static unsigned char fill_of(size_t i, int gen) { return (unsigned char)(i * 31 + gen * 7 + 1); }

static void *worker(void *arg) {
  size_t w = (size_t)arg, done = 0;
  for (size_t i = w; i < nobjs; i += WORKERS) {
    unsigned char *p = objs[i];
    if (p[0] != fill_of(i, 0) || p[sizes[i] - 1] != fill_of(i, 0)) bad_bytes++;
    mm_free(p);
    p = mm_malloc(sizes[i]);
    if (!p) {
      bad_bytes++;
      continue;
    }
    memset(p, fill_of(i, 1), sizes[i]);
    objs[i] = p;
    if (++done % 2048 == 0) { /* ~1 s in all for the default size */
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  size_t live = (size_t)(argc > 1 ? atol(argv[1]) : 128) << 20;
  int check_rss = !(argc > 2 && strcmp(argv[2], "norss") == 0);
  size_t cap = live / 48 + 16, used = 0;
  objs = malloc(cap * sizeof(*objs)); /* bookkeeping on the C library's malloc */
  sizes = malloc(cap * sizeof(*sizes));
  uint64_t s = 777;
  while (used < live && nobjs < cap) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    size_t size = 48 + (s >> 33) % 200;
    unsigned char *p = mm_malloc(size);
    REQUIRE("the live set is allocated", p != NULL);
    memset(p, fill_of(nobjs, 0), size);
    objs[nobjs] = p;
    sizes[nobjs++] = size;
    used += size;
  }
  size_t before = rss_bytes();
  pthread_t t[WORKERS];
  for (size_t w = 0; w < WORKERS; w++) pthread_create(&t[w], NULL, worker, (void *)w);
  for (size_t w = 0; w < WORKERS; w++) pthread_join(t[w], NULL);
  size_t after = rss_bytes();
  for (size_t i = 0; i < nobjs; i++)
    if (objs[i][0] != fill_of(i, 1) || objs[i][sizes[i] - 1] != fill_of(i, 1)) bad_bytes++;
  char json[8192];
  mm_stats_json(json, sizeof(json));
  const char *total = strstr(json, "\"total\":");
  const char *taken = total ? strstr(total, "\"pages_taken_over\":") : NULL;
  long pages_taken = taken ? atol(taken + strlen("\"pages_taken_over\":")) : -1;
  double growth = ((double)after - (double)before) / (double)used;
  fprintf(stderr,
          "idle_owner: %zu objects, %zu MiB live; RSS %zu -> %zu MiB during the replacement "
          "(growth %.2f of the live set); %ld full pages taken over\n",
          nobjs, used >> 20, before >> 20, after >> 20, growth, pages_taken);
  CHECK("every object kept its bytes", bad_bytes == 0);
  CHECK("the statistics count pages taken over", pages_taken > 0);
  /* Without the take-over the growth is the whole live set (1.0); the first
   * MM_IDLE_MS of frees and the pages main was filling stay behind. */
  if (check_rss) CHECK("RSS grows by less than half the live set", growth < 0.5);
  for (size_t i = 0; i < nobjs; i++) mm_free(objs[i]);
  free(objs);
  free(sizes);
  return check_summary("idle_owner");
}
