/* stream_bench.c — micro-benchmarks of mmalloc's streaming module, after
 * the FastFlow paper (Aldinucci et al.; [FastFlow] in docs/sources.md,
 * section 3.1 and Figure 3).  One binary, three workloads, one JSON object
 * per line on stdout; bench/stream/run.py runs the grid, repeats, and plots.
 *
 *   queue   put/get cost between two threads: a producer pushes N items,
 *           a consumer pops them, through mm_queue_t of either kind (the
 *           same interface: the lock-free ring, or the mutex + condition
 *           variable baseline).  Also the uncontended cost of one put and one
 *           get in a single thread.  Stresses: cache-line transfer of slots
 *           and indices (lock-free) vs lock hand-over (mutex).
 *   farm    the paper's Figure 2: an emitter streams T tasks (pointers to a
 *           pre-allocated array) to N workers; each worker modifies its
 *           task's data, then burns a fixed grain of calibrated work.
 *           Speedup = sequential time of the same T tasks / farm time.
 *           Stresses: the emitter's dispatch cost against the grain.
 *   alloc   allocation over queues: the emitter allocates every task
 *           (64..512 B) with mm_farm_task_alloc, workers touch it and free
 *           it with mm_farm_task_free (optionally half of them in the
 *           collector), in MM_ALLOC_RETURN mode (blocks go home over return
 *           queues, freed locally) or MM_ALLOC_PLAIN (freed where they die:
 *           a remote free).  Run it under LD_PRELOAD to compare allocators.
 *
 * The synthetic work is a dependent multiply-add chain calibrated at start
 * (iterations per µs); it does not read the clock, so a descheduled worker
 * does no "work" while it waits, and speedups are not inflated by
 * oversubscription.
 *
 * Usage: mmstream_bench queue|farm|alloc [--option value ...]; see usage().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "mmalloc/stream.h"

/* ---- options -------------------------------------------------------------- */

typedef struct opts {
  const char *workload;
  mm_queue_kind_t kind;
  size_t capacity;
  uint64_t items;   /* queue: items; farm/alloc: tasks */
  unsigned workers;
  double grain_us;
  mm_sched_t sched;
  mm_alloc_mode_t mode;
  size_t min_size, max_size;
  int collector_frees; /* alloc: half the tasks are freed by the collector */
} opts_t;

static void usage(void) {
  fprintf(stderr,
          "usage: mmstream_bench WORKLOAD [options]\n"
          "  queue  --kind lockfree|mutex --items N --capacity C\n"
          "  farm   --kind K --workers N --grain-us G --tasks T --sched rr|od\n"
          "         [--capacity C]\n"
          "  alloc  --mode return|plain --kind K --workers N --tasks T\n"
          "         --grain-us G --min B --max B [--collector-frees 0|1]\n"
          "         [--sched rr|od]\n"
          "Prints one JSON object per line.  Not a test: no assertions.\n");
  exit(2);
}

static opts_t parse(int argc, char **argv) {
  opts_t o = {.kind = MM_QUEUE_LOCKFREE, .capacity = 512, .items = 1000000,
              .workers = 2, .grain_us = 5, .sched = MM_SCHED_ROUND_ROBIN,
              .mode = MM_ALLOC_RETURN, .min_size = 64, .max_size = 512};
  if (argc < 2) usage();
  o.workload = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--kind")) {
      if (mm_queue_kind_parse(v, &o.kind)) usage();
    } else if (!strcmp(k, "--capacity")) o.capacity = strtoull(v, NULL, 10);
    else if (!strcmp(k, "--items") || !strcmp(k, "--tasks")) o.items = strtoull(v, NULL, 10);
    else if (!strcmp(k, "--workers")) o.workers = (unsigned)atoi(v);
    else if (!strcmp(k, "--grain-us")) o.grain_us = atof(v);
    else if (!strcmp(k, "--sched")) o.sched = !strcmp(v, "od") || !strcmp(v, "on-demand")
                                              ? MM_SCHED_ON_DEMAND : MM_SCHED_ROUND_ROBIN;
    else if (!strcmp(k, "--mode")) o.mode = !strcmp(v, "plain") ? MM_ALLOC_PLAIN : MM_ALLOC_RETURN;
    else if (!strcmp(k, "--min")) o.min_size = strtoull(v, NULL, 10);
    else if (!strcmp(k, "--max")) o.max_size = strtoull(v, NULL, 10);
    else if (!strcmp(k, "--collector-frees")) o.collector_frees = atoi(v);
    else usage();
  }
  if (o.workers == 0 || o.items == 0 || o.min_size < 16 || o.max_size < o.min_size) usage();
  return o;
}

/* ---- clock, calibrated work, environment ---------------------------------- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t work_iters(uint64_t seed, uint64_t iters) {
  uint64_t acc = seed | 1;
  for (uint64_t i = 0; i < iters; i++) {
    acc = acc * 6364136223846793005ULL + 1442695040888963407ULL;
    __asm__ __volatile__("" : "+r"(acc)); /* keep the chain */
  }
  return acc;
}

static double iters_per_us;

/* Best of several short runs: the least disturbed one. */
static void calibrate(void) {
  const uint64_t n = 2000000;
  double best = 1e9;
  for (int r = 0; r < 7; r++) {
    double t0 = now_s();
    work_iters(r, n);
    double t = now_s() - t0;
    if (t < best) best = t;
  }
  iters_per_us = n / (best * 1e6);
}

static const char *preloaded(void) {
  const char *p = getenv("LD_PRELOAD");
  return p && *p ? p : "";
}

/* 1 when the LD_PRELOAD library is really mapped (ld.so only warns when
 * it cannot load it, and glibc would be measured under another name); 1
 * also when nothing is preloaded. */
static int preload_mapped(void) {
  const char *p = preloaded();
  if (!*p) return 1;
  const char *base = strrchr(p, '/');
  base = base ? base + 1 : p;
  FILE *maps = fopen("/proc/self/maps", "r");
  if (!maps) return 0;
  char line[4096];
  int found = 0;
  while (!found && fgets(line, sizeof line, maps)) found = strstr(line, base) != NULL;
  fclose(maps);
  return found;
}

/* User + system CPU seconds of the whole process so far: less disturbed by
 * other programs on a shared machine than wall time (a descheduled thread
 * uses none), though spinning still counts. */
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static long max_rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

/* ---- queue ---------------------------------------------------------------- */

typedef struct qarg {
  mm_queue_t *q;
  uint64_t n;
  uint64_t sum;
} qarg_t;

static void *q_producer(void *arg) {
  qarg_t *a = arg;
  for (uint64_t i = 1; i <= a->n; i++) mm_queue_push(a->q, (void *)(uintptr_t)i);
  return NULL;
}

static void *q_consumer(void *arg) {
  qarg_t *a = arg;
  void *out;
  for (uint64_t i = 1; i <= a->n; i++) {
    mm_queue_pop(a->q, &out);
    a->sum += (uintptr_t)out;
  }
  return NULL;
}

static void bench_queue(const opts_t *o) {
  /* Two threads. */
  qarg_t a = {mm_queue_create(o->kind, o->capacity), o->items, 0};
  pthread_t p, c;
  double t0 = now_s();
  pthread_create(&c, NULL, q_consumer, &a);
  pthread_create(&p, NULL, q_producer, &a);
  pthread_join(p, NULL);
  pthread_join(c, NULL);
  double t = now_s() - t0;
  mm_queue_destroy(a.q);
  int ok = a.sum == o->items * (o->items + 1) / 2;

  /* One thread: the uncontended cost of a put, then of a get. */
  size_t batch = o->capacity;
  mm_queue_t *q = mm_queue_create(o->kind, batch);
  uint64_t rounds = o->items / batch + 1;
  double put = 0, get = 0;
  void *out;
  for (uint64_t r = 0; r < rounds; r++) {
    double s0 = now_s();
    for (size_t i = 0; i < batch; i++) mm_queue_try_push(q, (void *)(uintptr_t)(i + 1));
    double s1 = now_s();
    for (size_t i = 0; i < batch; i++) mm_queue_try_pop(q, &out);
    put += s1 - s0;
    get += now_s() - s1;
  }
  mm_queue_destroy(q);
  double ops = (double)rounds * batch;
  printf("{\"bench\":\"queue\",\"kind\":\"%s\",\"capacity\":%zu,\"items\":%llu,"
         "\"ns_per_item\":%.2f,\"put_ns\":%.2f,\"get_ns\":%.2f,\"ok\":%d}\n",
         mm_queue_kind_name(o->kind), o->capacity, (unsigned long long)o->items,
         t * 1e9 / o->items, put * 1e9 / ops, get * 1e9 / ops, ok);
}

/* ---- farm ----------------------------------------------------------------- */

typedef struct ftask {
  uint64_t data[8]; /* one cache line the worker modifies */
} ftask_t;

typedef struct farm_run {
  ftask_t *tasks;
  uint64_t ntasks, next;
  uint64_t iters;
} farm_run_t;

static void *farm_emit(void *unused, mm_ctx_t *ctx) {
  (void)unused;
  farm_run_t *r = mm_ctx_user(ctx);
  if (r->next == r->ntasks) return MM_EOS;
  return &r->tasks[r->next++];
}

static void *farm_work(void *p, mm_ctx_t *ctx) {
  farm_run_t *r = mm_ctx_user(ctx);
  ftask_t *t = p;
  t->data[0] = work_iters(t->data[0], r->iters);
  return MM_GO_ON;
}

static void bench_farm(const opts_t *o) {
  farm_run_t r = {.ntasks = o->items, .iters = (uint64_t)(o->grain_us * iters_per_us + 0.5)};
  r.tasks = calloc(r.ntasks, sizeof *r.tasks);
  for (uint64_t i = 0; i < r.ntasks; i++) r.tasks[i].data[0] = i;

  /* Sequential reference: the same tasks, one thread, no queues. */
  double t0 = now_s();
  for (uint64_t i = 0; i < r.ntasks; i++)
    r.tasks[i].data[0] = work_iters(r.tasks[i].data[0], r.iters);
  double seq = now_s() - t0;

  mm_farm_config_t cfg;
  mm_farm_config_init(&cfg);
  cfg.nworkers = o->workers;
  cfg.emitter = (mm_node_spec_t){.svc = farm_emit, .user = &r};
  cfg.worker = (mm_node_spec_t){.svc = farm_work, .user = &r};
  cfg.sched = o->sched;
  cfg.queue = o->kind;
  cfg.capacity = o->capacity;
  mm_farm_t *f = mm_farm_create(&cfg);
  double c0 = cpu_s();
  t0 = now_s();
  int rc = mm_farm_run(f);
  double par = now_s() - t0, cpu = cpu_s() - c0;
  mm_farm_stats_t st;
  mm_farm_stats(f, &st);
  mm_farm_destroy(f);
  free(r.tasks);
  printf("{\"bench\":\"farm\",\"kind\":\"%s\",\"sched\":\"%s\",\"workers\":%u,"
         "\"grain_us\":%.2f,\"tasks\":%llu,\"seq_s\":%.4f,\"farm_s\":%.4f,"
         "\"speedup\":%.3f,\"us_per_task\":%.3f,\"cpu_s\":%.4f,\"parks\":%llu,"
         "\"ok\":%d}\n",
         mm_queue_kind_name(o->kind), o->sched ? "od" : "rr", o->workers, o->grain_us,
         (unsigned long long)o->items, seq, par, seq / par, par * 1e6 / o->items, cpu,
         (unsigned long long)st.parks, rc == 0 && st.tasks_emitted == o->items);
}

/* ---- alloc ---------------------------------------------------------------- */

typedef struct alloc_run {
  uint64_t ntasks, next, rng;
  size_t min_size, span;
  uint64_t iters;
  int collector_frees;
} alloc_run_t;

typedef struct ablock {
  uint64_t id;
  uint64_t size;
} ablock_t;

static void *alloc_emit(void *unused, mm_ctx_t *ctx) {
  (void)unused;
  alloc_run_t *r = mm_ctx_user(ctx);
  if (r->next == r->ntasks) return MM_EOS;
  r->rng = r->rng * 6364136223846793005ULL + 1442695040888963407ULL;
  size_t size = r->min_size + (r->rng >> 33) % r->span;
  ablock_t *b = mm_farm_task_alloc(ctx, size);
  if (!b) return mm_ctx_fail(ctx, ENOMEM);
  b->id = r->next++;
  b->size = size;
  return b;
}

static void *alloc_work(void *p, mm_ctx_t *ctx) {
  alloc_run_t *r = mm_ctx_user(ctx);
  ablock_t *b = p;
  memset(b + 1, (int)b->id, b->size - sizeof *b); /* use the whole block */
  if (r->iters) work_iters(b->id, r->iters);
  if (r->collector_frees && (b->id & 1)) return b;
  mm_farm_task_free(ctx, b);
  return MM_GO_ON;
}

static void *alloc_collect(void *p, mm_ctx_t *ctx) {
  mm_farm_task_free(ctx, p);
  return MM_GO_ON;
}

static void bench_alloc(const opts_t *o) {
  alloc_run_t r = {.ntasks = o->items, .rng = 12345, .min_size = o->min_size,
                   .span = o->max_size - o->min_size + 1,
                   .iters = (uint64_t)(o->grain_us * iters_per_us + 0.5),
                   .collector_frees = o->collector_frees};
  mm_farm_config_t cfg;
  mm_farm_config_init(&cfg);
  cfg.nworkers = o->workers;
  cfg.emitter = (mm_node_spec_t){.svc = alloc_emit, .user = &r};
  cfg.worker = (mm_node_spec_t){.svc = alloc_work, .user = &r};
  cfg.collector = (mm_node_spec_t){.svc = alloc_collect, .user = &r};
  cfg.collect = o->collector_frees != 0;
  cfg.sched = o->sched;
  cfg.queue = o->kind;
  cfg.capacity = o->capacity;
  cfg.alloc = o->mode;
  mm_farm_t *f = mm_farm_create(&cfg);
  double c0 = cpu_s(), t0 = now_s();
  int rc = mm_farm_run(f);
  double t = now_s() - t0, cpu = cpu_s() - c0;
  mm_farm_stats_t st;
  mm_farm_stats(f, &st);
  mm_farm_destroy(f);
  printf("{\"bench\":\"alloc\",\"mode\":\"%s\",\"kind\":\"%s\",\"sched\":\"%s\","
         "\"workers\":%u,\"grain_us\":%.2f,\"tasks\":%llu,\"min\":%zu,\"max\":%zu,"
         "\"collector_frees\":%d,\"seconds\":%.4f,\"ns_per_task\":%.2f,"
         "\"cpu_ns_per_task\":%.2f,\"parks\":%llu,"
         "\"mtasks_per_s\":%.4f,\"max_rss_kb\":%ld,\"returned\":%llu,\"freed\":%llu,"
         "\"preload\":\"%s\",\"preload_mapped\":%d,\"ok\":%d}\n",
         o->mode == MM_ALLOC_PLAIN ? "plain" : "return", mm_queue_kind_name(o->kind),
         o->sched ? "od" : "rr", o->workers, o->grain_us, (unsigned long long)o->items,
         o->min_size, o->max_size, o->collector_frees, t, t * 1e9 / o->items,
         cpu * 1e9 / o->items, (unsigned long long)st.parks,
         o->items / t / 1e6, max_rss_kb(), (unsigned long long)st.blocks_returned,
         (unsigned long long)st.blocks_freed, preloaded(), preload_mapped(),
         rc == 0 && st.blocks_allocated == o->items &&
             st.blocks_returned + st.blocks_freed == o->items);
}

int main(int argc, char **argv) {
  opts_t o = parse(argc, argv);
  calibrate();
  if (!strcmp(o.workload, "queue")) bench_queue(&o);
  else if (!strcmp(o.workload, "farm")) bench_farm(&o);
  else if (!strcmp(o.workload, "alloc")) bench_alloc(&o);
  else usage();
  return 0;
}
