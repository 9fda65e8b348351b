/* mmalloc/stream.h — the public API of mmalloc's streaming module.
 *
 * The module is FastFlow's idea (Aldinucci et al., "Efficient streaming
 * applications on multi-core with FastFlow"; [FastFlow] in docs/sources.md)
 * in C11: streaming networks built from lock-free
 * single-producer/single-consumer (SPSC) queues, where every many-to-one or one-to-many edge is arbitrated
 * by an active thread (the emitter or the collector of a farm) instead of by
 * atomic read-modify-write operations.  It is built as the static library
 * `mmstream` (CMake target `mmstream`); it needs libc and pthreads only and
 * allocates with plain malloc/free, so it runs on whatever allocator the
 * program has (mmalloc when linked or preloaded).
 *
 * Three layers, each usable alone:
 *
 *   queues     mm_spsc_t   bounded lock-free SPSC ring of pointers
 *              mm_uspsc_t  unbounded lock-free SPSC queue (chain of rings,
 *                          drained rings recycled: steady state allocates
 *                          nothing)
 *              mm_lockq_t  bounded mutex + condition-variable queue (the
 *                          lock-based baseline)
 *              mm_queue_t  either kind behind one interface, with blocking
 *                          push/pop (what farms and pipelines are built on)
 *   farm       emitter -> N workers -> optional collector, every edge an
 *              mm_queue_t; round-robin or on-demand scheduling; ordered or
 *              unordered collection; allocation over queues
 *   pipeline   a chain of stages, each a function or a farm
 *
 * Threads.  A single-producer/single-consumer queue must have at most one
 * pushing thread and one popping thread at any time (they may change over
 * time if the hand-over itself is synchronised, e.g. by pthread_join).  The
 * functions say which side may call them: "producer", "consumer", or "any
 * thread" (approximate snapshots only).
 *
 * Items are `void *`.  Queues accept any value, NULL included.  Farms and
 * pipelines reserve NULL and the sentinels below (see "Callbacks").
 *
 * Errors: functions returning int return 0 or an errno value (EINVAL,
 * ENOMEM, ECANCELED); constructors return NULL with errno set.
 */
#ifndef MMALLOC_STREAM_H
#define MMALLOC_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Bounded lock-free SPSC queue
 * ======================================================================
 * A power-of-two ring of pointers; the producer's index and the consumer's
 * index live on separate cache lines, each side caches the other's index,
 * and the only synchronisation is one release store per push (or per batch)
 * and an acquire load when the cached index runs out: no atomic
 * read-modify-write, no fence.  All `capacity` slots are usable. */
typedef struct mm_spsc mm_spsc_t;

/* capacity is rounded up to a power of two (at least 1). */
mm_spsc_t *mm_spsc_create(size_t capacity);
void mm_spsc_destroy(mm_spsc_t *q);
size_t mm_spsc_capacity(const mm_spsc_t *q);
/* Producer.  false when full. */
bool mm_spsc_push(mm_spsc_t *q, void *item);
/* Producer.  Pushes the first min(n, free slots) items and publishes them
 * with one store; returns how many were pushed (0 when full). */
size_t mm_spsc_push_batch(mm_spsc_t *q, void *const *items, size_t n);
/* Consumer.  false when empty. */
bool mm_spsc_pop(mm_spsc_t *q, void **out);
/* Consumer.  Pops up to max items with one store; returns how many. */
size_t mm_spsc_pop_batch(mm_spsc_t *q, void **out, size_t max);
/* Any thread; a snapshot (exact when neither side is running). */
size_t mm_spsc_size(const mm_spsc_t *q);

/* ======================================================================
 * Unbounded lock-free SPSC queue
 * ======================================================================
 * A chain of bounded rings of ring_capacity slots.  When the producer's ring
 * is full it links a new one; the consumer hands every drained ring back
 * through a small SPSC cache of cache_rings rings, from which the producer
 * takes before it mallocs.  Push fails only when malloc does. */
typedef struct mm_uspsc mm_uspsc_t;

/* ring_capacity rounded up to a power of two (0: 1024); cache_rings 0: 4. */
mm_uspsc_t *mm_uspsc_create(size_t ring_capacity, size_t cache_rings);
void mm_uspsc_destroy(mm_uspsc_t *q);
/* Producer.  false only when a new ring cannot be allocated (errno ENOMEM). */
bool mm_uspsc_push(mm_uspsc_t *q, void *item);
/* Producer.  Pushes all n items (one store per ring touched); returns n, or
 * fewer when a new ring cannot be allocated. */
size_t mm_uspsc_push_batch(mm_uspsc_t *q, void *const *items, size_t n);
/* Consumer.  false when empty. */
bool mm_uspsc_pop(mm_uspsc_t *q, void **out);
/* Consumer.  Pops up to max items; returns how many. */
size_t mm_uspsc_pop_batch(mm_uspsc_t *q, void **out, size_t max);
/* Any thread.  Rings malloc'ed since creation (the first one included); in a
 * steady state it stops growing. */
uint64_t mm_uspsc_rings_allocated(const mm_uspsc_t *q);

/* ======================================================================
 * Lock-based baseline: mutex + condition variables
 * ======================================================================
 * A bounded ring guarded by one pthread mutex, with "not empty" and
 * "not full" condition variables; safe for any number of producers and
 * consumers.  It exists to be compared with the lock-free queues. */
typedef struct mm_lockq mm_lockq_t;

mm_lockq_t *mm_lockq_create(size_t capacity);
void mm_lockq_destroy(mm_lockq_t *q);
bool mm_lockq_try_push(mm_lockq_t *q, void *item);
bool mm_lockq_try_pop(mm_lockq_t *q, void **out);
/* Blocking; 0, or ECANCELED once the queue is closed (push), or closed and
 * empty (pop). */
int mm_lockq_push(mm_lockq_t *q, void *item);
int mm_lockq_pop(mm_lockq_t *q, void **out);
/* Wakes every blocked caller; later pushes fail, pops drain what is left. */
void mm_lockq_close(mm_lockq_t *q);

/* ======================================================================
 * One interface over both kinds
 * ======================================================================
 * mm_queue_t is the edge farms and pipelines are built on: a bounded
 * SPSC queue of either kind with blocking push/pop.  A lock-free queue waits
 * by spinning briefly, then yielding, then parking on a futex until the
 * other side wakes it; a mutex queue waits on its condition variables. */
typedef enum mm_queue_kind {
  MM_QUEUE_LOCKFREE = 0, /* mm_spsc_t: the default */
  MM_QUEUE_MUTEX = 1     /* mm_lockq_t */
} mm_queue_kind_t;

typedef struct mm_queue mm_queue_t;

mm_queue_t *mm_queue_create(mm_queue_kind_t kind, size_t capacity);
void mm_queue_destroy(mm_queue_t *q);
mm_queue_kind_t mm_queue_kind(const mm_queue_t *q);
/* Producer / consumer, non-blocking. */
bool mm_queue_try_push(mm_queue_t *q, void *item);
bool mm_queue_try_pop(mm_queue_t *q, void **out);
/* Producer / consumer, blocking; 0, or ECANCELED after mm_queue_close
 * (pop: once the queue is also empty). */
int mm_queue_push(mm_queue_t *q, void *item);
int mm_queue_pop(mm_queue_t *q, void **out);
/* Any thread: wake both sides and make later blocking calls fail. */
void mm_queue_close(mm_queue_t *q);

/* "lockfree" or "mutex" (also "lock-free", "lock", "spsc"); 0 or EINVAL. */
int mm_queue_kind_parse(const char *name, mm_queue_kind_t *out);
const char *mm_queue_kind_name(mm_queue_kind_t kind);

/* ======================================================================
 * Callbacks: nodes, contexts, sentinels
 * ======================================================================
 * Every node of a farm or pipeline (emitter, worker, collector, stage) is a
 * thread that calls one service function per item:
 *
 *     void *svc(void *task, mm_ctx_t *ctx);
 *
 * - A source (a farm's emitter, or a pipeline's first stage, when nothing
 *   feeds it) is called with task == NULL over and over; it returns the
 *   next task, MM_GO_ON (nothing this time, call again) or MM_EOS (the
 *   stream has ended).
 * - Every other node is called once per input item and returns its output
 *   item, or MM_GO_ON (or NULL) for "no output for this input".  More
 *   outputs can be sent with mm_ctx_send().  A node whose output goes
 *   nowhere (a worker of a farm without collector, the last stage) may
 *   return anything: it is ignored.
 * - Any node stops the whole network with `return mm_ctx_fail(ctx, code);`
 *   (code != 0): every thread exits promptly, items still queued are given
 *   to the `drop` callback, and run/wait return code.
 * - End of stream: MM_EOS from the source travels through every queue
 *   behind all tasks; each node calls its `end` hook and exits once it has
 *   seen EOS on all its inputs.  run/wait return 0 when every thread has
 *   exited.
 *
 * NULL, MM_EOS, MM_GO_ON and the top 16 addresses are never items. */
#define MM_EOS ((void *)~(uintptr_t)0)
#define MM_GO_ON ((void *)~(uintptr_t)1)

typedef struct mm_ctx mm_ctx_t;
typedef void *(*mm_svc_fn)(void *task, mm_ctx_t *ctx);

typedef struct mm_node_spec {
  mm_svc_fn svc; /* required, except: farm emitter and collector (identity) */
  void *user;    /* returned by mm_ctx_user(); shared by all workers */
  /* Optional, in the node's own thread: init before the first svc call
   * (a nonzero return stops the network with that code), end after the
   * last one (also after a stop, if init succeeded). */
  int (*init)(mm_ctx_t *ctx);
  void (*end)(mm_ctx_t *ctx);
} mm_node_spec_t;

/* The node's spec.user. */
void *mm_ctx_user(const mm_ctx_t *ctx);
/* A worker's index 0..nworkers-1; 0 for every other node. */
unsigned mm_ctx_index(const mm_ctx_t *ctx);
/* A farm's worker count (for every node of that farm); 1 for a stage. */
unsigned mm_ctx_count(const mm_ctx_t *ctx);
/* Send one more output item from inside svc (blocking while the queue is
 * full).  0; ECANCELED when the network is stopping; EINVAL for a worker of
 * an ordered farm (ordered collection needs exactly one output per task:
 * return it) or an item that is NULL or a sentinel. */
int mm_ctx_send(mm_ctx_t *ctx, void *item);
/* Record code (nonzero) as the network's error, start stopping, and return
 * the sentinel svc must return. */
void *mm_ctx_fail(mm_ctx_t *ctx, int code);
/* True once the network is stopping (an error elsewhere): a long svc may
 * poll it and return early. */
bool mm_ctx_stopping(const mm_ctx_t *ctx);

/* ======================================================================
 * Farm
 * ======================================================================
 *
 *                      +--> worker 0 --+
 *   (input) --> emitter +--> worker 1 --+--> collector --> (output)
 *                      +--> worker N-1 +
 *
 * Every arrow is an mm_queue_t with one producer and one consumer.  The
 * emitter dispatches each task to one worker:
 *   MM_SCHED_ROUND_ROBIN  strictly in turn (waits for that worker's queue);
 *   MM_SCHED_ON_DEMAND    to any worker with room in a short queue
 *                         (demand_depth slots): back-pressure balances
 *                         uneven tasks.
 * The collector gathers the workers' outputs:
 *   MM_ORDER_UNORDERED    as they come;
 *   MM_ORDER_ORDERED      in the order the emitter dispatched the tasks
 *                         (each worker then returns exactly one output per
 *                         task; MM_GO_ON/NULL outputs are skipped in place).
 *
 * Allocation over queues (FastFlow's allocator idea):
 *   MM_ALLOC_RETURN  blocks the emitter gets from mm_farm_task_alloc() and
 *                    a worker or the collector hands to mm_farm_task_free()
 *                    travel back to the emitter over that thread's own
 *                    unbounded SPSC return queue (in batches), and the
 *                    emitter frees them on its own thread, where they were
 *                    allocated: a local free, no atomic operation per free.
 *   MM_ALLOC_PLAIN   mm_farm_task_alloc is malloc and mm_farm_task_free is
 *                    free, wherever it is called (a remote free).
 *   MM_ALLOC_DEFAULT whichever of the two the benchmarks chose (see
 *                    mm_farm_alloc_default()).
 * The same program runs in either mode unchanged. */
typedef enum mm_sched {
  MM_SCHED_ROUND_ROBIN = 0,
  MM_SCHED_ON_DEMAND = 1
} mm_sched_t;

typedef enum mm_order {
  MM_ORDER_UNORDERED = 0,
  MM_ORDER_ORDERED = 1
} mm_order_t;

typedef enum mm_alloc_mode {
  MM_ALLOC_DEFAULT = 0,
  MM_ALLOC_PLAIN = 1,
  MM_ALLOC_RETURN = 2
} mm_alloc_mode_t;

typedef struct mm_farm_config {
  unsigned nworkers;         /* 0: the number of online CPUs */
  mm_node_spec_t emitter;    /* svc NULL: forward the farm's input as is
                                (a farm with neither input nor emitter svc
                                is an error) */
  mm_node_spec_t worker;     /* svc required; one thread per worker */
  mm_node_spec_t collector;  /* used when `collect` is set (svc NULL: forward
                                the workers' outputs as is) */
  bool collect;              /* a collector thread; forced on for a farm that
                                is not the last stage of a pipeline */
  mm_sched_t sched;          /* default MM_SCHED_ROUND_ROBIN */
  mm_order_t order;          /* default MM_ORDER_UNORDERED */
  mm_queue_kind_t queue;     /* default MM_QUEUE_LOCKFREE */
  size_t capacity;           /* slots per queue; 0: 512 */
  size_t demand_depth;       /* on-demand worker queue slots; 0: 4 */
  mm_alloc_mode_t alloc;     /* default MM_ALLOC_DEFAULT */
  /* Optional: the allocator behind mm_farm_task_alloc/free (default
   * malloc/free), e.g. mm_malloc/mm_free, or counting wrappers in tests. */
  void *(*task_malloc)(size_t size);
  void (*task_free)(void *p);
  /* Optional: called (in the thread that calls wait) for every item still
   * queued when the farm stops on an error; default: leave it. */
  void (*drop)(void *item, void *user);
  void *drop_user;
} mm_farm_config_t;

/* Zero every field (which gives the defaults above). */
void mm_farm_config_init(mm_farm_config_t *cfg);

typedef struct mm_farm mm_farm_t;

/* Checks the configuration and allocates the queues; starts no thread.
 * NULL with errno EINVAL (bad configuration) or ENOMEM. */
mm_farm_t *mm_farm_create(const mm_farm_config_t *cfg);
/* start + wait. */
int mm_farm_run(mm_farm_t *farm);
/* Start every thread; 0, or an errno value (nothing left running). */
int mm_farm_start(mm_farm_t *farm);
/* Wait for every thread to exit; 0, or the first nonzero code a callback
 * gave to mm_ctx_fail or returned from init. */
int mm_farm_wait(mm_farm_t *farm);
/* Stop a started farm from outside (as mm_ctx_fail(code) would). */
void mm_farm_cancel(mm_farm_t *farm, int code);
/* Frees everything; a started farm must have been waited for. */
void mm_farm_destroy(mm_farm_t *farm);

/* Allocation over queues.  mm_farm_task_alloc: only from the emitter's
 * callbacks (svc, init, end) of a farm; NULL with errno ENOMEM, or EINVAL
 * when ctx is not an emitter.  mm_farm_task_free: from any node; in
 * MM_ALLOC_RETURN mode a worker's or the collector's block goes back to the
 * emitter, otherwise (plain mode, or a node outside that farm) it is freed
 * on the spot.  A block may also be given to plain free() anywhere. */
void *mm_farm_task_alloc(mm_ctx_t *ctx, size_t size);
void mm_farm_task_free(mm_ctx_t *ctx, void *task);
/* What MM_ALLOC_DEFAULT means in this build. */
mm_alloc_mode_t mm_farm_alloc_default(void);

/* Counters of a farm that has been waited for (zero before). */
typedef struct mm_farm_stats {
  uint64_t tasks_emitted;    /* tasks dispatched to workers */
  uint64_t tasks_collected;  /* outputs the collector received (no skips) */
  uint64_t blocks_allocated; /* mm_farm_task_alloc successes */
  uint64_t blocks_returned;  /* freed by the emitter after coming back */
  uint64_t blocks_freed;     /* freed on the spot by mm_farm_task_free */
  uint64_t parks;            /* times a thread blocked (futex / condvar) */
} mm_farm_stats_t;
void mm_farm_stats(const mm_farm_t *farm, mm_farm_stats_t *out);
/* Tasks worker i processed (0 for i out of range). */
uint64_t mm_farm_worker_tasks(const mm_farm_t *farm, unsigned i);

/* ======================================================================
 * Pipeline
 * ======================================================================
 * Stages run in order, each in its own thread(s), joined by mm_queue_t
 * edges.  The first stage is the source (svc called with NULL, see
 * "Callbacks"); a farm as first stage uses its emitter svc as the source. */
typedef struct mm_pipeline_config {
  mm_queue_kind_t queue; /* edges between stages; default lock-free */
  size_t capacity;       /* 0: 512 */
  void (*drop)(void *item, void *user); /* as in mm_farm_config_t */
  void *drop_user;
} mm_pipeline_config_t;

typedef struct mm_pipeline mm_pipeline_t;

/* cfg may be NULL (defaults). */
mm_pipeline_t *mm_pipeline_create(const mm_pipeline_config_t *cfg);
/* Append a stage: one thread calling stage->svc.  0, EINVAL or ENOMEM. */
int mm_pipeline_add_stage(mm_pipeline_t *p, const mm_node_spec_t *stage);
/* Append a farm built from cfg (copied).  0, EINVAL or ENOMEM. */
int mm_pipeline_add_farm(mm_pipeline_t *p, const mm_farm_config_t *cfg);
int mm_pipeline_run(mm_pipeline_t *p);
int mm_pipeline_start(mm_pipeline_t *p);
int mm_pipeline_wait(mm_pipeline_t *p);
void mm_pipeline_cancel(mm_pipeline_t *p, int code);
void mm_pipeline_destroy(mm_pipeline_t *p);

#ifdef __cplusplus
}
#endif

#endif /* MMALLOC_STREAM_H */
