/* network.h — a streaming network: nodes (one thread each), the queues
 * between them, and how the whole thing starts, stops and ends.
 *
 * Layer: stream, on top of queue.h and waiter.h.  network.c owns the
 * threads, the stop protocol, pipelines and plain stages; farm.c owns the
 * emitter, worker and collector nodes and allocation over queues.
 *
 * Glossary
 *   node (mm_ctx_t)  a thread calling one svc per item; its role is a
 *                    pipeline stage, or a farm's emitter, worker or collector
 *   edge             an mm_queue_t with exactly one producer node and one
 *                    consumer node; it knows both nodes' waiters
 *   net              all nodes and edges of one pipeline (a farm alone is a
 *                    pipeline of one farm)
 *   EOS              MM_EOS, the end-of-stream marker: a source's last
 *                    output, then forwarded on every edge behind the items
 *   stop             the error path: the first mm_ctx_fail / failing init /
 *                    cancel records its code, sets xstop, closes every edge
 *                    and wakes every node; nodes exit at their next check
 *
 * Invariants
 *   the net's node and edge arrays are fixed before the first thread starts
 *   and read-only until every thread has been joined;
 *   each node's private fields are touched only by its thread, and by the
 *   thread that calls wait after the join (pthread_join orders them);
 *   every item is, at any time, in exactly one place: a node's hands (inside
 *   svc, or `held` after a failed push while stopping), a queue, or the
 *   user's (returned by a sink, or given to drop after a stop).
 */
#ifndef MM_STREAM_NETWORK_H
#define MM_STREAM_NETWORK_H

#include <pthread.h>
#include <stdint.h>

#include "queue.h"

/* Items svc can return besides MM_EOS and MM_GO_ON (never user items). */
#define NODE_FAIL ((void *)~(uintptr_t)2) /* mm_ctx_fail: stop the network */
#define NODE_SKIP ((void *)~(uintptr_t)3) /* ordered farm: no output here */

/* NULL and the top 16 addresses are never items (the header says so). */
static inline bool item_reserved(const void *p) {
  return p == NULL || (uintptr_t)p >= UINTPTR_MAX - 15;
}

/* Blocks a worker or collector hands back per return-channel push. */
#define FARM_RETURN_BATCH 32

typedef enum node_role {
  NODE_STAGE,
  NODE_EMITTER,
  NODE_WORKER,
  NODE_COLLECTOR
} node_role_t;

struct farm;
struct net;

struct mm_ctx {
  waiter_t waiter; /* first, on its own line: neighbours notify it */
  /* const after build */
  _Alignas(MMS_CACHE_LINE) struct net *net;
  struct farm *farm; /* NULL for a stage */
  node_role_t role;
  unsigned index, count;
  mm_node_spec_t spec;
  mm_queue_t *in;  /* NULL: a source (stage or emitter) or a collector */
  mm_queue_t *out; /* NULL: output goes nowhere */
  bool ordered;    /* a worker of an ordered farm with a collector */
  mm_uspsc_t *ret; /* worker/collector in MM_ALLOC_RETURN mode: to emitter */
  _Atomic int xretired; /* 1 after this node's last push on `ret` (release) */
  pthread_t thread;
  bool started;
  /* owner thread only */
  void *held;            /* item it could not pass on while stopping */
  mm_queue_t *held_queue; /* the queue that refused it (its drop applies) */
  unsigned nret;
  void *retbuf[FARM_RETURN_BATCH];
  uint64_t processed; /* svc calls with an item (sources: items produced) */
  uint64_t allocs, returned, freed;
};

struct net {
  _Atomic int xstop;  /* 0 running, 1 stopping; set once */
  _Atomic int xerror; /* first nonzero error code */
  mm_ctx_t **nodes;
  size_t nnodes, cap_nodes;
  mm_queue_t **queues;
  size_t nqueues, cap_queues;
  struct farm **farms;
  size_t nfarms, cap_farms;
  int state; /* NET_BUILT, NET_STARTED, NET_WAITED */
};

enum { NET_EMPTY, NET_BUILT, NET_STARTED, NET_WAITED };

static inline bool net_stopping(const struct net *n) {
  return mms_atomic_load_relaxed(&((struct net *)n)->xstop) != 0;
}

/* network.c */
mm_ctx_t *net_add_node(struct net *n, node_role_t role);
mm_queue_t *net_add_queue(struct net *n, mm_queue_kind_t kind, size_t capacity,
                          mm_ctx_t *producer, mm_ctx_t *consumer,
                          void (*drop)(void *, void *), void *drop_user);
int net_add_farm(struct net *n, struct farm *f);
void net_fail(struct net *n, int code);
/* Push for a node: 0, or ECANCELED (the item becomes `held`). */
int node_push(mm_ctx_t *ctx, mm_queue_t *q, void *item);
/* What a non-source svc returned: pass it on.  False: stop the node. */
bool node_output(mm_ctx_t *ctx, void *r);

/* farm.c */
struct farm *farm_build(struct net *n, const mm_farm_config_t *cfg,
                        bool has_input, bool has_output, mm_ctx_t **entry,
                        mm_ctx_t **exit);
void farm_free(struct farm *f);
bool farm_emitter_run(mm_ctx_t *ctx);
bool farm_worker_run(mm_ctx_t *ctx);
bool farm_collector_run(mm_ctx_t *ctx);
/* Emitter: dispatch one task to a worker; 0 or ECANCELED (task held). */
int farm_dispatch(mm_ctx_t *ctx, void *task);
/* Node exit: forward EOS (if ended by it) and settle return channels. */
void farm_node_exit(mm_ctx_t *ctx, bool eos);
/* After every thread joined: free what the return channels still hold. */
void farm_settle(struct farm *f);

#endif /* MM_STREAM_NETWORK_H */

/* farm.c, read after the join */
void farm_stats(const struct farm *f, mm_farm_stats_t *out);
uint64_t farm_worker_tasks(const struct farm *f, unsigned i);
