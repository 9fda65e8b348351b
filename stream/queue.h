/* queue.h — mm_queue_t, one interface over the lock-free ring and the
 * lock-based baseline: the edge that farms and pipelines are built from.
 *
 * Layer: stream, on top of spsc.h, lockq.c and waiter.h; below the network.
 *
 * A queue knows the waiter of its producer and of its consumer.  After a
 * successful push it notifies the consumer's waiter, after a successful pop
 * the producer's, so a thread parked on several queues at once (the
 * collector, the on-demand emitter) is woken by whichever moves.  A
 * standalone queue (mm_queue_create) owns one waiter per side; inside a
 * network the waiters are the nodes' own.
 *
 * Waiting: a lock-free queue waits by the waiter's spin/yield/park policy
 * (waiter.h); a mutex queue blocks on its own condition variables, as a
 * pthreads program would, and still notifies the waiters (for threads that
 * wait on several queues).
 *
 * Invariants: exactly one of lf and mx is set (const after create); wprod
 * and wcons are set before any thread uses the queue and never change;
 * xclosed goes 0 -> 1 once.
 */
#ifndef MM_STREAM_QUEUE_H
#define MM_STREAM_QUEUE_H

#include "lockq.h"
#include "spsc.h"
#include "waiter.h"

struct mm_queue {
  struct mm_spsc *lf; /* MM_QUEUE_LOCKFREE, else NULL */
  mm_lockq_t *mx;     /* MM_QUEUE_MUTEX, else NULL */
  waiter_t *wprod;    /* notified when space appears */
  waiter_t *wcons;    /* notified when an item appears */
  _Atomic int xclosed;
  /* network use (const after wiring): what a stopped network does with
   * the items left in this queue */
  void (*drop)(void *item, void *user);
  void *drop_user;
  bool internal; /* holds markers only (ordered dispatch log): no drop */
  waiter_t own[2]; /* standalone queue: producer's, consumer's */
};

/* A queue whose waiters the caller wires (network use). */
mm_queue_t *queue_new(mm_queue_kind_t kind, size_t capacity);
/* Blocking calls; 0 or ECANCELED (closed). */
int queue_push_wait(mm_queue_t *q, void *item);
int queue_pop_wait(mm_queue_t *q, void **out);
/* Condition waits the mutex queue entered (statistics; not concurrent). */
uint64_t queue_cond_waits(const mm_queue_t *q);

static inline bool queue_closed(const mm_queue_t *q) {
  return mms_atomic_load_relaxed(&((mm_queue_t *)q)->xclosed) != 0;
}

/* Producer. */
static inline bool queue_try_push(mm_queue_t *q, void *item) {
  bool ok = q->lf ? spsc_push(q->lf, item) : mm_lockq_try_push(q->mx, item);
  if (ok) waiter_notify(q->wcons);
  return ok;
}

/* Consumer. */
static inline bool queue_try_pop(mm_queue_t *q, void **out) {
  bool ok = q->lf ? spsc_pop(q->lf, out) : mm_lockq_try_pop(q->mx, out);
  if (ok) waiter_notify(q->wprod);
  return ok;
}

/* Producer: at least one free slot.  For the mutex kind this takes the lock
 * (used only in wait predicates, off the fast path). */
static inline bool queue_has_space(mm_queue_t *q) {
  if (q->lf) return spsc_has_space(q->lf);
  pthread_mutex_lock(&q->mx->mu);
  bool ok = q->mx->tail - q->mx->head <= q->mx->mask;
  pthread_mutex_unlock(&q->mx->mu);
  return ok;
}

/* Consumer: at least one item. */
static inline bool queue_has_item(mm_queue_t *q) {
  if (q->lf) return spsc_has_item(q->lf);
  pthread_mutex_lock(&q->mx->mu);
  bool ok = q->mx->tail != q->mx->head;
  pthread_mutex_unlock(&q->mx->mu);
  return ok;
}

#endif /* MM_STREAM_QUEUE_H */
