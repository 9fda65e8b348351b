/* test_farm_alloc.c — allocation over queues.  The emitter allocates every
 * task with mm_farm_task_alloc (64..512 bytes); workers free half of them,
 * the collector the other half, with mm_farm_task_free.  A counting
 * allocator (task_malloc/task_free) checks that every block is freed exactly
 * once, and in MM_ALLOC_RETURN mode that every free runs on the emitter's
 * thread (the blocks went home over the return queues); in MM_ALLOC_PLAIN
 * mode frees happen where the tasks die.  Also: a farm stopped by an error
 * still frees every block exactly once (drop callback + return queues), and
 * mm_farm_task_alloc outside an emitter is refused.  Both queue kinds, round-
 * robin and on-demand, 1, 2 and 8 workers.  Not a benchmark.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mmalloc/stream.h"
#include "stream_test.h"

#define MAX_BLOCKS 200000

typedef struct block {
  uint32_t id;
  uint32_t size;
} block_t;

/* Counting allocator: one state per block id (the test's own atomics). */
static _Atomic uint32_t xallocs, xfrees, xdouble, xwrong_thread, xfree_off_emitter;
static _Atomic uint8_t xstate[MAX_BLOCKS]; /* 0 never, 1 live, 2 freed */
static uint32_t next_id;                   /* emitter thread only */
static pthread_t emitter_thread;           /* written in the emitter's init */
static _Atomic int xemitter_known;

static void *counting_malloc(size_t size) {
  block_t *b = malloc(size);
  if (!b) return NULL;
  b->id = next_id++;
  b->size = (uint32_t)size;
  atomic_store(&xstate[b->id], 1);
  atomic_fetch_add(&xallocs, 1);
  return b;
}

static void counting_free(void *p) {
  block_t *b = p;
  uint8_t live = 1;
  if (!atomic_compare_exchange_strong(&xstate[b->id], &live, 2))
    atomic_fetch_add(&xdouble, 1);
  atomic_fetch_add(&xfrees, 1);
  if (!atomic_load(&xemitter_known) || !pthread_equal(pthread_self(), emitter_thread))
    atomic_fetch_add(&xfree_off_emitter, 1);
  free(p);
}

typedef struct run {
  uint32_t ntasks, next;
  uint64_t rng;
  uint32_t fail_at; /* a worker fails on this id (UINT32_MAX: never) */
} run_t;

static int emitter_init(mm_ctx_t *ctx) {
  (void)ctx;
  emitter_thread = pthread_self();
  atomic_store(&xemitter_known, 1);
  return 0;
}

static void *emit(void *unused, mm_ctx_t *ctx) {
  (void)unused;
  run_t *r = mm_ctx_user(ctx);
  if (r->next >= r->ntasks) return MM_EOS;
  r->next++;
  size_t size = 64 + test_rand(&r->rng) % 449; /* 64..512 bytes */
  block_t *b = mm_farm_task_alloc(ctx, size);
  return b ? (void *)b : mm_ctx_fail(ctx, ENOMEM);
}

static void *work(void *p, mm_ctx_t *ctx) {
  block_t *b = p;
  run_t *r = mm_ctx_user(ctx);
  memset(b + 1, 0xab, b->size - sizeof *b); /* the worker uses the block */
  if (b->id == r->fail_at) {
    mm_farm_task_free(ctx, b); /* a failing svc still owns its task */
    return mm_ctx_fail(ctx, 55);
  }
  if (b->id & 1) {
    mm_farm_task_free(ctx, b);
    return MM_GO_ON;
  }
  return b;
}

static void *collect(void *p, mm_ctx_t *ctx) {
  mm_farm_task_free(ctx, p);
  return MM_GO_ON;
}

static void drop(void *item, void *user) {
  (void)user;
  counting_free(item); /* what a stopped farm leaves in its queues */
}

static void reset_counts(void) {
  atomic_store(&xallocs, 0);
  atomic_store(&xfrees, 0);
  atomic_store(&xdouble, 0);
  atomic_store(&xwrong_thread, 0);
  atomic_store(&xfree_off_emitter, 0);
  atomic_store(&xemitter_known, 0);
  for (uint32_t i = 0; i < MAX_BLOCKS; i++) atomic_store(&xstate[i], 0);
  next_id = 0;
}

static uint32_t live_blocks(void) {
  uint32_t live = 0;
  for (uint32_t i = 0; i < MAX_BLOCKS; i++) live += atomic_load(&xstate[i]) == 1;
  return live;
}

static void run_case(mm_queue_kind_t kind, mm_sched_t sched, unsigned n,
                     mm_alloc_mode_t mode, uint32_t ntasks, uint32_t fail_at) {
  reset_counts();
  run_t r = {.ntasks = ntasks, .rng = 42 + n, .fail_at = fail_at};
  mm_farm_config_t cfg;
  mm_farm_config_init(&cfg);
  cfg.nworkers = n;
  cfg.emitter = (mm_node_spec_t){.svc = emit, .user = &r, .init = emitter_init};
  cfg.worker = (mm_node_spec_t){.svc = work, .user = &r};
  cfg.collector = (mm_node_spec_t){.svc = collect, .user = &r};
  cfg.collect = true;
  cfg.sched = sched;
  cfg.queue = kind;
  cfg.capacity = 64;
  cfg.alloc = mode;
  cfg.task_malloc = counting_malloc;
  cfg.task_free = counting_free;
  cfg.drop = drop;
  mm_farm_t *f = mm_farm_create(&cfg);
  int rc = mm_farm_run(f);
  mm_farm_stats_t st;
  mm_farm_stats(f, &st);
  mm_farm_destroy(f);

  char name[128];
  snprintf(name, sizeof name, "%s %s n=%u %s%s", mm_queue_kind_name(kind),
           sched ? "on-demand" : "rr", n, mode == MM_ALLOC_RETURN ? "return" : "plain",
           fail_at != UINT32_MAX ? " stopped by an error" : "");
  uint32_t allocs = atomic_load(&xallocs), frees = atomic_load(&xfrees);
  bool ok = allocs == frees && atomic_load(&xdouble) == 0 && live_blocks() == 0;
  if (fail_at == UINT32_MAX) {
    ok = ok && rc == 0 && allocs == ntasks && st.blocks_allocated == ntasks;
    if (mode == MM_ALLOC_RETURN)
      ok = ok && atomic_load(&xfree_off_emitter) == 0 &&
           st.blocks_returned == ntasks && st.blocks_freed == 0;
    else
      ok = ok && st.blocks_freed == ntasks && st.blocks_returned == 0 &&
           atomic_load(&xfree_off_emitter) > 0;
  } else {
    ok = ok && rc == 55;
  }
  if (!ok)
    fprintf(stderr,
            "  %s: rc %d allocs %u frees %u double %u live %u off-emitter %u "
            "returned %llu freed %llu\n",
            name, rc, allocs, frees, atomic_load(&xdouble), live_blocks(),
            atomic_load(&xfree_off_emitter), (unsigned long long)st.blocks_returned,
            (unsigned long long)st.blocks_freed);
  CHECK(name, ok);
}

static void *bad_alloc_worker(void *p, mm_ctx_t *ctx) {
  errno = 0;
  void *q = mm_farm_task_alloc(ctx, 16);
  if (q || errno != EINVAL) return mm_ctx_fail(ctx, 66);
  return p;
}

static void *one_task(void *unused, mm_ctx_t *ctx) {
  (void)unused;
  run_t *r = mm_ctx_user(ctx);
  return r->next++ ? MM_EOS : (void *)&r->next;
}

static void test_alloc_outside_emitter(void) {
  run_t r = {0};
  mm_farm_config_t cfg;
  mm_farm_config_init(&cfg);
  cfg.nworkers = 1;
  cfg.emitter = (mm_node_spec_t){.svc = one_task, .user = &r};
  cfg.worker = (mm_node_spec_t){.svc = bad_alloc_worker};
  mm_farm_t *f = mm_farm_create(&cfg);
  CHECK("mm_farm_task_alloc outside the emitter: EINVAL", mm_farm_run(f) == 0);
  mm_farm_destroy(f);
  errno = 0;
  CHECK("mm_farm_task_alloc(NULL): EINVAL", !mm_farm_task_alloc(NULL, 8) && errno == EINVAL);
  mm_farm_task_free(NULL, malloc(8)); /* outside a farm: plain free */
  mm_farm_task_free(NULL, NULL);
  CHECK("default mode is a real mode", mm_farm_alloc_default() == MM_ALLOC_PLAIN ||
                                           mm_farm_alloc_default() == MM_ALLOC_RETURN);
}

int main(int argc, char **argv) {
  double s = test_scale(argc, argv);
  uint32_t ntasks = (uint32_t)(40000 * s);
  if (ntasks > MAX_BLOCKS) ntasks = MAX_BLOCKS;
  static const unsigned ns[] = {1, 2, 8};
  mm_queue_kind_t kinds[] = {MM_QUEUE_LOCKFREE, MM_QUEUE_MUTEX};
  for (int k = 0; k < 2; k++)
    for (int sched = 0; sched < 2; sched++)
      for (int ni = 0; ni < 3; ni++)
        for (int mode = MM_ALLOC_PLAIN; mode <= MM_ALLOC_RETURN; mode++) {
          run_case(kinds[k], sched, ns[ni], mode, ntasks, UINT32_MAX);
          run_case(kinds[k], sched, ns[ni], mode, ntasks, ntasks / 3);
        }
  test_alloc_outside_emitter();
  return check_summary("test_farm_alloc");
}
