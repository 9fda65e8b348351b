/* fork_lists.c — fork while other threads are in the middle of changing
 * their page lists, then check that the child lost no page.
 *
 * Four threads churn every size class: they replace objects at random
 * (pages fill up and move to the full list, come back to their queue),
 * free whole classes at once (pages go empty and are retired to the page
 * cache), and hand objects to each other (remote frees, batches, inboxes).
 * The main thread forks again and again meanwhile.  Each child, alone in
 * its process with the parent's other threads gone:
 *   - allocates and frees blocks of every class, and frees objects the
 *     parent's threads had handed over (their pages are abandoned now);
 *   - runs mm_collect;
 *   - reads mm_stats_json: in every local heap no page may be lost (a page
 *     owned by a thread heap that no longer exists, on no list:
 *     "pages_lost"), and the page accounting must add up (pages_out -
 *     pages_back == pages);
 * and exits 0.  In the MM_DEBUG=3 build every checker also runs in the
 * child right after the fork (lifecycle.c), so a list left half changed
 * aborts the child.  Not a benchmark.
 *
 * usage: fork_lists [FORKS] [SEED] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/json.h"
#include "check.h"
#include "mmalloc.h"

#define THREADS 4
#define CLASSES 45 /* 16..128 by 16, the quarters of each power of two to 32 KiB, and an
                      eighth above each from 1 KiB: one size of each class */
#define WINDOW 48  /* live objects per class per thread */
#define HANDOFF 512

static size_t class_size[CLASSES];
static atomic_int stop;
static void *_Atomic handoff[HANDOFF]; /* objects passed between threads */

static void sizes_init(void) {
  for (int c = 0; c < 8; c++) class_size[c] = 16 * (size_t)(c + 1);
  for (int c = 8; c < 20; c++) {
    int k = c - 8, shift = 7 + k / 4;
    class_size[c] = ((size_t)1 << shift) + (size_t)(k % 4 + 1) * ((size_t)1 << (shift - 2));
  }
  for (int c = 20; c < CLASSES; c++) {
    int k = c - 20, shift = 10 + k / 5, j = k % 5;
    class_size[c] = ((size_t)1 << shift) + (j ? (size_t)j << (shift - 2) : (size_t)1 << (shift - 3));
  }
}

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void *make(size_t size, unsigned char tag) {
  unsigned char *p = mm_malloc(size);
  if (p) {
    p[0] = tag;
    p[size - 1] = tag;
  }
  return p;
}

static void *churn(void *arg) {
  uint64_t s = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull | 1;
  static _Thread_local void *live[CLASSES][WINDOW];
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    int c = (int)(next(&s) % CLASSES);
    unsigned r = (unsigned)(next(&s) % 100);
    if (r < 3) { /* the whole class at once: its pages go empty */
      for (int i = 0; i < WINDOW; i++) {
        mm_free(live[c][i]);
        live[c][i] = NULL;
      }
    } else if (r < 15) { /* hand one over; free what another handed us */
      void *p = make(class_size[c], 0x77);
      mm_free(atomic_exchange(&handoff[next(&s) % HANDOFF], p));
    } else {
      int i = (int)(next(&s) % WINDOW);
      mm_free(live[c][i]);
      live[c][i] = make(class_size[c], (unsigned char)c);
    }
  }
  for (int c = 0; c < CLASSES; c++)
    for (int i = 0; i < WINDOW; i++) mm_free(live[c][i]);
  return NULL;
}

static char json[1 << 16];

static int child(uint64_t seed) {
  /* every class: allocate, check the bytes, free */
  for (int c = 0; c < CLASSES; c++) {
    unsigned char *p[64];
    for (int i = 0; i < 64; i++) {
      p[i] = make(class_size[c], (unsigned char)(c + i));
      if (!p[i]) return 3;
    }
    for (int i = 0; i < 64; i++) {
      if (p[i][0] != (unsigned char)(c + i) || p[i][class_size[c] - 1] != (unsigned char)(c + i))
        return 4;
      mm_free(p[i]);
    }
  }
  /* objects the parent's threads made: their pages are abandoned now */
  for (int i = (int)(seed % 3); i < HANDOFF; i += 3) {
    unsigned char *p = atomic_exchange(&handoff[i], NULL);
    if (p && p[0] != 0x77) return 5;
    mm_free(p);
  }
  mm_collect();
  size_t n = mm_stats_json(json, sizeof(json));
  if (n >= sizeof(json) || !json_valid(json)) return 6;
  long heaps = json_array_length(json, "heaps");
  if (heaps < 1) return 7;
  for (long h = 0; h < heaps; h++) {
    char path[64];
    double lost, pages, out, back;
    snprintf(path, sizeof(path), "heaps.%ld.pages_lost", h);
    if (!json_number(json, path, &lost)) return 8;
    snprintf(path, sizeof(path), "heaps.%ld.pages", h);
    if (!json_number(json, path, &pages)) return 8;
    snprintf(path, sizeof(path), "heaps.%ld.pages_out", h);
    if (!json_number(json, path, &out)) return 8;
    snprintf(path, sizeof(path), "heaps.%ld.pages_back", h);
    if (!json_number(json, path, &back)) return 8;
    if (lost != 0) return 9;
    if (out - back != pages) return 10;
  }
  return 0;
}

int main(int argc, char **argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 300;
  uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 11;
  fprintf(stderr, "fork_lists: %d forks while %d threads churn every class, seed %llu "
          "(not a benchmark)\n", forks, THREADS, (unsigned long long)seed);
  sizes_init();
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(seed * 131 + (uint64_t)i + 1));
  int ok = 0;
  for (int f = 0; f < forks; f++) {
    usleep(200 + (unsigned)(f * 7919u % 800)); /* land the fork at varying points */
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      continue;
    }
    if (pid == 0) _exit(child(seed + (uint64_t)f));
    int status = 0;
    if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      ok++;
    } else {
      fprintf(stderr, "fork_lists: child %d ended with %s %d\n", f,
              WIFEXITED(status) ? "exit" : "signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < HANDOFF; i++) mm_free(atomic_exchange(&handoff[i], NULL));
  CHECK("every child allocated every class, lost no page and exited 0", ok == forks);
  /* and the parent, its threads gone, lost none either */
  mm_collect();
  size_t n = mm_stats_json(json, sizeof(json));
  double lost = -1;
  CHECK("parent statistics readable", n < sizeof(json) && json_number(json, "total.pages_lost", &lost));
  CHECK("parent lost no page", lost == 0);
  return check_summary("fork_lists");
}
