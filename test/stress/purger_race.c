/* purger_race.c — the purge thread at work while the program works: it
 * purges heaps under the threads that carve, free, cache and reuse their
 * memory, and it is gone, then wanted again, in a forked child.
 *
 * With purge_thread_mib=1 and purge_delay_ms=1 the purge thread starts
 * early and purges about every millisecond.  THREADS threads each run
 * ROUNDS rounds: allocate a mix (small blocks, 64-900 KiB large blocks, a
 * 9 MiB huge block now and then), fill each with its own pattern, free a
 * random half, sleep a little now and then (so purges land between their
 * calls as well as during them), and check every live byte before freeing
 * it.  Meanwhile the main thread forks FORKS times: the child must have no
 * purge thread at first (the parent's is not inherited, and the state
 * does not claim one), must get one after a burst of its own, and must
 * allocate and check a round itself.  At the end: every byte intact, the
 * purge thread running, and it has purged.  Runs under ThreadSanitizer
 * too (label sanitize).  Not a benchmark.
 *
 * usage: purger_race [ROUNDS [FORKS]]   (defaults 400, 8)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "memtest.h"

#define THREADS 3
#define SLOTS 64

static int rounds = 400;
static _Atomic long bad_bytes;

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

typedef struct obj_s {
  unsigned char *p;
  size_t size;
  unsigned char fill;
} obj_t;

static size_t pick_size(uint64_t *s) {
  uint64_t r = next(s);
  if (r % 64 == 0) return (size_t)9 << 20;               /* huge */
  if (r % 8 == 0) return (64 << 10) + (r >> 8) % (836 << 10); /* large */
  return 16 + (r >> 8) % 4000;                           /* small */
}

static void check_free(obj_t *o) {
  if (!o->p) return;
  /* every byte of small blocks; large and huge ones at 4 KiB strides */
  size_t step = o->size > 8192 ? 4096 : 1;
  for (size_t i = 0; i < o->size; i += step)
    if (o->p[i] != o->fill) {
      bad_bytes++;
      break;
    }
  if (o->p[o->size - 1] != o->fill) bad_bytes++;
  mm_free(o->p);
  o->p = NULL;
}

static void one_round(obj_t *objs, uint64_t *s) {
  for (int i = 0; i < SLOTS; i++) {
    if (objs[i].p) continue;
    size_t size = pick_size(s);
    unsigned char *p = mm_malloc(size);
    if (!p) {
      bad_bytes++;
      continue;
    }
    objs[i] = (obj_t){p, size, (unsigned char)(next(s) | 1)};
    memset(p, objs[i].fill, size);
  }
  for (int i = 0; i < SLOTS; i++)
    if (next(s) & 1) check_free(&objs[i]);
}

static void *worker(void *arg) {
  uint64_t s = 0x9e3779b97f4a7c15ull ^ (uintptr_t)arg;
  obj_t objs[SLOTS];
  memset(objs, 0, sizeof(objs));
  for (int r = 0; r < rounds; r++) {
    one_round(objs, &s);
    if (r % 16 == 0) usleep(2000); /* purges land between calls too */
  }
  for (int i = 0; i < SLOTS; i++) check_free(&objs[i]);
  return NULL;
}

static const char *purger_state(void) { return stats_string("purge_thread.state"); }
static long long purger_purges(void) { return stats_number("purge_thread.purges"); }
/* the sanitizers have threads of their own: count the purge thread by name */
static int purge_threads(void) { return threads_named("mmalloc-purge"); }

/* The child of a fork: exit status says what went wrong (0: nothing). */
static int child(void) {
  /* before any allocator call (mm_stats_json and purge_threads make none) */
  if (strcmp(purger_state(), "running") == 0) return 10;
  if (purge_threads() != 0) return 11;
  void *burst[8];
  for (int i = 0; i < 8; i++) {
    burst[i] = mm_malloc((size_t)1 << 20);
    if (!burst[i]) return 12;
    memset(burst[i], 7, (size_t)1 << 20);
  }
  for (int i = 0; i < 8; i++) mm_free(burst[i]);
  void *p = mm_malloc(1 << 20); /* a general slow path: the poke */
  mm_free(p);
  if (strcmp(purger_state(), "running") != 0) return 13;
  struct timespec t = {0, 20 * 1000 * 1000};
  nanosleep(&t, NULL); /* the thread names itself after it starts */
  if (purge_threads() != 1) return 14;
  uint64_t s = 77;
  obj_t objs[SLOTS];
  memset(objs, 0, sizeof(objs));
  for (int r = 0; r < 20; r++) one_round(objs, &s);
  for (int i = 0; i < SLOTS; i++) check_free(&objs[i]);
  return bad_bytes ? 15 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1) rounds = atoi(argv[1]);
  int forks = argc > 2 ? atoi(argv[2]) : 8;
  fprintf(stderr, "purger_race: %d threads, %d rounds, %d forks (not a benchmark)\n", THREADS,
          rounds, forks);
  CHECK("purge_thread_mib can be set", mm_option_set("purge_thread_mib", 1) == 0);
  CHECK("purge_delay_ms can be set", mm_option_set("purge_delay_ms", 1) == 0);
  pthread_t t[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(i + 1));
  int children_ok = 0;
  for (int f = 0; f < forks; f++) {
    usleep(20000);
    pid_t pid = fork();
    if (pid == 0) _exit(child());
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) children_ok++;
    else fprintf(stderr, "purger_race: child %d ended with %s %d\n", f,
                 WIFEXITED(status) ? "exit" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  CHECK("every byte intact, every allocation answered", bad_bytes == 0);
  CHECK("every child started without a purge thread, got one, and worked", children_ok == forks);
  CHECK("the purge thread runs", strcmp(purger_state(), "running") == 0);
  CHECK("exactly one purge thread", purge_threads() == 1);
  long long purges = purger_purges();
  fprintf(stderr, "purger_race: the purge thread purged %lld times\n", purges);
  CHECK("the purge thread purged", purges > 0);
  return check_summary("purger_race");
}
