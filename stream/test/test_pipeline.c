/* test_pipeline.c — pipelines on both queue kinds: source -> ordered farm
 * -> sink (order and values checked); source -> filter stage -> unordered
 * farm with identity collector -> sink (sum checked); a farm as the first
 * stage, a farm in the middle without `collect` (a collector is forced), a
 * farm as the last stage without collector; a one-stage pipeline; an error
 * in a middle stage; an empty pipeline.  Not a benchmark.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mmalloc/stream.h"
#include "stream_test.h"

/* Items are small integers encoded as pointers: (i + 1) * 16. */
#define ITEM(i) ((void *)(uintptr_t)(((uint64_t)(i) + 1) * 16))
#define VALUE(p) ((uint64_t)(uintptr_t)(p) / 16 - 1)

typedef struct state {
  uint64_t n, next;       /* source */
  uint64_t expect;        /* sink, ordered */
  uint64_t got, sum;      /* sink */
  uint64_t errors;        /* sink */
  int fail_at;            /* middle stage fails on this value (-1: never) */
  _Atomic uint64_t xlast_work;
} state_t;

static void *source(void *unused, mm_ctx_t *ctx) {
  (void)unused;
  state_t *s = mm_ctx_user(ctx);
  return s->next < s->n ? ITEM(s->next++) : MM_EOS;
}

/* v -> v*v (fits: n is small enough), ordered farm workers */
static void *square(void *p, mm_ctx_t *ctx) {
  (void)ctx;
  uint64_t v = VALUE(p);
  if (v % 11 == 0) test_work(v, 300);
  return ITEM(v * v);
}

static void *sink_ordered_squares(void *p, mm_ctx_t *ctx) {
  state_t *s = mm_ctx_user(ctx);
  uint64_t v = VALUE(p);
  if (v != s->expect * s->expect) s->errors++;
  s->expect++;
  s->got++;
  return MM_GO_ON;
}

static void *drop_multiples_of_3(void *p, mm_ctx_t *ctx) {
  state_t *s = mm_ctx_user(ctx);
  uint64_t v = VALUE(p);
  if ((int)v == s->fail_at) return mm_ctx_fail(ctx, 77);
  return v % 3 == 0 ? MM_GO_ON : p;
}

static void *plus_one(void *p, mm_ctx_t *ctx) {
  (void)ctx;
  return ITEM(VALUE(p) + 1);
}

static void *sink_sum(void *p, mm_ctx_t *ctx) {
  state_t *s = mm_ctx_user(ctx);
  s->sum += VALUE(p);
  s->got++;
  return MM_GO_ON;
}

static void *sink_sum_atomic(void *p, mm_ctx_t *ctx) { /* farm workers as sink */
  state_t *s = mm_ctx_user(ctx);
  atomic_fetch_add(&s->xlast_work, VALUE(p));
  return MM_GO_ON;
}

static mm_farm_config_t farm_of(mm_svc_fn w, void *user, unsigned n, mm_sched_t sched,
                                mm_order_t order, mm_queue_kind_t kind) {
  mm_farm_config_t c;
  mm_farm_config_init(&c);
  c.nworkers = n;
  c.worker = (mm_node_spec_t){.svc = w, .user = user};
  c.sched = sched;
  c.order = order;
  c.queue = kind;
  c.capacity = 32;
  return c;
}

static void test_three_stages(mm_queue_kind_t kind, mm_sched_t sched, uint64_t n) {
  state_t s = {.n = n, .fail_at = -1};
  mm_pipeline_config_t pc = {.queue = kind, .capacity = 64};
  mm_pipeline_t *p = mm_pipeline_create(&pc);
  mm_node_spec_t src = {.svc = source, .user = &s};
  mm_node_spec_t snk = {.svc = sink_ordered_squares, .user = &s};
  mm_farm_config_t fc = farm_of(square, &s, 3, sched, MM_ORDER_ORDERED, kind);
  int rc = mm_pipeline_add_stage(p, &src);
  rc |= mm_pipeline_add_farm(p, &fc); /* not last: collector forced */
  rc |= mm_pipeline_add_stage(p, &snk);
  rc |= mm_pipeline_run(p);
  char name[96];
  snprintf(name, sizeof name, "%s %s: source -> ordered farm -> sink",
           mm_queue_kind_name(kind), sched ? "on-demand" : "rr");
  CHECK(name, rc == 0 && s.got == n && s.errors == 0);
  mm_pipeline_destroy(p);
}

static void test_four_stages(mm_queue_kind_t kind, uint64_t n) {
  state_t s = {.n = n, .fail_at = -1};
  mm_pipeline_config_t pc = {.queue = kind};
  mm_pipeline_t *p = mm_pipeline_create(&pc);
  mm_node_spec_t src = {.svc = source, .user = &s};
  mm_node_spec_t filt = {.svc = drop_multiples_of_3, .user = &s};
  mm_node_spec_t snk = {.svc = sink_sum, .user = &s};
  mm_farm_config_t fc = farm_of(plus_one, &s, 4, MM_SCHED_ROUND_ROBIN,
                                MM_ORDER_UNORDERED, kind);
  fc.collect = true; /* identity collector (svc NULL) */
  int rc = mm_pipeline_add_stage(p, &src) | mm_pipeline_add_stage(p, &filt) |
           mm_pipeline_add_farm(p, &fc) | mm_pipeline_add_stage(p, &snk);
  rc |= mm_pipeline_run(p);
  uint64_t want_sum = 0, want_n = 0;
  for (uint64_t v = 0; v < n; v++)
    if (v % 3) want_sum += v + 1, want_n++;
  char name[96];
  snprintf(name, sizeof name, "%s: source -> filter -> farm -> sink",
           mm_queue_kind_name(kind));
  CHECK(name, rc == 0 && s.got == want_n && s.sum == want_sum);
  mm_pipeline_destroy(p);
}

/* Farm first (its emitter is the source), then a farm with no collector as
 * the last stage, whose workers are the sinks. */
static void test_farm_first_and_last(mm_queue_kind_t kind, uint64_t n) {
  state_t s = {.n = n, .fail_at = -1};
  atomic_init(&s.xlast_work, 0);
  mm_pipeline_config_t pc = {.queue = kind};
  mm_pipeline_t *p = mm_pipeline_create(&pc);
  mm_farm_config_t first = farm_of(plus_one, &s, 2, MM_SCHED_ON_DEMAND,
                                   MM_ORDER_UNORDERED, kind);
  first.emitter = (mm_node_spec_t){.svc = source, .user = &s};
  mm_farm_config_t last = farm_of(sink_sum_atomic, &s, 3, MM_SCHED_ROUND_ROBIN,
                                  MM_ORDER_UNORDERED, kind);
  int rc = mm_pipeline_add_farm(p, &first) | mm_pipeline_add_farm(p, &last);
  rc |= mm_pipeline_run(p);
  char name[96];
  snprintf(name, sizeof name, "%s: farm -> farm without collector",
           mm_queue_kind_name(kind));
  CHECK(name, rc == 0 && atomic_load(&s.xlast_work) == n * (n + 1) / 2);
  mm_pipeline_destroy(p);
}

static void test_one_stage_and_errors(mm_queue_kind_t kind) {
  state_t s = {.n = 1000, .fail_at = -1};
  mm_pipeline_t *p = mm_pipeline_create(NULL);
  mm_node_spec_t src = {.svc = source, .user = &s};
  CHECK("one-stage pipeline", mm_pipeline_add_stage(p, &src) == 0 &&
                                  mm_pipeline_run(p) == 0 && s.next == 1000);
  CHECK("no stage added after start", mm_pipeline_add_stage(p, &src) == EINVAL);
  mm_pipeline_destroy(p);

  p = mm_pipeline_create(NULL);
  CHECK("empty pipeline: EINVAL", mm_pipeline_run(p) == EINVAL);
  mm_node_spec_t none = {0};
  CHECK("stage without svc: EINVAL", mm_pipeline_add_stage(p, &none) == EINVAL);
  mm_pipeline_destroy(p);

  state_t e = {.n = 100000, .fail_at = 500};
  mm_pipeline_config_t pc = {.queue = kind, .capacity = 8};
  p = mm_pipeline_create(&pc);
  mm_node_spec_t src2 = {.svc = source, .user = &e};
  mm_node_spec_t filt = {.svc = drop_multiples_of_3, .user = &e};
  mm_node_spec_t snk = {.svc = sink_sum, .user = &e};
  mm_farm_config_t fc = farm_of(plus_one, &e, 2, MM_SCHED_ON_DEMAND,
                                MM_ORDER_ORDERED, kind);
  mm_pipeline_add_stage(p, &src2);
  mm_pipeline_add_farm(p, &fc);
  mm_pipeline_add_stage(p, &filt);
  mm_pipeline_add_stage(p, &snk);
  char name[96];
  snprintf(name, sizeof name, "%s: an error in a middle stage stops all",
           mm_queue_kind_name(kind));
  CHECK(name, mm_pipeline_run(p) == 77 && e.next < e.n);
  mm_pipeline_destroy(p);
}

int main(int argc, char **argv) {
  double sc = test_scale(argc, argv);
  uint64_t n = (uint64_t)(30000 * sc);
  mm_queue_kind_t kinds[] = {MM_QUEUE_LOCKFREE, MM_QUEUE_MUTEX};
  for (int i = 0; i < 2; i++) {
    test_three_stages(kinds[i], MM_SCHED_ROUND_ROBIN, n);
    test_three_stages(kinds[i], MM_SCHED_ON_DEMAND, n);
    test_four_stages(kinds[i], n);
    test_farm_first_and_last(kinds[i], n);
    test_one_stage_and_errors(kinds[i]);
  }
  return check_summary("test_pipeline");
}
