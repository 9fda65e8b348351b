/* test_farm.c — farms on one queue kind (argv[1]: lockfree | mutex):
 * round-robin and on-demand scheduling, ordered and unordered collection,
 * 1, 2 and 8 workers, with and without a collector.  Every task must be
 * processed exactly once, collected exactly once (with a collector), in
 * emission order when ordered, by worker (id mod n) under round-robin.
 * Then: filtering workers (MM_GO_ON) in an ordered farm, several outputs per
 * task (mm_ctx_send), an emitter sending several tasks per call, init/end
 * hooks, and sending from an end hook.  Not a benchmark.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mmalloc/stream.h"
#include "stream_test.h"

typedef struct task {
  uint32_t id;
  uint32_t worker;
  uint32_t processed; /* by the worker that got it (the queue orders it) */
  uint32_t collected; /* by the collector */
} task_t;

typedef struct run {
  task_t *tasks;
  uint32_t ntasks;
  uint32_t next;         /* emitter */
  uint32_t per_call;     /* emitter: tasks sent per svc call */
  uint32_t expect;       /* collector: next id when ordered */
  uint32_t collected;    /* collector */
  uint32_t order_errors; /* collector */
  int filter;            /* workers drop odd ids */
  int twice;             /* workers send every task twice (unordered) */
  _Atomic uint32_t xsend_wrong; /* workers: mm_ctx_send not refused */
  _Atomic uint32_t xinits, xends;
} run_t;

static void *emit(void *unused, mm_ctx_t *ctx) {
  (void)unused;
  run_t *r = mm_ctx_user(ctx);
  if (r->next >= r->ntasks) return MM_EOS;
  for (uint32_t k = 1; k < r->per_call && r->next + 1 < r->ntasks; k++)
    if (mm_ctx_send(ctx, &r->tasks[r->next++]) != 0) return mm_ctx_fail(ctx, 1);
  return &r->tasks[r->next++];
}

static void *work(void *p, mm_ctx_t *ctx) {
  task_t *t = p;
  run_t *r = mm_ctx_user(ctx);
  t->worker = mm_ctx_index(ctx);
  t->processed++;
  /* Uneven work, so that outputs overtake each other. */
  if (t->id % 7 == 0) test_work(t->id, (t->id % 13) * 200);
  if (r->filter && (t->id & 1)) return MM_GO_ON;
  if (r->twice && mm_ctx_send(ctx, t) != 0) return mm_ctx_fail(ctx, 2);
  return t;
}

/* Ordered farms: exactly one output per task, so mm_ctx_send is refused. */
static void *work_ordered(void *p, mm_ctx_t *ctx) {
  task_t *t = p;
  run_t *r = mm_ctx_user(ctx);
  t->worker = mm_ctx_index(ctx);
  t->processed++;
  if (t->id % 7 == 0) test_work(t->id, (t->id % 13) * 200);
  if (mm_ctx_send(ctx, t) != EINVAL) atomic_fetch_add(&r->xsend_wrong, 1);
  if (r->filter && (t->id & 1)) return MM_GO_ON;
  return t;
}

static void *collect(void *p, mm_ctx_t *ctx) {
  task_t *t = p;
  run_t *r = mm_ctx_user(ctx);
  t->collected++;
  r->collected++;
  if (r->expect != UINT32_MAX) {
    if (t->id != r->expect) r->order_errors++;
    r->expect = t->id + (r->filter ? 2 : 1);
  }
  return MM_GO_ON;
}

static int node_init(mm_ctx_t *ctx) {
  run_t *r = mm_ctx_user(ctx);
  atomic_fetch_add(&r->xinits, 1);
  return 0;
}

static void node_end(mm_ctx_t *ctx) {
  run_t *r = mm_ctx_user(ctx);
  atomic_fetch_add(&r->xends, 1);
}

static mm_queue_kind_t kind;

typedef struct variant {
  mm_sched_t sched;
  mm_order_t order;
  unsigned n;
  bool collect;
  int filter, twice, per_call;
} variant_t;

static void run_variant(const variant_t *v, uint32_t ntasks) {
  run_t r = {.ntasks = ntasks, .per_call = v->per_call ? (uint32_t)v->per_call : 1,
             .filter = v->filter, .twice = v->twice};
  r.tasks = calloc(ntasks, sizeof *r.tasks);
  for (uint32_t i = 0; i < ntasks; i++) r.tasks[i].id = i;
  bool ordered = v->order == MM_ORDER_ORDERED && v->collect;
  r.expect = ordered ? 0 : UINT32_MAX;
  atomic_init(&r.xinits, 0);
  atomic_init(&r.xends, 0);
  atomic_init(&r.xsend_wrong, 0);

  mm_farm_config_t cfg;
  mm_farm_config_init(&cfg);
  cfg.nworkers = v->n;
  cfg.emitter = (mm_node_spec_t){emit, &r, node_init, node_end};
  cfg.worker = (mm_node_spec_t){ordered ? work_ordered : work, &r, node_init, node_end};
  cfg.collector = (mm_node_spec_t){collect, &r, node_init, node_end};
  cfg.collect = v->collect;
  cfg.sched = v->sched;
  cfg.order = v->order;
  cfg.queue = kind;
  cfg.capacity = 64;
  mm_farm_t *f = mm_farm_create(&cfg);
  int rc = f ? mm_farm_run(f) : errno;

  char name[160];
  snprintf(name, sizeof name, "%s %s %s n=%u %s%s%s%s", mm_queue_kind_name(kind),
           v->sched == MM_SCHED_ROUND_ROBIN ? "rr" : "on-demand",
           v->order == MM_ORDER_ORDERED ? "ordered" : "unordered", v->n,
           v->collect ? "collector" : "no-collector", v->filter ? " filter" : "",
           v->twice ? " twice" : "", v->per_call ? " multi-emit" : "");
  uint32_t bad_proc = 0, bad_coll = 0, bad_rr = 0;
  unsigned out_per_task = v->twice ? 2 : 1;
  for (uint32_t i = 0; i < ntasks; i++) {
    task_t *t = &r.tasks[i];
    bad_proc += t->processed != 1;
    unsigned want = v->collect ? (v->filter && (i & 1) ? 0 : out_per_task) : 0;
    bad_coll += t->collected != want;
    if (v->sched == MM_SCHED_ROUND_ROBIN && !v->per_call) bad_rr += t->worker != i % v->n;
  }
  mm_farm_stats_t st;
  mm_farm_stats(f, &st);
  uint64_t sum = 0;
  for (unsigned i = 0; i < v->n; i++) sum += mm_farm_worker_tasks(f, i);
  unsigned nodes = 1 + v->n + (v->collect ? 1 : 0);
  bool ok = rc == 0 && bad_proc == 0 && bad_coll == 0 && bad_rr == 0 &&
            r.order_errors == 0 && st.tasks_emitted == ntasks && sum == ntasks &&
            atomic_load(&r.xsend_wrong) == 0 && atomic_load(&r.xinits) == nodes &&
            atomic_load(&r.xends) == nodes;
  if (!ok)
    fprintf(stderr,
            "  %s: rc %d, processed-wrong %u, collected-wrong %u, rr-wrong %u, "
            "order errors %u, emitted %llu, worker sum %llu, send-wrong %u, inits %u, "
            "ends %u\n",
            name, rc, bad_proc, bad_coll, bad_rr, r.order_errors,
            (unsigned long long)st.tasks_emitted, (unsigned long long)sum,
            atomic_load(&r.xsend_wrong), atomic_load(&r.xinits), atomic_load(&r.xends));
  CHECK(name, ok);
  mm_farm_destroy(f);
  free(r.tasks);
}

/* A worker that sends a partial sum from its end hook (unordered farm). */
typedef struct sum {
  _Alignas(64) uint64_t part[16];
  uint64_t total;
  uint64_t items;
  uint32_t next, n;
  uint64_t marker[16];
} sum_t;

static void *sum_emit(void *unused, mm_ctx_t *ctx) {
  (void)unused;
  sum_t *s = mm_ctx_user(ctx);
  if (s->next >= s->n) return MM_EOS;
  return (void *)(uintptr_t)(++s->next * 16); /* nonzero, not a sentinel */
}

static void *sum_work(void *p, mm_ctx_t *ctx) {
  sum_t *s = mm_ctx_user(ctx);
  s->part[mm_ctx_index(ctx)] += (uintptr_t)p / 16;
  return MM_GO_ON;
}

static void sum_end(mm_ctx_t *ctx) {
  sum_t *s = mm_ctx_user(ctx);
  unsigned i = mm_ctx_index(ctx);
  s->marker[i] = s->part[i];
  mm_ctx_send(ctx, &s->marker[i]);
}

static void *sum_collect(void *p, mm_ctx_t *ctx) {
  sum_t *s = mm_ctx_user(ctx);
  s->total += *(uint64_t *)p;
  s->items++;
  return MM_GO_ON;
}

static void test_end_hook_sends(unsigned n, uint32_t items) {
  sum_t s = {.n = items};
  mm_farm_config_t cfg;
  mm_farm_config_init(&cfg);
  cfg.nworkers = n;
  cfg.emitter = (mm_node_spec_t){.svc = sum_emit, .user = &s};
  cfg.worker = (mm_node_spec_t){.svc = sum_work, .user = &s, .end = sum_end};
  cfg.collector = (mm_node_spec_t){.svc = sum_collect, .user = &s};
  cfg.collect = true;
  cfg.queue = kind;
  cfg.sched = MM_SCHED_ON_DEMAND;
  mm_farm_t *f = mm_farm_create(&cfg);
  int rc = mm_farm_run(f);
  char name[80];
  snprintf(name, sizeof name, "%s: partial sums sent from end hooks, n=%u",
           mm_queue_kind_name(kind), n);
  CHECK(name, rc == 0 && s.items == n &&
                  s.total == (uint64_t)items * (items + 1) / 2);
  mm_farm_destroy(f);
}

int main(int argc, char **argv) {
  if (argc < 2 || mm_queue_kind_parse(argv[1], &kind) != 0) {
    fprintf(stderr, "usage: test_farm lockfree|mutex [scale]\n");
    return 2;
  }
  double s = test_scale(argc, argv);
  uint32_t ntasks = (uint32_t)(20000 * s);
  if (ntasks < 100) ntasks = 100;
  static const unsigned ns[] = {1, 2, 8};
  for (int sched = 0; sched < 2; sched++)
    for (int order = 0; order < 2; order++)
      for (int ni = 0; ni < 3; ni++)
        for (int coll = 0; coll < 2; coll++) {
          variant_t v = {.sched = sched, .order = order, .n = ns[ni], .collect = coll};
          run_variant(&v, ntasks);
        }
  for (int sched = 0; sched < 2; sched++) {
    for (int ni = 0; ni < 3; ni++) {
      variant_t filt = {.sched = sched, .order = MM_ORDER_ORDERED, .n = ns[ni],
                        .collect = true, .filter = 1};
      run_variant(&filt, ntasks);
      variant_t twice = {.sched = sched, .order = MM_ORDER_UNORDERED, .n = ns[ni],
                         .collect = true, .twice = 1};
      run_variant(&twice, ntasks);
      variant_t multi = {.sched = sched, .order = MM_ORDER_ORDERED, .n = ns[ni],
                         .collect = true, .per_call = 3};
      run_variant(&multi, ntasks);
    }
  }
  test_end_hook_sends(1, ntasks);
  test_end_hook_sends(8, ntasks);
  return check_summary("test_farm");
}
