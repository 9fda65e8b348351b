/* farm.c — the farm: emitter -> N workers -> optional collector, and
 * allocation over queues (FastFlow's allocator idea).
 *
 * Layer: stream, top (with network.c, which owns threads, stop and
 * pipelines; see network.h for the glossary).
 *
 * Topology.  Every arrow is an mm_queue_t with one producer and one consumer:
 *
 *              to_worker[i]              from_worker[i]
 *   emitter ──────────────► worker i ─────────────────► collector
 *      │ ▲                     │                            │ ▲
 *      │ └──── ret[i] ◄────────┘  (MM_ALLOC_RETURN only)    │ │
 *      │ └──── ret[n] ◄─────────────────────────────────────┘ │
 *      └──────────────── log (ordered + on-demand only) ──────┘
 *
 * Scheduling (emitter).
 *   round-robin: task k goes to worker (k mod n); the emitter waits for that
 *     worker's queue.  On-demand: the emitter scans the workers' short queues
 *     (demand_depth slots) from the one after the last used and takes the
 *     first with room, so a slow worker gets fewer tasks (back-pressure).
 *
 * Collection (collector).
 *   unordered: scan the workers' queues round-robin, take what is there.
 *   ordered, round-robin: take one item from each worker in the same
 *     rotation as the emitter (each worker returns exactly one item per task,
 *     NODE_SKIP standing for "no output"), so outputs come in task order.
 *   ordered, on-demand: the emitter logs the worker index of every task on
 *     the `log` queue; the collector reads the log and takes the next item
 *     from that worker.  Each worker's queue is FIFO and holds one item per
 *     task, so this restores task order with no sequence numbers and no
 *     reorder buffer.  No deadlock with a bounded log: the task at the head
 *     of the log is already at its worker, whose output is either coming or
 *     at the front of a queue the collector is about to pop.
 *   End: the emitter pushes MM_EOS to every worker (and the log) after its
 *     last task; a worker forwards it after its last output; the collector
 *     ends when it has seen EOS from every worker.  In ordered rotation the
 *     first EOS met is followed by EOS from every other worker in turn
 *     (worker j holds exactly the tasks j, j+n, ...).
 *
 * Allocation over queues (MM_ALLOC_RETURN).
 *   The emitter allocates tasks (mm_farm_task_alloc) on its own thread.  A
 *   worker or the collector that frees one (mm_farm_task_free) appends it to
 *   a private buffer; a full buffer (FARM_RETURN_BATCH blocks) goes onto the
 *   node's own unbounded SPSC return queue with one push_batch, i.e. one
 *   release store, and the buffer is also flushed whenever the node is about
 *   to wait for input, and at exit.  The emitter drains one return queue per
 *   allocation (rotating), and all of them whenever it waits, freeing the
 *   blocks with task_free on its own thread: with mmalloc a local free, no
 *   atomic operation per free on either side.  At exit a releasing node
 *   stores xretired = 1 (release) after its last push; the emitter, after
 *   its EOS, drains each return queue until it has seen xretired (acquire)
 *   and then found the queue empty, so every block goes home before the
 *   emitter's thread ends.  After a stop, whatever is left is freed by the
 *   thread that waits (farm_settle).
 *   MM_ALLOC_PLAIN: task_free on the spot (a remote free in any allocator).
 *
 * Invariants
 *   the emitter's private state (em) is touched by the emitter thread only,
 *   the collector's (co) by the collector only, until the join;
 *   a worker with ordered = true sends exactly one item per task;
 *   tasks dispatched == sum over workers of tasks taken, after an end by EOS;
 *   blocks_allocated == blocks_returned + blocks_freed + (blocks the user
 *   freed with plain free() or still holds).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "network.h"
#include "uspsc.h"

/* What MM_ALLOC_DEFAULT means.  Return channels won over plain remote frees
 * on every allocator measured (bench/stream/run.py, alloc workload; results
 * in stream/README.md): geometric-mean speedup 1.04 (tbbmalloc) to 1.45
 * (jemalloc), 1.07 on mmalloc as of this writing.  Override at configure
 * time with -DMM_STREAM_ALLOC_DEFAULT=MM_ALLOC_PLAIN. */
#ifndef MM_STREAM_ALLOC_DEFAULT
#define MM_STREAM_ALLOC_DEFAULT MM_ALLOC_RETURN
#endif

/* Return queues: rings of this many slots, and this many rings cached. */
#define FARM_RETURN_RING 512
#define FARM_RETURN_CACHE 4
/* Blocks the emitter takes from one return queue per pop_batch. */
#define FARM_DRAIN_BATCH 64

struct farm {
  /* const after build */
  mm_farm_config_t cfg; /* defaults resolved */
  unsigned n;
  bool collect;     /* a collector node exists */
  bool ordered;     /* ordered collection (implies collect) */
  mm_ctx_t *emitter, *collector, **workers;
  mm_queue_t **to_worker, **from_worker, *log;
  mm_uspsc_t **ret; /* MM_ALLOC_RETURN: n (+1 collector) return queues */
  mm_ctx_t **ret_owner; /* the node pushing into ret[c] */
  unsigned nret;
  uint64_t settled; /* blocks farm_settle freed after the join */
  /* emitter's private state */
  struct {
    /* RR: next worker; OD: where the scan starts */
    _Alignas(MMS_CACHE_LINE) unsigned next;
    unsigned drain_next; /* next return queue to drain */
    uint64_t dispatched;
  } em;
  /* collector's private state */
  struct {
    _Alignas(MMS_CACHE_LINE) bool *eos_seen; /* per worker */
  } co;
};

_Static_assert(offsetof(struct farm, em) % MMS_CACHE_LINE == 0 &&
                   offsetof(struct farm, co) - offsetof(struct farm, em) >=
                       MMS_CACHE_LINE,
               "emitter and collector state on lines of their own");

/* ---- build ---------------------------------------------------------------- */

static int farm_resolve(mm_farm_config_t *c, bool has_input) {
  if (!c->worker.svc || (!has_input && !c->emitter.svc)) return EINVAL;
  if (c->sched != MM_SCHED_ROUND_ROBIN && c->sched != MM_SCHED_ON_DEMAND)
    return EINVAL;
  if (c->order != MM_ORDER_UNORDERED && c->order != MM_ORDER_ORDERED)
    return EINVAL;
  if (c->queue != MM_QUEUE_LOCKFREE && c->queue != MM_QUEUE_MUTEX) return EINVAL;
  if (c->alloc == MM_ALLOC_DEFAULT) c->alloc = mm_farm_alloc_default();
  if (c->alloc != MM_ALLOC_PLAIN && c->alloc != MM_ALLOC_RETURN) return EINVAL;
  if (c->nworkers == 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    c->nworkers = cpus > 0 ? (unsigned)cpus : 1;
  }
  if (c->nworkers > 4096) return EINVAL;
  if (c->capacity == 0) c->capacity = 512;
  if (c->demand_depth == 0) c->demand_depth = 4;
  if (!c->task_malloc) c->task_malloc = malloc;
  if (!c->task_free) c->task_free = free;
  return 0;
}

struct farm *farm_build(struct net *net, const mm_farm_config_t *cfg,
                        bool has_input, bool has_output, mm_ctx_t **entry,
                        mm_ctx_t **exit) {
  mm_farm_config_t c = *cfg;
  int rc = farm_resolve(&c, has_input);
  if (rc != 0) {
    errno = rc;
    return NULL;
  }
  void *mem = NULL;
  if (posix_memalign(&mem, MMS_CACHE_LINE, sizeof(struct farm)) != 0) {
    errno = ENOMEM;
    return NULL;
  }
  struct farm *f = mem;
  memset(f, 0, sizeof *f);
  if (net_add_farm(net, f) != 0) {
    free(f);
    errno = ENOMEM;
    return NULL;
  }
  f->cfg = c;
  unsigned n = f->n = c.nworkers;
  f->collect = c.collect || has_output;
  f->ordered = f->collect && c.order == MM_ORDER_ORDERED;
  f->nret = c.alloc == MM_ALLOC_RETURN ? n + (f->collect ? 1 : 0) : 0;
  f->workers = calloc(n, sizeof *f->workers);
  f->to_worker = calloc(n, sizeof *f->to_worker);
  f->from_worker = calloc(n, sizeof *f->from_worker);
  f->co.eos_seen = calloc(n, sizeof *f->co.eos_seen);
  f->ret = calloc(n + 1, sizeof *f->ret);
  f->ret_owner = calloc(n + 1, sizeof *f->ret_owner);
  if (!f->workers || !f->to_worker || !f->from_worker || !f->co.eos_seen ||
      !f->ret || !f->ret_owner)
    goto nomem;

  if (!(f->emitter = net_add_node(net, NODE_EMITTER))) goto nomem;
  f->emitter->spec = c.emitter;
  for (unsigned i = 0; i < n; i++) {
    mm_ctx_t *w = f->workers[i] = net_add_node(net, NODE_WORKER);
    if (!w) goto nomem;
    w->spec = c.worker;
    w->index = i;
    w->ordered = f->ordered;
  }
  if (f->collect) {
    if (!(f->collector = net_add_node(net, NODE_COLLECTOR))) goto nomem;
    f->collector->spec = c.collector;
  }
  size_t in_cap = c.sched == MM_SCHED_ON_DEMAND && c.demand_depth < c.capacity
                      ? c.demand_depth
                      : c.capacity;
  for (unsigned i = 0; i < n; i++) {
    mm_ctx_t *w = f->workers[i];
    w->in = f->to_worker[i] = net_add_queue(net, c.queue, in_cap, f->emitter, w,
                                            c.drop, c.drop_user);
    if (!w->in) goto nomem;
    if (f->collect) {
      w->out = f->from_worker[i] = net_add_queue(net, c.queue, c.capacity, w,
                                                 f->collector, c.drop, c.drop_user);
      if (!w->out) goto nomem;
    }
  }
  if (f->ordered && c.sched == MM_SCHED_ON_DEMAND) {
    /* Room for every task that can be between emitter and collector. */
    size_t log_cap = (size_t)n * (in_cap + c.capacity + 2);
    f->log = net_add_queue(net, c.queue, log_cap, f->emitter, f->collector,
                           NULL, NULL);
    if (!f->log) goto nomem;
    f->log->internal = true;
  }
  for (unsigned i = 0; i < f->nret; i++) {
    f->ret[i] = mm_uspsc_create(FARM_RETURN_RING, FARM_RETURN_CACHE);
    if (!f->ret[i]) goto nomem;
    f->ret_owner[i] = i < n ? f->workers[i] : f->collector;
    f->ret_owner[i]->ret = f->ret[i];
  }
  mm_ctx_t *all[] = {f->emitter, f->collector};
  for (unsigned i = 0; i < 2; i++) {
    if (all[i]) all[i]->farm = f, all[i]->count = n;
  }
  for (unsigned i = 0; i < n; i++) {
    f->workers[i]->farm = f;
    f->workers[i]->count = n;
  }
  *entry = f->emitter;
  *exit = f->collector;
  return f;

nomem:
  errno = ENOMEM;
  return NULL; /* the net frees f and everything already added */
}

void farm_free(struct farm *f) {
  if (!f) return;
  for (unsigned i = 0; f->ret && i < f->nret; i++) mm_uspsc_destroy(f->ret[i]);
  free(f->workers);
  free(f->to_worker);
  free(f->from_worker);
  free(f->co.eos_seen);
  free(f->ret);
  free(f->ret_owner);
  free(f);
}

/* ---- allocation over queues --------------------------------------------- */

/* Emitter: free what return queues hold, visiting `channels` of them. */
static void emitter_drain(mm_ctx_t *ctx, unsigned channels) {
  struct farm *f = ctx->farm;
  void *buf[FARM_DRAIN_BATCH];
  for (unsigned k = 0; k < channels && f->nret; k++) {
    unsigned c = f->em.drain_next;
    f->em.drain_next = c + 1 == f->nret ? 0 : c + 1;
    size_t got = mm_uspsc_pop_batch(f->ret[c], buf, FARM_DRAIN_BATCH);
    for (size_t i = 0; i < got; i++) f->cfg.task_free(buf[i]);
    ctx->returned += got;
  }
}

/* Worker or collector: send the buffered blocks home. */
static void node_flush_returns(mm_ctx_t *ctx) {
  if (ctx->nret == 0) return;
  size_t k = mm_uspsc_push_batch(ctx->ret, ctx->retbuf, ctx->nret);
  for (size_t i = k; i < ctx->nret; i++) { /* no memory for a ring */
    ctx->farm->cfg.task_free(ctx->retbuf[i]);
    ctx->freed++;
  }
  ctx->nret = 0;
  waiter_notify(&ctx->farm->emitter->waiter);
}

void *mm_farm_task_alloc(mm_ctx_t *ctx, size_t size) {
  if (!ctx || ctx->role != NODE_EMITTER) {
    errno = EINVAL;
    return NULL;
  }
  struct farm *f = ctx->farm;
  if (f->nret) emitter_drain(ctx, 1);
  void *p = f->cfg.task_malloc(size ? size : 1);
  if (!p) {
    errno = ENOMEM;
    return NULL;
  }
  ctx->allocs++;
  return p;
}

void mm_farm_task_free(mm_ctx_t *ctx, void *task) {
  if (!task) return;
  struct farm *f = ctx ? ctx->farm : NULL;
  if (!f) {
    free(task);
    return;
  }
  if (ctx->ret) {
    ctx->retbuf[ctx->nret++] = task;
    if (ctx->nret == FARM_RETURN_BATCH) node_flush_returns(ctx);
    return;
  }
  f->cfg.task_free(task);
  ctx->freed++;
}

mm_alloc_mode_t mm_farm_alloc_default(void) { return MM_STREAM_ALLOC_DEFAULT; }

/* ---- emitter ------------------------------------------------------------ */

typedef struct wait_arg {
  mm_ctx_t *ctx;
  mm_queue_t *q;
} wait_arg_t;

static bool ready_space(void *arg) {
  wait_arg_t *a = arg;
  return net_stopping(a->ctx->net) || queue_has_space(a->q);
}

static bool ready_any_space(void *arg) {
  mm_ctx_t *ctx = arg;
  struct farm *f = ctx->farm;
  if (net_stopping(ctx->net)) return true;
  for (unsigned i = 0; i < f->n; i++)
    if (queue_has_space(f->to_worker[i])) return true;
  return false;
}

/* Emitter: push into one queue, draining return queues while it waits. */
static int emitter_push(mm_ctx_t *ctx, mm_queue_t *q, void *item) {
  if (queue_try_push(q, item)) return 0;
  struct farm *f = ctx->farm;
  emitter_drain(ctx, f->nret);
  if (q->mx) return queue_push_wait(q, item);
  backoff_t b = {0};
  wait_arg_t a = {ctx, q};
  for (;;) {
    if (net_stopping(ctx->net)) return ECANCELED;
    backoff_wait(&b, &ctx->waiter, ready_space, &a);
    if (queue_try_push(q, item)) return 0;
    emitter_drain(ctx, f->nret);
  }
}

int farm_dispatch(mm_ctx_t *ctx, void *task) {
  struct farm *f = ctx->farm;
  unsigned n = f->n, w = f->em.next;
  if (f->cfg.sched == MM_SCHED_ROUND_ROBIN) {
    if (emitter_push(ctx, f->to_worker[w], task) != 0) {
      ctx->held_queue = f->to_worker[w];
      return ECANCELED;
    }
  } else {
    backoff_t b = {0};
    for (;;) {
      unsigned i;
      for (i = 0; i < n; i++, w = w + 1 == n ? 0 : w + 1)
        if (queue_try_push(f->to_worker[w], task)) break;
      if (i < n) break;
      if (net_stopping(ctx->net)) {
        ctx->held_queue = f->to_worker[0];
        return ECANCELED;
      }
      emitter_drain(ctx, f->nret);
      backoff_wait(&b, &ctx->waiter, ready_any_space, ctx);
    }
  }
  f->em.next = w + 1 == n ? 0 : w + 1;
  f->em.dispatched++;
  /* The task is out; a refused log entry only means we are stopping. */
  if (f->log) emitter_push(ctx, f->log, (void *)(uintptr_t)w);
  return 0;
}

bool farm_emitter_run(mm_ctx_t *ctx) {
  struct farm *f = ctx->farm;
  for (;;) {
    if (net_stopping(ctx->net)) return false;
    void *r;
    if (ctx->in) {
      void *t;
      if (!queue_try_pop(ctx->in, &t)) {
        emitter_drain(ctx, f->nret);
        if (queue_pop_wait(ctx->in, &t) != 0) return false;
      }
      if (t == MM_EOS) return true;
      ctx->processed++;
      r = ctx->spec.svc ? ctx->spec.svc(t, ctx) : t;
    } else {
      r = ctx->spec.svc(NULL, ctx);
      if (r == MM_EOS) return true;
    }
    if (r == NODE_FAIL) return false;
    if (!node_output(ctx, r)) return false;
  }
}

static bool ready_returns(void *arg) {
  mm_ctx_t *ctx = arg;
  struct farm *f = ctx->farm;
  if (net_stopping(ctx->net)) return true;
  for (unsigned c = 0; c < f->nret; c++) {
    if (f->ret[c] && (uspsc_has_item(f->ret[c]) ||
                      mms_atomic_load_acquire(&f->ret_owner[c]->xretired)))
      return true;
  }
  return false;
}

/* Emitter, after its EOS: take every block home.  Queue c is finished once
 * its owner has retired (acquire: all its pushes are visible) and it has
 * then been drained. */
static void emitter_collect_returns(mm_ctx_t *ctx) {
  struct farm *f = ctx->farm;
  unsigned open = f->nret;
  bool done[f->nret + 1];
  memset(done, 0, sizeof done);
  backoff_t b = {0};
  void *buf[FARM_DRAIN_BATCH];
  while (open && !net_stopping(ctx->net)) {
    bool progress = false;
    for (unsigned c = 0; c < f->nret; c++) {
      if (done[c]) continue;
      bool retired = mms_atomic_load_acquire(&f->ret_owner[c]->xretired) != 0;
      size_t got;
      while ((got = mm_uspsc_pop_batch(f->ret[c], buf, FARM_DRAIN_BATCH))) {
        for (size_t i = 0; i < got; i++) f->cfg.task_free(buf[i]);
        ctx->returned += got;
        progress = true;
      }
      if (retired) {
        done[c] = true;
        open--;
      }
    }
    if (progress) b.round = 0;
    else if (open) backoff_wait(&b, &ctx->waiter, ready_returns, ctx);
  }
}

/* ---- worker ------------------------------------------------------------- */

bool farm_worker_run(mm_ctx_t *ctx) {
  for (;;) {
    if (net_stopping(ctx->net)) return false;
    void *t;
    if (!queue_try_pop(ctx->in, &t)) {
      node_flush_returns(ctx);
      if (queue_pop_wait(ctx->in, &t) != 0) return false;
    }
    if (t == MM_EOS) return true;
    ctx->processed++;
    void *r = ctx->spec.svc(t, ctx);
    if (r == NODE_FAIL) return false;
    if (!node_output(ctx, r)) return false;
  }
}

/* ---- collector ---------------------------------------------------------- */

static bool collector_deliver(mm_ctx_t *ctx, void *item) {
  ctx->processed++;
  void *r = ctx->spec.svc ? ctx->spec.svc(item, ctx) : item;
  if (r == NODE_FAIL) return false;
  return node_output(ctx, r);
}

/* Collector: one item from q, waiting if needed.  0 or ECANCELED. */
static int collector_pop(mm_ctx_t *ctx, mm_queue_t *q, void **out) {
  if (queue_try_pop(q, out)) return 0;
  node_flush_returns(ctx);
  if (net_stopping(ctx->net)) return ECANCELED;
  return queue_pop_wait(q, out);
}

/* Any item that is not EOS at this point breaks the farm's own protocol. */
static bool collector_protocol_error(mm_ctx_t *ctx, void *item) {
  if (!item_reserved(item)) ctx->held = item, ctx->held_queue = ctx->farm->from_worker[0];
  net_fail(ctx->net, EPROTO);
  return false;
}

/* Ordered, round-robin: follow the emitter's rotation. */
static bool collector_run_rotation(mm_ctx_t *ctx) {
  struct farm *f = ctx->farm;
  unsigned n = f->n, open = n, w = 0;
  while (open) {
    if (net_stopping(ctx->net)) return false;
    unsigned k = w;
    w = w + 1 == n ? 0 : w + 1;
    if (f->co.eos_seen[k]) continue;
    void *it;
    if (collector_pop(ctx, f->from_worker[k], &it) != 0) return false;
    if (it == MM_EOS) {
      f->co.eos_seen[k] = true;
      open--;
    } else if (open < n) {
      return collector_protocol_error(ctx, it);
    } else if (it != NODE_SKIP && !collector_deliver(ctx, it)) {
      return false;
    }
  }
  return true;
}

/* Ordered, on-demand: follow the emitter's log. */
static bool collector_run_log(mm_ctx_t *ctx) {
  struct farm *f = ctx->farm;
  for (;;) {
    if (net_stopping(ctx->net)) return false;
    void *x, *it;
    if (collector_pop(ctx, f->log, &x) != 0) return false;
    if (x == MM_EOS) break;
    uintptr_t w = (uintptr_t)x;
    if (collector_pop(ctx, f->from_worker[w], &it) != 0) return false;
    if (it == MM_EOS) return collector_protocol_error(ctx, it);
    if (it != NODE_SKIP && !collector_deliver(ctx, it)) return false;
  }
  for (unsigned w = 0; w < f->n; w++) {
    void *it;
    if (collector_pop(ctx, f->from_worker[w], &it) != 0) return false;
    if (it != MM_EOS) return collector_protocol_error(ctx, it);
  }
  return true;
}

static bool ready_any_item(void *arg) {
  mm_ctx_t *ctx = arg;
  struct farm *f = ctx->farm;
  if (net_stopping(ctx->net)) return true;
  for (unsigned i = 0; i < f->n; i++)
    if (!f->co.eos_seen[i] && queue_has_item(f->from_worker[i])) return true;
  return false;
}

/* Unordered: whatever comes first, scanning fairly. */
static bool collector_run_any(mm_ctx_t *ctx) {
  struct farm *f = ctx->farm;
  unsigned n = f->n, open = n, w = 0;
  backoff_t b = {0};
  while (open) {
    if (net_stopping(ctx->net)) return false;
    void *it = NULL;
    unsigned i, k = w;
    for (i = 0; i < n; i++, k = k + 1 == n ? 0 : k + 1)
      if (!f->co.eos_seen[k] && queue_try_pop(f->from_worker[k], &it)) break;
    if (i == n) {
      node_flush_returns(ctx);
      backoff_wait(&b, &ctx->waiter, ready_any_item, ctx);
      continue;
    }
    b.round = 0;
    w = k + 1 == n ? 0 : k + 1;
    if (it == MM_EOS) {
      f->co.eos_seen[k] = true;
      open--;
    } else if (it != NODE_SKIP && !collector_deliver(ctx, it)) {
      return false;
    }
  }
  return true;
}

bool farm_collector_run(mm_ctx_t *ctx) {
  struct farm *f = ctx->farm;
  if (!f->ordered) return collector_run_any(ctx);
  if (f->log) return collector_run_log(ctx);
  return collector_run_rotation(ctx);
}

/* ---- exits, settling, statistics ---------------------------------------- */

void farm_node_exit(mm_ctx_t *ctx, bool eos) {
  struct farm *f = ctx->farm;
  if (ctx->role == NODE_EMITTER) {
    if (eos) {
      for (unsigned i = 0; i < f->n; i++)
        if (emitter_push(ctx, f->to_worker[i], MM_EOS) != 0) return;
      if (f->log && emitter_push(ctx, f->log, MM_EOS) != 0) return;
      emitter_collect_returns(ctx);
    }
    return;
  }
  if (eos && ctx->out) node_push(ctx, ctx->out, MM_EOS);
  if (ctx->ret) {
    node_flush_returns(ctx);
    mms_atomic_store_release(&ctx->xretired, 1);
    waiter_notify(&f->emitter->waiter);
  }
}

void farm_settle(struct farm *f) {
  void *buf[FARM_DRAIN_BATCH];
  for (unsigned c = 0; c < f->nret; c++) {
    size_t got;
    while ((got = mm_uspsc_pop_batch(f->ret[c], buf, FARM_DRAIN_BATCH))) {
      for (size_t i = 0; i < got; i++) f->cfg.task_free(buf[i]);
      f->settled += got;
    }
  }
}

void farm_stats(const struct farm *f, mm_farm_stats_t *out) {
  out->tasks_emitted = f->em.dispatched;
  out->tasks_collected = f->collector ? f->collector->processed : 0;
  out->blocks_allocated = f->emitter->allocs;
  out->blocks_returned = f->emitter->returned + f->settled;
  uint64_t freed = f->emitter->freed, parks = f->emitter->waiter.parks;
  for (unsigned i = 0; i < f->n; i++) {
    freed += f->workers[i]->freed;
    parks += f->workers[i]->waiter.parks + queue_cond_waits(f->to_worker[i]);
    if (f->from_worker[i]) parks += queue_cond_waits(f->from_worker[i]);
  }
  if (f->collector) {
    freed += f->collector->freed;
    parks += f->collector->waiter.parks;
  }
  if (f->log) parks += queue_cond_waits(f->log);
  out->blocks_freed = freed;
  out->parks = parks;
}

uint64_t farm_worker_tasks(const struct farm *f, unsigned i) {
  return i < f->n ? f->workers[i]->processed : 0;
}
