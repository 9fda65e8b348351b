/* test_farm_stop.c — how farms end and stop, on both queue kinds: an empty
 * stream, an emitter that stops early, an error in the emitter, a worker or
 * the collector (mm_ctx_fail), a failing init hook, a cancel from outside
 * while the source never ends, and usage errors (bad configurations, a
 * worker returning MM_EOS).  After a stop every task must be accounted for
 * exactly once: either processed by a worker, or given to the drop callback
 * before; and every output either collected or dropped.  Not a benchmark.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mmalloc/stream.h"
#include "stream_test.h"

typedef struct task {
  uint32_t id;
  _Atomic uint32_t processed, collected, dropped;
} task_t;

typedef struct run {
  task_t *tasks;
  uint32_t ntasks;      /* the source ends after this many (UINT32_MAX: never) */
  uint32_t next;
  uint32_t fail_emit;   /* emitter fails when next reaches this */
  uint32_t fail_work;   /* a worker fails on this id */
  uint32_t fail_coll;   /* the collector fails on this id */
  int fail_init_worker; /* worker 0's init fails */
  int eos_from_worker;  /* workers return MM_EOS (a usage error) */
  _Atomic uint32_t xcollected;
} run_t;

#define NONE UINT32_MAX

static void *emit(void *unused, mm_ctx_t *ctx) {
  (void)unused;
  run_t *r = mm_ctx_user(ctx);
  if (r->next == r->fail_emit) return mm_ctx_fail(ctx, 31);
  if (r->next >= r->ntasks) return MM_EOS;
  return &r->tasks[r->next++ % 4096];
}

static void *work(void *p, mm_ctx_t *ctx) {
  task_t *t = p;
  run_t *r = mm_ctx_user(ctx);
  atomic_fetch_add(&t->processed, 1);
  if (t->id == r->fail_work) return mm_ctx_fail(ctx, 32);
  if (r->eos_from_worker) return MM_EOS;
  if (t->id % 5 == 0) test_work(t->id, 500);
  return t;
}

static void *collect(void *p, mm_ctx_t *ctx) {
  task_t *t = p;
  run_t *r = mm_ctx_user(ctx);
  atomic_fetch_add(&t->collected, 1);
  atomic_fetch_add(&r->xcollected, 1);
  if (t->id == r->fail_coll) return mm_ctx_fail(ctx, 33);
  return MM_GO_ON;
}

static int worker_init(mm_ctx_t *ctx) {
  run_t *r = mm_ctx_user(ctx);
  return r->fail_init_worker && mm_ctx_index(ctx) == 0 ? 34 : 0;
}

static void drop(void *item, void *user) {
  (void)user;
  task_t *t = item;
  atomic_fetch_add(&t->dropped, 1);
}

static mm_farm_config_t make_config(run_t *r, mm_queue_kind_t kind,
                                    mm_sched_t sched, unsigned n, bool coll) {
  mm_farm_config_t cfg;
  mm_farm_config_init(&cfg);
  cfg.nworkers = n;
  cfg.emitter = (mm_node_spec_t){.svc = emit, .user = r};
  cfg.worker = (mm_node_spec_t){.svc = work, .user = r, .init = worker_init};
  cfg.collector = (mm_node_spec_t){.svc = collect, .user = r};
  cfg.collect = coll;
  cfg.sched = sched;
  cfg.order = sched == MM_SCHED_ON_DEMAND ? MM_ORDER_ORDERED : MM_ORDER_UNORDERED;
  cfg.queue = kind;
  cfg.capacity = 16;
  cfg.drop = drop;
  return cfg;
}

static run_t *new_run(uint32_t ntasks) {
  run_t *r = calloc(1, sizeof *r);
  r->tasks = calloc(ntasks < 4096 ? ntasks + 1 : 4096, sizeof *r->tasks);
  for (uint32_t i = 0; i < ntasks && i < 4096; i++) r->tasks[i].id = i;
  r->ntasks = ntasks;
  r->fail_emit = r->fail_work = r->fail_coll = NONE;
  return r;
}

/* Each emitted task: processed once, or dropped once unprocessed; each
 * processed task (with a collector): collected or dropped, not both; except
 * the task a failing worker was given, which stays with that worker. */
static bool accounted(const run_t *r, bool coll, uint32_t *bad) {
  *bad = 0;
  for (uint32_t i = 0; i < r->next; i++) {
    const task_t *t = &r->tasks[i];
    uint32_t p = atomic_load(&t->processed), c = atomic_load(&t->collected),
             d = atomic_load(&t->dropped);
    bool kept = t->id == r->fail_work && p == 1 && c == 0 && d == 0;
    bool ok = kept || (p == 1 && (coll ? c + d == 1 : d == 0 && c == 0)) ||
              (p == 0 && c == 0 && d == 1);
    *bad += !ok;
  }
  return *bad == 0;
}

static void test_errors(mm_queue_kind_t kind) {
  static const unsigned ns[] = {1, 2, 8};
  const char *k = mm_queue_kind_name(kind);
  for (int sched = 0; sched < 2; sched++)
    for (int ni = 0; ni < 3; ni++)
      for (int coll = 0; coll < 2; coll++)
        for (int where = 0; where < 3; where++) {
          if (where == 2 && !coll) continue;
          for (uint32_t at = 0; at < 300; at += 97) {
            run_t *r = new_run(1000);
            if (where == 0) r->fail_emit = at;
            if (where == 1) r->fail_work = at;
            if (where == 2) r->fail_coll = at;
            mm_farm_config_t cfg = make_config(r, kind, sched, ns[ni], coll);
            mm_farm_t *f = mm_farm_create(&cfg);
            int rc = mm_farm_run(f);
            uint32_t bad;
            bool acc = accounted(r, coll, &bad);
            char name[128];
            snprintf(name, sizeof name, "%s %s n=%u %s: %s fails at %u", k,
                     sched ? "on-demand/ordered" : "rr/unordered", ns[ni],
                     coll ? "collector" : "no collector",
                     where == 0 ? "emitter" : where == 1 ? "worker" : "collector", at);
            CHECK(name, rc == 31 + where && acc);
            if (rc != 31 + where || !acc)
              fprintf(stderr, "  rc %d, %u tasks unaccounted of %u\n", rc, bad, r->next);
            mm_farm_destroy(f);
            free(r->tasks);
            free(r);
          }
        }
}

static void test_ends(mm_queue_kind_t kind) {
  const char *k = mm_queue_kind_name(kind);
  char name[96];
  for (unsigned n = 1; n <= 8; n *= 8) {
    for (uint32_t len = 0; len <= 3; len += 3) {
      run_t *r = new_run(len);
      mm_farm_config_t cfg = make_config(r, kind, MM_SCHED_ON_DEMAND, n, true);
      mm_farm_t *f = mm_farm_create(&cfg);
      int rc = mm_farm_run(f);
      uint32_t bad;
      snprintf(name, sizeof name, "%s n=%u: stream of %u tasks ends cleanly", k, n, len);
      CHECK(name, rc == 0 && accounted(r, true, &bad) &&
                      atomic_load(&r->xcollected) == len);
      mm_farm_destroy(f);
      free(r->tasks);
      free(r);
    }
  }
  /* A failing init: the farm stops with its code, whatever else ran. */
  run_t *r = new_run(1000);
  r->fail_init_worker = 1;
  mm_farm_config_t cfg = make_config(r, kind, MM_SCHED_ROUND_ROBIN, 4, true);
  mm_farm_t *f = mm_farm_create(&cfg);
  uint32_t bad;
  snprintf(name, sizeof name, "%s: failing init stops the farm", k);
  int rc = mm_farm_run(f);
  CHECK(name, rc == 34 && accounted(r, true, &bad));
  mm_farm_destroy(f);
  free(r->tasks);
  free(r);

  /* A worker returning MM_EOS: only sources end streams. */
  r = new_run(100);
  r->eos_from_worker = 1;
  cfg = make_config(r, kind, MM_SCHED_ROUND_ROBIN, 2, true);
  f = mm_farm_create(&cfg);
  snprintf(name, sizeof name, "%s: MM_EOS from a worker is EINVAL", k);
  CHECK(name, mm_farm_run(f) == EINVAL);
  mm_farm_destroy(f);
  free(r->tasks);
  free(r);
}

/* A source that never ends, stopped from outside once things flow. */
static void test_cancel(mm_queue_kind_t kind, unsigned n) {
  run_t *r = new_run(NONE);
  for (uint32_t i = 0; i < 4096; i++) r->tasks[i].id = i;
  mm_farm_config_t cfg = make_config(r, kind, MM_SCHED_ON_DEMAND, n, true);
  cfg.drop = NULL; /* tasks are reused modulo 4096: no accounting here */
  mm_farm_t *f = mm_farm_create(&cfg);
  int rc = mm_farm_start(f);
  while (rc == 0 && atomic_load(&r->xcollected) < 1000) {
    struct timespec ts = {0, 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  mm_farm_cancel(f, 99);
  char name[80];
  snprintf(name, sizeof name, "%s n=%u: cancel stops an endless stream",
           mm_queue_kind_name(kind), n);
  CHECK(name, rc == 0 && mm_farm_wait(f) == 99);
  CHECK("wait again returns the same code", mm_farm_wait(f) == 99);
  mm_farm_destroy(f);
  free(r->tasks);
  free(r);
}

static void *noop(void *p, mm_ctx_t *ctx) {
  (void)ctx;
  return p;
}

static void test_bad_configs(void) {
  mm_farm_config_t cfg;
  mm_farm_config_init(&cfg);
  cfg.emitter.svc = noop;
  errno = 0;
  CHECK("no worker svc: EINVAL", !mm_farm_create(&cfg) && errno == EINVAL);
  cfg.worker.svc = noop;
  cfg.emitter.svc = NULL;
  errno = 0;
  CHECK("a source farm needs an emitter svc", !mm_farm_create(&cfg) && errno == EINVAL);
  cfg.emitter.svc = noop;
  cfg.sched = (mm_sched_t)7;
  errno = 0;
  CHECK("bad sched: EINVAL", !mm_farm_create(&cfg) && errno == EINVAL);
  cfg.sched = MM_SCHED_ROUND_ROBIN;
  cfg.queue = (mm_queue_kind_t)9;
  errno = 0;
  CHECK("bad queue kind: EINVAL", !mm_farm_create(&cfg) && errno == EINVAL);
  cfg.queue = MM_QUEUE_LOCKFREE;
  cfg.alloc = (mm_alloc_mode_t)5;
  errno = 0;
  CHECK("bad alloc mode: EINVAL", !mm_farm_create(&cfg) && errno == EINVAL);
  cfg.alloc = MM_ALLOC_DEFAULT;
  cfg.nworkers = 0; /* online CPUs */
  mm_farm_t *f = mm_farm_create(&cfg);
  CHECK("nworkers 0 means the CPUs", f != NULL);
  mm_farm_stats_t st;
  mm_farm_stats(f, &st);
  CHECK("stats are zero before wait", st.tasks_emitted == 0);
  mm_farm_destroy(f); /* never started */
  CHECK("wait on NULL", mm_farm_wait(NULL) == EINVAL);
}

int main(int argc, char **argv) {
  (void)test_scale(argc, argv);
  mm_queue_kind_t kinds[] = {MM_QUEUE_LOCKFREE, MM_QUEUE_MUTEX};
  for (int i = 0; i < 2; i++) {
    test_ends(kinds[i]);
    test_errors(kinds[i]);
    test_cancel(kinds[i], 1);
    test_cancel(kinds[i], 8);
  }
  test_bad_configs();
  return check_summary("test_farm_stop");
}
