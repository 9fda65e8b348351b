/* faults.c — fault injection: the os layer fails the Nth reservation,
 * commit or purge (MADV_DONTNEED) from now, once ("one-shot") or for ever
 * after ("sticky", as an exhausted limit would).  MM_FAULT_INJECTION builds
 * only.  For every N from 1 to the number of such calls a scripted
 * workload makes (plus a few past it), both modes, each case in a fresh
 * process:
 *   - every allocation answers a usable block or NULL with errno ENOMEM
 *     (posix_memalign: ENOMEM); calloc memory reads as zero;
 *   - no live object is damaged: every object carries its fill byte, checked
 *     after every step; a failed realloc leaves its block intact;
 *   - no lock is left held: after the faulty phase another thread allocates
 *     small, large and huge blocks and calls mm_collect(), which takes every
 *     local heap's lock; the main thread then does the same (its large and
 *     huge blocks go through the slow path, which takes its thread heap's
 *     own lock).  A lock left held hangs, and a watchdog (SIGALRM) turns
 *     the hang into a failure that names the phase;
 *   - the fault fired (the Nth call happened) when N is within the count
 *     (less its run-to-run spread: two for reservations and commits, a
 *     tenth for purges, which the heartbeat's timing moves);
 *     then a sticky reserve or commit fault made some allocation fail, a
 *     one-shot fault failed at most one allocation, and a purge fault failed
 *     none (a refused MADV_DONTNEED costs memory, never an allocation);
 *   - once the fault stops, the same workload runs to the end without a
 *     single NULL (the allocator works again).
 * Not a benchmark.
 *
 * usage: trust_faults                    driver: every kind, every N, both modes
 *        trust_faults count              one workload, prints calls per kind
 *        trust_faults KIND N MODE        one case (KIND 0 reserve, 1 commit,
 *                                        2 purge; MODE 0 one-shot, 1 sticky)
 * The driver runs two cases at a time (TRUST_FAULTS_JOBS=1 for one). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "mmalloc.h"

/* The test hooks of a MM_FAULT_INJECTION build (exported only there);
 * kinds as in src/os.h (MM_FAULT_RESERVE, _COMMIT, _PURGE). */
void mm_test_fault_set(int kind, long n, int sticky);
long mm_test_fault_count(int kind);
enum { RESERVE = 0, COMMIT = 1, PURGE = 2, KINDS = 3 };
static const char *kind_names[KINDS] = {"reserve", "commit", "purge"};

/* ---- watchdog -------------------------------------------------------------- */

/* A phase takes milliseconds; one that takes this long is stuck.  After
 * HANGS_MAX stuck cases of one kind and mode, the driver skips the rest of
 * them (each costs WATCHDOG_S) and says so: the failure is known by then. */
#define WATCHDOG_S 10
#define HANGS_MAX 3

static const char *volatile phase = "start";

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

/* Async-signal-safe: write(2), strlen and _exit only. */
static void watchdog(int sig) {
  (void)sig;
  say("trust_faults: watchdog: phase '");
  say(phase);
  say("' hung (a lock left held?)\n");
  _exit(3);
}

static void enter(const char *name, unsigned seconds) {
  phase = name;
  alarm(seconds);
}

/* ---- threads and heaps ----------------------------------------------------------
 * The cases run with MMALLOC_HEAPS=2 (set by the driver).  A new thread
 * binds to the local heap with the fewest live threads: the main thread
 * to heap 0, the probe thread to heap 1, so the probe thread's first
 * allocation, under the fault, sets up the other local heap from nothing
 * (its thread heap, its first slot), on any number of CPUs. */

/* ---- objects ------------------------------------------------------------------
 * An object's fill byte sits at every byte up to 4 KiB, at every 251st byte
 * up to 64 KiB, every 65521st up to 1 MiB, beyond at every 1048573rd (and
 * at the last byte; the strides are primes, so that they do not line up
 * with pages, blocks or each other): sparse
 * for big blocks, so that a case costs a few page faults and not the GiB
 * the workload allocates.  (The cases also run with transparent huge pages
 * off, for the same reason: one touched byte would fault in 2 MiB.) */

#define SLOTS 64
#define STEPS 250
typedef struct obj_s {
  unsigned char *p;
  size_t size;
  unsigned char fill;
  unsigned char kind; /* 0 malloc, 1 the pool, 2 the heap */
} obj_t;
/* An object pool and a heap, made before the fault and used under it and
 * after it: an allocation from either gives an object or NULL with ENOMEM,
 * and both work again once the fault stops. */
#define POOL_OBJECT 200
static mm_pool_t *pool;
static mm_heap_t *heap;
static obj_t objs[SLOTS];
static long nulls, bad_errno, damaged, not_zero;

static size_t stride_of(size_t size) {
  return size <= 4096 ? 1 : size <= (64 << 10) ? 251 : size <= (1 << 20) ? 65521 : 1048573;
}

static void note_damage(const char *what, const void *p, size_t size, size_t at) {
  if (damaged + not_zero < 5)
    fprintf(stderr, "trust_faults: %s: block %p size %zu at offset %zu\n", what, p, size, at);
}

static void fill(obj_t *o) {
  size_t st = stride_of(o->size);
  if (st == 1) {
    memset(o->p, o->fill, o->size);
    return;
  }
  for (size_t j = 0; j < o->size; j += st) o->p[j] = o->fill;
  o->p[o->size - 1] = o->fill;
}

/* Does p (o's block, or where realloc moved it) hold o's fill at the filled
 * offsets below limit? */
static bool intact(const obj_t *o, const unsigned char *p, size_t limit) {
  size_t st = stride_of(o->size);
  if (limit > o->size) limit = o->size;
  for (size_t j = 0; j < limit; j += st)
    if (p[j] != o->fill) {
      note_damage("object damaged", p, o->size, j);
      return false;
    }
  if (limit == o->size && p[o->size - 1] != o->fill) {
    note_damage("object damaged (last byte)", p, o->size, o->size - 1);
    return false;
  }
  return true;
}

static void check_all(void) {
  for (int i = 0; i < SLOTS; i++)
    if (objs[i].p && !intact(&objs[i], objs[i].p, objs[i].size)) damaged++;
}

static void failed_alloc(int err) {
  nulls++;
  if (err != ENOMEM) bad_errno++;
}

static void take(obj_t *o, void *p, size_t size, unsigned char f, bool zeroed) {
  if (!p) {
    failed_alloc(errno);
    return;
  }
  o->p = p;
  o->size = size ? size : 1;
  o->fill = f;
  if (zeroed) {
    size_t st = stride_of(o->size);
    for (size_t j = 0; j < o->size; j += st)
      if (o->p[j]) {
        note_damage("calloc memory not zero", o->p, o->size, j);
        not_zero++;
        break;
      }
  }
  fill(o);
}

static void drop(obj_t *o) {
  if (o->kind == 1) mm_pool_free(pool, o->p);
  else if (o->kind == 2) mm_heap_free(heap, o->p);
  else mm_free(o->p);
  o->p = NULL;
  o->kind = 0;
}

static size_t pick_size(uint64_t r) {
  switch (r % 8) {
  case 0: return 1 + r % 64;
  case 1: return 100 + r % 2000;
  case 2: return 16384 + r % 20000;   /* small and large around 32 KiB */
  case 3: return 40000 + r % 300000;  /* large */
  case 4: return (1 + r % 30) << 20;  /* large, up to 30 MiB: a slot fills up */
  case 5: return (33 + r % 16) << 20; /* huge (own mapping, above 31.5 MiB) */
  default: return 8 + r % 500;
  }
}

/* The scripted workload: deterministic, STEPS steps of malloc, realloc
 * (grow and shrink, in place or moved), posix_memalign, calloc, free, now
 * and then mm_collect, and objects of the pool and the heap (heap objects
 * also reallocated). */
static void workload(uint64_t seed) {
  uint64_t s = seed;
  for (int step = 0; step < STEPS; step++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = s >> 17;
    obj_t *o = &objs[r % SLOTS];
    unsigned char f = (unsigned char)(step * 7 + 1);
    size_t size = pick_size(r >> 8);
    switch ((r >> 40) % 8) {
    case 0:
    case 1:
      if (o->p) drop(o);
      errno = 0;
      take(o, mm_malloc(size), size, f, false);
      break;
    case 2: {
      if (!o->p) break;
      if (o->kind == 1) break; /* pool objects have one size */
      errno = 0;
      unsigned char *q = o->kind == 2 ? mm_heap_realloc(heap, o->p, size) : mm_realloc(o->p, size);
      if (!q) {
        failed_alloc(errno); /* the old block stays: check_all looks at it */
        break;
      }
      size_t keep = size < o->size ? size : o->size;
      if (!intact(o, q, keep)) damaged++;
      o->p = q;
      o->size = size;
      fill(o);
      break;
    }
    case 3: {
      if (o->p) drop(o);
      void *p = NULL;
      size_t align = (size_t)64 << ((r >> 50) % 14); /* 64 B .. 512 KiB */
      int rc = mm_posix_memalign(&p, align, size);
      if (rc != 0) {
        failed_alloc(rc);
      } else {
        if ((uintptr_t)p % align) damaged++;
        take(o, p, size, f, false);
      }
      break;
    }
    case 4:
      if (o->p) drop(o);
      errno = 0;
      take(o, mm_calloc(1, size), size, f, true);
      break;
    case 6:
      if (o->p) drop(o);
      errno = 0;
      take(o, mm_pool_alloc(pool), POOL_OBJECT, f, false);
      if (o->p) o->kind = 1;
      break;
    case 7:
      if (o->p) drop(o);
      errno = 0;
      take(o, mm_heap_malloc(heap, size), size, f, false);
      if (o->p) o->kind = 2;
      break;
    default:
      if (o->p) drop(o);
      if (step % 50 == 0) mm_collect();
      break;
    }
    check_all();
  }
}

static void free_all(void) {
  for (int i = 0; i < SLOTS; i++)
    if (objs[i].p) drop(&objs[i]);
}

/* Small, large and huge blocks, a large block grown by realloc, then
 * mm_collect(), which takes the lock of every local heap: hangs if any is
 * left held. */
static void lock_probe(void) {
  for (int i = 0; i < 300; i++) {
    errno = 0;
    void *p = mm_malloc((size_t)(i % 100) * 97 + 1);
    if (!p) failed_alloc(errno);
    mm_free(p);
  }
  size_t sizes[2] = {(size_t)3 << 20, (size_t)40 << 20};
  for (int i = 0; i < 2; i++) {
    errno = 0;
    void *p = mm_malloc(sizes[i]);
    if (!p) failed_alloc(errno);
    mm_free(p);
  }
  /* A large block that grows (in place when the space behind it is free,
   * which after address-space pressure may have been unmapped), every
   * filled byte checked and the grown block filled. */
  obj_t o = {NULL, 0, 0x5A, 0};
  errno = 0;
  take(&o, mm_malloc(100000), 100000, 0x5A, false);
  if (o.p) {
    errno = 0;
    unsigned char *q = mm_realloc(o.p, 400000);
    if (!q) {
      failed_alloc(errno);
    } else {
      if (!intact(&o, q, o.size)) damaged++;
      o.p = q;
      o.size = 400000;
      fill(&o);
      if (!intact(&o, o.p, o.size)) damaged++;
    }
    mm_free(o.p);
  }
  mm_collect();
}

/* The probe from another thread, created before the fault is set (glibc's
 * pthread_create may itself need memory) and released by a semaphore.  The
 * main thread waits in pthread_join meanwhile: the counters need no lock. */
static pthread_t probe_tid;
static sem_t probe_go;

static void *probe_thread(void *arg) {
  (void)arg;
  while (sem_wait(&probe_go) != 0) {
  }
  lock_probe();
  return NULL;
}

static void probe_start(void) {
  sem_init(&probe_go, 0, 0);
  if (pthread_create(&probe_tid, NULL, probe_thread, NULL) != 0) {
    fprintf(stderr, "trust_faults: pthread_create failed\n");
    exit(2);
  }
}

static void probe_run(void) {
  sem_post(&probe_go);
  pthread_join(probe_tid, NULL);
}

/* ---- one case ----------------------------------------------------------------- */

static int run_case(int kind, long n, int sticky) {
  signal(SIGALRM, watchdog);
  mm_option_set("purge_delay_ms", 0); /* purge at every chance: purge faults get hit */
  /* No purge thread: its purges race the workload (a huge mapping dropped
   * from the cache or not), so the calls counted would differ from run to
   * run; trust_purger_refused tests the thread under fault injection. */
  mm_option_set("purge_thread_mib", 0);
  mm_option_set("hugepages", 0);
  mm_pool_options_t po = {.object_size = POOL_OBJECT, .name = "faults"};
  pool = mm_pool_create(&po);
  heap = mm_heap_new("faults");
  if (!pool || !heap) {
    fprintf(stderr, "trust_faults: no pool or heap before any fault\n");
    return 1;
  }
  probe_start();
  long calls0 = mm_test_fault_count(kind);
  mm_test_fault_set(kind, n, sticky);
  enter("workload under the fault", WATCHDOG_S);
  workload(1234);
  enter("another thread allocates and collects under the fault", WATCHDOG_S);
  probe_run();
  check_all();
  enter("free everything under the fault", WATCHDOG_S);
  free_all();
  long fired = mm_test_fault_count(kind) - calls0 >= n;
  long nulls_during = nulls;
  mm_test_fault_set(kind, 0, 0); /* the fault stops */
  enter("the main thread allocates and collects after the fault", WATCHDOG_S);
  lock_probe();
  long nulls_probe = nulls - nulls_during;
  enter("the workload again after the fault", WATCHDOG_S);
  nulls = 0;
  workload(1234);
  free_all();
  mm_pool_destroy(pool);
  mm_heap_destroy(heap);
  mm_collect();
  alarm(0);
  if (damaged || not_zero || bad_errno || nulls || nulls_probe) {
    fprintf(stderr,
            "trust_faults: %s N=%ld %s: %ld damaged, %ld calloc not zero, %ld wrong errno, "
            "%ld NULL after the fault stopped\n",
            kind_names[kind], n, sticky ? "sticky" : "one-shot", damaged, not_zero, bad_errno,
            nulls + nulls_probe);
    return 1;
  }
  printf("%ld %ld\n", nulls_during, fired);
  return 0;
}

/* ---- the driver ---------------------------------------------------------------- */

typedef struct job_s {
  pid_t pid;
  int fd;
  int kind, sticky;
  long n;
} job_t;

static int cases, failed;
static long saw_null[KINDS][2], fired_cases[KINDS][2], not_fired, hangs[KINDS][2], skipped;
static long calls_min[KINDS];
static const char *self;

static void job_start(job_t *j, int kind, long n, int sticky) {
  int fds[2];
  if (pipe(fds) != 0) {
    perror("pipe");
    exit(2);
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    char sk[8], sn[32], ss[8];
    snprintf(sk, sizeof(sk), "%d", kind);
    snprintf(sn, sizeof(sn), "%ld", n);
    snprintf(ss, sizeof(ss), "%d", sticky);
    execl(self, self, sk, sn, ss, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  *j = (job_t){pid, fds[0], kind, sticky, n};
}

static void job_finish(job_t *j) {
  char buf[64] = "";
  ssize_t got = 0, r;
  while ((r = read(j->fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0) got += r;
  close(j->fd);
  int status = 0;
  waitpid(j->pid, &status, 0);
  cases++;
  long nul = -1, fired = -1;
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
            sscanf(buf, "%ld %ld", &nul, &fired) == 2;
  const char *why = "";
  /* Some purges come from the heartbeat (every 10 ms of slow-path
   * activity), so their count varies by a few from run to run, and with
   * them, by a step, the reservations and commits: 40 count runs, two at a
   * time, made 20-21 reservations and 50-53 commits (a huge mapping or an
   * extent the heartbeat purged or not is mapped again or not).  A run
   * counts as "the fault must fire" only below that spread. */
  long sure = j->kind == PURGE ? calls_min[PURGE] * 9 / 10 : calls_min[j->kind] - 2;
  if (ok && !fired && j->n <= sure) {
    not_fired++;
    fprintf(stderr, "trust_faults: %s N=%ld %s: the fault did not fire\n", kind_names[j->kind],
            j->n, j->sticky ? "sticky" : "one-shot");
  }
  if (ok && fired) {
    fired_cases[j->kind][j->sticky]++;
    if (j->kind == PURGE && nul != 0) {
      ok = false;
      why = ": a failed purge made an allocation fail";
    } else if (j->kind != PURGE && !j->sticky && nul > 1) {
      ok = false;
      why = ": one failed call made more than one allocation fail";
    } else if (j->kind != PURGE && j->sticky && nul == 0) {
      ok = false;
      why = ": every call failing from the Nth on, yet no allocation failed";
    }
  }
  if (ok) {
    saw_null[j->kind][j->sticky] += nul;
    return;
  }
  failed++;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) hangs[j->kind][j->sticky]++;
  char how[48];
  if (WIFSIGNALED(status))
    snprintf(how, sizeof(how), "killed by signal %d", WTERMSIG(status));
  else
    snprintf(how, sizeof(how), "exit %d, %ld NULL", WEXITSTATUS(status), nul);
  fprintf(stderr, "trust_faults: FAIL %s N=%ld %s (%s)%s; rerun: MMALLOC_HEAPS=2 %s %d %ld %d\n",
          kind_names[j->kind], j->n, j->sticky ? "sticky" : "one-shot", how, why, self, j->kind,
          j->n, j->sticky);
}

/* Calls of each kind one run of the case's script makes before the fault
 * stops, in a fresh process: the least and the most over three runs (purges
 * depend on timing; with the threads pinned, reservations and commits do
 * not). */
static int count_calls(long lo[KINDS], long hi[KINDS]) {
  for (int run = 0; run < 3; run++) {
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "'%s' count", self);
    FILE *f = popen(cmd, "r");
    long c[KINDS];
    if (!f || fscanf(f, "%ld %ld %ld", &c[0], &c[1], &c[2]) != 3) return -1;
    if (pclose(f) != 0) return -1;
    for (int k = 0; k < KINDS; k++) {
      if (run == 0 || c[k] < lo[k]) lo[k] = c[k];
      if (run == 0 || c[k] > hi[k]) hi[k] = c[k];
    }
  }
  return 0;
}

static int count_main(void) {
  mm_option_set("purge_delay_ms", 0);
  mm_option_set("purge_thread_mib", 0); /* as run_case */
  mm_option_set("hugepages", 0);
  mm_pool_options_t po = {.object_size = POOL_OBJECT, .name = "faults"};
  pool = mm_pool_create(&po); /* as run_case, before counting */
  heap = mm_heap_new("faults");
  if (!pool || !heap) return 1;
  probe_start();
  long before[KINDS];
  for (int k = 0; k < KINDS; k++) before[k] = mm_test_fault_count(k);
  /* what run_case does before the fault stops */
  workload(1234);
  probe_run();
  free_all();
  printf("%ld %ld %ld\n", mm_test_fault_count(0) - before[0], mm_test_fault_count(1) - before[1],
         mm_test_fault_count(2) - before[2]);
  return damaged || not_zero || nulls ? 1 : 0;
}

int main(int argc, char **argv) {
  self = argv[0];
  if (argc == 4) return run_case(atoi(argv[1]), atol(argv[2]), atoi(argv[3]));
  if (argc == 2 && strcmp(argv[1], "count") == 0) return count_main();
  if (argc != 1) {
    fprintf(stderr, "usage: trust_faults [count | KIND N MODE]\n");
    return 2;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  setenv("MMALLOC_HEAPS", "2", 1); /* for the children */
  long lo[KINDS], hi[KINDS];
  REQUIRE("the workload runs cleanly without faults", count_calls(lo, hi) == 0);
  for (int k = 0; k < KINDS; k++) calls_min[k] = lo[k];
  fprintf(stderr,
          "trust_faults: the workload makes %ld-%ld reservations, %ld-%ld commits, "
          "%ld-%ld purges\n",
          lo[0], hi[0], lo[1], hi[1], lo[2], hi[2]);
  CHECK("the workload reserves", lo[RESERVE] > 0);
  CHECK("the workload commits", lo[COMMIT] > 0);
  CHECK("the workload purges", lo[PURGE] > 0);
  /* Every N from 1 to the count plus 3 (the cases past the end check that a
   * fault that never fires changes nothing), both modes: no stride. */
  const char *js = getenv("TRUST_FAULTS_JOBS");
  int njobs = js && atoi(js) >= 1 && atoi(js) <= 8 ? atoi(js) : 2;
  job_t jobs[8];
  int running = 0;
  for (int kind = 0; kind < KINDS; kind++)
    for (int sticky = 0; sticky < 2; sticky++)
      for (long n = 1; n <= hi[kind] + 3; n++) {
        if (running == njobs) {
          job_finish(&jobs[0]);
          memmove(&jobs[0], &jobs[1], (size_t)(running - 1) * sizeof(job_t));
          running--;
        }
        if (hangs[kind][sticky] >= HANGS_MAX) {
          skipped++;
          continue;
        }
        job_start(&jobs[running++], kind, n, sticky);
      }
  while (running) {
    job_finish(&jobs[0]);
    memmove(&jobs[0], &jobs[1], (size_t)(running - 1) * sizeof(job_t));
    running--;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "trust_faults: %d cases in %.0f s, %d failed\n", cases,
          (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, failed);
  if (skipped)
    fprintf(stderr, "trust_faults: %ld cases skipped after %d watchdog hangs of their kind\n",
            skipped, HANGS_MAX);
  for (int kind = 0; kind < KINDS; kind++)
    for (int sticky = 0; sticky < 2; sticky++)
      fprintf(stderr, "trust_faults:   %-7s %-8s: the fault fired in %ld cases, %ld NULL/ENOMEM\n",
              kind_names[kind], sticky ? "sticky" : "one-shot", fired_cases[kind][sticky],
              saw_null[kind][sticky]);
  CHECK("every fault case held (ENOMEM, objects intact, calloc zero, no lock held, recovery)",
        failed == 0);
  CHECK("the fault fired in every case that finished with N within the count "
        "(the injection works)", not_fired == 0);
  CHECK("reservation faults made allocations fail", saw_null[RESERVE][1] > 0);
  CHECK("commit faults made allocations fail", saw_null[COMMIT][1] > 0);
  return check_summary("trust_faults");
}
