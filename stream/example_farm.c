/* example_farm.c — the farm example of stream/README.md, compiled and run
 * by ctest (stream_example) so that the documented code always works.
 *
 * An ordered, on-demand farm: the emitter allocates one task per number,
 * workers square it, the collector receives results in emission order,
 * sums them and frees each task, which travels back to the emitter's
 * thread over a return queue (MM_ALLOC_RETURN).
 *
 *   usage: example_farm [workers [lockfree|mutex]]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <mmalloc/stream.h>

typedef struct task {
  long n, square;
} task_t;

typedef struct source {
  long next, last;
} source_t;

/* Emitter: a source (nothing feeds it, so task == NULL); one task per call. */
static void *emit(void *unused, mm_ctx_t *ctx) {
  (void)unused;
  source_t *src = mm_ctx_user(ctx);
  if (src->next > src->last) return MM_EOS; /* end of stream */
  task_t *t = mm_farm_task_alloc(ctx, sizeof *t);
  if (!t) return mm_ctx_fail(ctx, ENOMEM); /* stops the farm; run returns ENOMEM */
  t->n = src->next++;
  return t; /* dispatched to a worker */
}

/* Workers: nworkers threads, each calling this once per task. */
static void *work(void *p, mm_ctx_t *ctx) {
  (void)ctx;
  task_t *t = p;
  t->square = t->n * t->n;
  return t; /* to the collector */
}

/* Collector: one thread; with MM_ORDER_ORDERED, tasks arrive in emission order. */
static void *collect(void *p, mm_ctx_t *ctx) {
  long *sum = mm_ctx_user(ctx);
  task_t *t = p;
  *sum += t->square;
  if (t->n % 25000 == 0) printf("%ld^2 = %ld\n", t->n, t->square);
  mm_farm_task_free(ctx, t); /* goes home to the emitter's heap */
  return MM_GO_ON;           /* nothing to pass on */
}

int main(int argc, char **argv) {
  source_t src = {1, 100000};
  long sum = 0;

  mm_farm_config_t cfg;
  mm_farm_config_init(&cfg); /* zero = defaults */
  cfg.nworkers = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
  cfg.emitter = (mm_node_spec_t){.svc = emit, .user = &src};
  cfg.worker = (mm_node_spec_t){.svc = work};
  cfg.collector = (mm_node_spec_t){.svc = collect, .user = &sum};
  cfg.collect = true;
  cfg.sched = MM_SCHED_ON_DEMAND; /* or MM_SCHED_ROUND_ROBIN */
  cfg.order = MM_ORDER_ORDERED;   /* or MM_ORDER_UNORDERED */
  cfg.alloc = MM_ALLOC_RETURN;    /* or MM_ALLOC_PLAIN */
  if (argc > 2 && mm_queue_kind_parse(argv[2], &cfg.queue) != 0) {
    fprintf(stderr, "queue kind: lockfree or mutex\n");
    return 2;
  }

  mm_farm_t *farm = mm_farm_create(&cfg);
  if (!farm) {
    perror("mm_farm_create");
    return 1;
  }
  int rc = mm_farm_run(farm); /* start every thread, wait for the end */
  mm_farm_stats_t st;
  mm_farm_stats(farm, &st);
  mm_farm_destroy(farm);
  if (rc != 0) {
    fprintf(stderr, "farm stopped: error %d\n", rc);
    return 1;
  }
  printf("sum of squares = %ld (%llu tasks, %llu blocks freed at home)\n", sum,
         (unsigned long long)st.tasks_emitted, (unsigned long long)st.blocks_returned);
  return 0;
}
