/* network.c — streaming networks: building, starting, stopping and ending
 * them; pipeline stages; the mm_pipeline_* and mm_farm_* lifecycles and the
 * mm_ctx_* calls.
 *
 * Layer: stream, top (with farm.c).  Glossary and invariants: network.h.
 *
 * Life of a network:
 *   build   (create/add, single-threaded) nodes and edges are allocated and
 *           wired; nothing runs.  A farm alone is built at mm_farm_create,
 *           a pipeline at start.
 *   start   one pthread per node, running node_main:
 *             init hook -> role loop -> end hook -> forward EOS / settle.
 *   end     the source returns MM_EOS; each node forwards EOS on its output
 *           after its last item and exits; wait joins every thread.
 *   stop    the first failure (mm_ctx_fail, a failing init, a refused
 *           sentinel, cancel) runs net_fail: records the code (the only
 *           RMW, a CAS on xerror), sets xstop (release), closes every edge
 *           and wakes every node.  Nodes check xstop before each item and
 *           every blocking edge operation returns ECANCELED once closed, so
 *           every thread exits after at most the svc call it is in.
 *   wait    joins; after a stop, gives every item still in an edge, or held
 *           by a node, to its drop callback (here, in the joining thread:
 *           pthread_join ordered every node's writes before these reads);
 *           frees what return channels still carry; returns the first code.
 *
 * Why xstop is read relaxed: it carries no data; what a stopping node must
 * not miss is the wake-up, and close + waiter_wake deliver that.
 */
#define _GNU_SOURCE
#include "network.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- building ----------------------------------------------------------- */

static int grow_array(void *arrayp, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return 0;
  size_t ncap = *cap ? *cap * 2 : 8;
  void *p = realloc(*(void **)arrayp, ncap * elem);
  if (!p) return ENOMEM;
  *(void **)arrayp = p;
  *cap = ncap;
  return 0;
}

mm_ctx_t *net_add_node(struct net *n, node_role_t role) {
  if (grow_array(&n->nodes, &n->cap_nodes, n->nnodes, sizeof(mm_ctx_t *)))
    return NULL;
  void *mem = NULL;
  if (posix_memalign(&mem, MMS_CACHE_LINE, sizeof(mm_ctx_t)) != 0) return NULL;
  mm_ctx_t *ctx = mem;
  memset(ctx, 0, sizeof *ctx);
  waiter_init(&ctx->waiter);
  ctx->net = n;
  ctx->role = role;
  ctx->count = 1;
  n->nodes[n->nnodes++] = ctx;
  return ctx;
}

mm_queue_t *net_add_queue(struct net *n, mm_queue_kind_t kind, size_t capacity,
                          mm_ctx_t *producer, mm_ctx_t *consumer,
                          void (*drop)(void *, void *), void *drop_user) {
  if (grow_array(&n->queues, &n->cap_queues, n->nqueues, sizeof(mm_queue_t *)))
    return NULL;
  mm_queue_t *q = queue_new(kind, capacity);
  if (!q) return NULL;
  q->wprod = &producer->waiter;
  q->wcons = &consumer->waiter;
  q->drop = drop;
  q->drop_user = drop_user;
  n->queues[n->nqueues++] = q;
  return q;
}

int net_add_farm(struct net *n, struct farm *f) {
  if (grow_array(&n->farms, &n->cap_farms, n->nfarms, sizeof(struct farm *)))
    return ENOMEM;
  n->farms[n->nfarms++] = f;
  return 0;
}

static void net_init(struct net *n) {
  memset(n, 0, sizeof *n);
  mms_atomic_store_relaxed(&n->xstop, 0);
  mms_atomic_store_relaxed(&n->xerror, 0);
}

/* Frees every node, edge and farm; no thread may be running. */
static void net_clear(struct net *n) {
  for (size_t i = 0; i < n->nfarms; i++) farm_free(n->farms[i]);
  for (size_t i = 0; i < n->nqueues; i++) mm_queue_destroy(n->queues[i]);
  for (size_t i = 0; i < n->nnodes; i++) free(n->nodes[i]);
  free(n->farms);
  free(n->queues);
  free(n->nodes);
  net_init(n);
}

/* ---- stopping ----------------------------------------------------------- */

void net_fail(struct net *n, int code) {
  int expected = 0;
  if (code == 0) code = ECANCELED;
  mms_atomic_cas_strong_acq_rel(&n->xerror, &expected, code);
  mms_atomic_store_release(&n->xstop, 1);
  for (size_t i = 0; i < n->nqueues; i++) mm_queue_close(n->queues[i]);
  for (size_t i = 0; i < n->nnodes; i++) waiter_wake(&n->nodes[i]->waiter);
}

/* ---- passing items on --------------------------------------------------- */

int node_push(mm_ctx_t *ctx, mm_queue_t *q, void *item) {
  int rc = queue_push_wait(q, item);
  if (rc != 0 && !item_reserved(item)) {
    ctx->held = item;
    ctx->held_queue = q;
  }
  return rc;
}

bool node_output(mm_ctx_t *ctx, void *r) {
  if (r == NULL || r == MM_GO_ON) {
    if (!ctx->ordered) return true;
    r = NODE_SKIP; /* keeps the ordered collector in step */
  } else if (item_reserved(r)) {
    /* MM_EOS from a non-source, or an internal sentinel: a usage error. */
    net_fail(ctx->net, EINVAL);
    return false;
  }
  if (ctx->role == NODE_EMITTER) {
    if (farm_dispatch(ctx, r) == 0) return true;
    ctx->held = r;
    return false;
  }
  if (!ctx->out) return true;
  return node_push(ctx, ctx->out, r) == 0;
}

/* A pipeline stage: a source when nothing feeds it.  True: ended by EOS. */
static bool stage_run(mm_ctx_t *ctx) {
  struct net *n = ctx->net;
  for (;;) {
    if (net_stopping(n)) return false;
    void *r;
    if (ctx->in) {
      void *t;
      if (!queue_try_pop(ctx->in, &t) && queue_pop_wait(ctx->in, &t) != 0)
        return false;
      if (t == MM_EOS) return true;
      ctx->processed++;
      r = ctx->spec.svc(t, ctx);
    } else {
      r = ctx->spec.svc(NULL, ctx);
      if (r == MM_EOS) return true;
      if (r == NULL || r == MM_GO_ON) continue;
      ctx->processed++;
    }
    if (r == NODE_FAIL) return false;
    if (!node_output(ctx, r)) return false;
  }
}

static void *node_main(void *arg) {
  mm_ctx_t *ctx = arg;
  bool eos = false;
  int rc = ctx->spec.init ? ctx->spec.init(ctx) : 0;
  if (rc != 0) {
    net_fail(ctx->net, rc);
  } else {
    switch (ctx->role) {
    case NODE_STAGE: eos = stage_run(ctx); break;
    case NODE_EMITTER: eos = farm_emitter_run(ctx); break;
    case NODE_WORKER: eos = farm_worker_run(ctx); break;
    case NODE_COLLECTOR: eos = farm_collector_run(ctx); break;
    }
    if (ctx->spec.end) ctx->spec.end(ctx);
  }
  if (ctx->role == NODE_STAGE) {
    if (eos && ctx->out) node_push(ctx, ctx->out, MM_EOS);
  } else {
    farm_node_exit(ctx, eos);
  }
  return NULL;
}

/* ---- starting and waiting ----------------------------------------------- */

static void node_name(const mm_ctx_t *ctx, char *buf, size_t size) {
  static const char *const names[] = {"stage", "emit", "work", "coll"};
  snprintf(buf, size, "mm-%s%u", names[ctx->role], ctx->index);
}

static void net_drop_leftovers(struct net *n) {
  for (size_t i = 0; i < n->nqueues; i++) {
    mm_queue_t *q = n->queues[i];
    void *item;
    while (q->lf ? spsc_pop(q->lf, &item) : mm_lockq_try_pop(q->mx, &item)) {
      if (!q->internal && !item_reserved(item) && q->drop)
        q->drop(item, q->drop_user);
    }
  }
  for (size_t i = 0; i < n->nnodes; i++) {
    mm_ctx_t *ctx = n->nodes[i];
    if (ctx->held && ctx->held_queue && ctx->held_queue->drop)
      ctx->held_queue->drop(ctx->held, ctx->held_queue->drop_user);
    ctx->held = NULL;
  }
}

static int net_wait(struct net *n) {
  if (n->state != NET_STARTED)
    return n->state == NET_WAITED ? mms_atomic_load_relaxed(&n->xerror)
                                  : EINVAL;
  for (size_t i = 0; i < n->nnodes; i++) {
    if (n->nodes[i]->started) pthread_join(n->nodes[i]->thread, NULL);
    n->nodes[i]->started = false;
  }
  if (net_stopping(n)) net_drop_leftovers(n);
  for (size_t i = 0; i < n->nfarms; i++) farm_settle(n->farms[i]);
  n->state = NET_WAITED;
  return mms_atomic_load_relaxed(&n->xerror);
}

static int net_start(struct net *n) {
  if (n->state != NET_BUILT) return EINVAL;
  n->state = NET_STARTED;
  for (size_t i = 0; i < n->nnodes; i++) {
    mm_ctx_t *ctx = n->nodes[i];
    int rc = pthread_create(&ctx->thread, NULL, node_main, ctx);
    if (rc != 0) {
      net_fail(n, rc);
      net_wait(n);
      return rc;
    }
    ctx->started = true;
#ifdef __linux__
    char name[16];
    node_name(ctx, name, sizeof name);
    pthread_setname_np(ctx->thread, name);
#else
    (void)node_name;
#endif
  }
  return 0;
}

/* ---- mm_ctx_* ----------------------------------------------------------- */

void *mm_ctx_user(const mm_ctx_t *ctx) { return ctx->spec.user; }

unsigned mm_ctx_index(const mm_ctx_t *ctx) { return ctx->index; }

unsigned mm_ctx_count(const mm_ctx_t *ctx) { return ctx->count; }

int mm_ctx_send(mm_ctx_t *ctx, void *item) {
  if (item_reserved(item) || ctx->ordered) return EINVAL;
  if (ctx->role == NODE_EMITTER) return farm_dispatch(ctx, item);
  if (!ctx->out) return 0;
  return queue_push_wait(ctx->out, item);
}

void *mm_ctx_fail(mm_ctx_t *ctx, int code) {
  net_fail(ctx->net, code);
  return NODE_FAIL;
}

bool mm_ctx_stopping(const mm_ctx_t *ctx) { return net_stopping(ctx->net); }

/* ---- pipelines ---------------------------------------------------------- */

typedef struct stage_desc {
  bool is_farm;
  mm_node_spec_t node;
  mm_farm_config_t farm;
} stage_desc_t;

struct mm_pipeline {
  mm_pipeline_config_t cfg;
  stage_desc_t *stages;
  size_t nstages, cap_stages;
  struct net net;
};

mm_pipeline_t *mm_pipeline_create(const mm_pipeline_config_t *cfg) {
  mm_pipeline_t *p = calloc(1, sizeof *p);
  if (!p) {
    errno = ENOMEM;
    return NULL;
  }
  if (cfg) p->cfg = *cfg;
  if (p->cfg.queue != MM_QUEUE_LOCKFREE && p->cfg.queue != MM_QUEUE_MUTEX) {
    free(p);
    errno = EINVAL;
    return NULL;
  }
  if (p->cfg.capacity == 0) p->cfg.capacity = 512;
  net_init(&p->net);
  return p;
}

static int pipeline_add(mm_pipeline_t *p, const stage_desc_t *d) {
  if (p->net.state != NET_EMPTY) return EINVAL;
  if (grow_array(&p->stages, &p->cap_stages, p->nstages, sizeof(stage_desc_t)))
    return ENOMEM;
  p->stages[p->nstages++] = *d;
  return 0;
}

int mm_pipeline_add_stage(mm_pipeline_t *p, const mm_node_spec_t *stage) {
  if (!p || !stage || !stage->svc) return EINVAL;
  stage_desc_t d = {.is_farm = false, .node = *stage};
  return pipeline_add(p, &d);
}

int mm_pipeline_add_farm(mm_pipeline_t *p, const mm_farm_config_t *cfg) {
  if (!p || !cfg) return EINVAL;
  stage_desc_t d = {.is_farm = true, .farm = *cfg};
  return pipeline_add(p, &d);
}

/* Nodes and edges for every stage; on failure nothing is left allocated. */
static int pipeline_build(mm_pipeline_t *p) {
  if (p->net.state != NET_EMPTY) return 0;
  if (p->nstages == 0) return EINVAL;
  struct net *n = &p->net;
  mm_ctx_t *prev = NULL;
  int rc = 0;
  for (size_t i = 0; i < p->nstages && rc == 0; i++) {
    stage_desc_t *d = &p->stages[i];
    bool has_input = i > 0, has_output = i + 1 < p->nstages;
    mm_ctx_t *entry = NULL, *exit = NULL;
    if (d->is_farm) {
      errno = 0;
      if (!farm_build(n, &d->farm, has_input, has_output, &entry, &exit))
        rc = errno ? errno : ENOMEM;
    } else {
      entry = exit = net_add_node(n, NODE_STAGE);
      if (!entry) rc = ENOMEM;
      else {
        entry->spec = d->node;
        entry->index = (unsigned)i;
      }
    }
    if (rc == 0 && prev) {
      mm_queue_t *q = net_add_queue(n, p->cfg.queue, p->cfg.capacity, prev,
                                    entry, p->cfg.drop, p->cfg.drop_user);
      if (!q) rc = ENOMEM;
      else {
        prev->out = q;
        entry->in = q;
      }
    }
    prev = exit;
  }
  if (rc != 0) {
    net_clear(n);
    return rc;
  }
  n->state = NET_BUILT;
  return 0;
}

int mm_pipeline_start(mm_pipeline_t *p) {
  if (!p) return EINVAL;
  int rc = pipeline_build(p);
  return rc ? rc : net_start(&p->net);
}

int mm_pipeline_wait(mm_pipeline_t *p) { return p ? net_wait(&p->net) : EINVAL; }

int mm_pipeline_run(mm_pipeline_t *p) {
  int rc = mm_pipeline_start(p);
  return rc ? rc : mm_pipeline_wait(p);
}

void mm_pipeline_cancel(mm_pipeline_t *p, int code) {
  if (p && p->net.state >= NET_BUILT) net_fail(&p->net, code);
}

void mm_pipeline_destroy(mm_pipeline_t *p) {
  if (!p) return;
  if (p->net.state == NET_STARTED) { /* misuse, but never free under threads */
    net_fail(&p->net, ECANCELED);
    net_wait(&p->net);
  }
  net_clear(&p->net);
  free(p->stages);
  free(p);
}

/* ---- a farm alone: a pipeline of one farm ------------------------------- */

struct mm_farm {
  mm_pipeline_t *p;
};

void mm_farm_config_init(mm_farm_config_t *cfg) { memset(cfg, 0, sizeof *cfg); }

mm_farm_t *mm_farm_create(const mm_farm_config_t *cfg) {
  if (!cfg) {
    errno = EINVAL;
    return NULL;
  }
  mm_pipeline_config_t pc = {.queue = cfg->queue,
                             .capacity = cfg->capacity,
                             .drop = cfg->drop,
                             .drop_user = cfg->drop_user};
  mm_farm_t *f = calloc(1, sizeof *f);
  mm_pipeline_t *p = f ? mm_pipeline_create(&pc) : NULL;
  int rc = p ? mm_pipeline_add_farm(p, cfg) : errno ? errno : ENOMEM;
  if (rc == 0) rc = pipeline_build(p);
  if (rc != 0) {
    mm_pipeline_destroy(p);
    free(f);
    errno = rc;
    return NULL;
  }
  f->p = p;
  return f;
}

int mm_farm_start(mm_farm_t *f) { return f ? mm_pipeline_start(f->p) : EINVAL; }
int mm_farm_wait(mm_farm_t *f) { return f ? mm_pipeline_wait(f->p) : EINVAL; }
int mm_farm_run(mm_farm_t *f) { return f ? mm_pipeline_run(f->p) : EINVAL; }
void mm_farm_cancel(mm_farm_t *f, int code) {
  if (f) mm_pipeline_cancel(f->p, code);
}

void mm_farm_destroy(mm_farm_t *f) {
  if (!f) return;
  mm_pipeline_destroy(f->p);
  free(f);
}

void mm_farm_stats(const mm_farm_t *f, mm_farm_stats_t *out) {
  memset(out, 0, sizeof *out);
  if (f && f->p->net.state == NET_WAITED) farm_stats(f->p->net.farms[0], out);
}

uint64_t mm_farm_worker_tasks(const mm_farm_t *f, unsigned i) {
  if (!f || f->p->net.state != NET_WAITED) return 0;
  return farm_worker_tasks(f->p->net.farms[0], i);
}
