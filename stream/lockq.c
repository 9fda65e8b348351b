/* lockq.c — the lock-based baseline: a bounded ring behind one pthread
 * mutex, with "not empty" and "not full" condition variables (mm_lockq_*).
 *
 * Layer: stream, beside spsc.c; queue.c puts it behind the same interface
 * as the lock-free ring so that farms and benchmarks can use either.
 *
 * It is the queue the FastFlow paper compares against (its "Pthread
 * lock-based queue"), written the way a careful pthreads programmer would:
 * one lock per operation, signals only when someone waits, no spinning.  It
 * is safe for any number of producers and consumers.
 *
 * Invariants (under mu): head <= tail <= head + mask + 1; the items are
 * slots[i & mask] for head <= i < tail; once closed, pushes fail and pops
 * drain what is left.
 *
 * Protocol: every field is read and written under mu, so the mutex gives
 * all the ordering; a waiter re-checks its condition in a loop after every
 * wake-up (spurious wake-ups, and another consumer may have taken the item).
 */
#define _GNU_SOURCE
#include "lockq.h"

#include <errno.h>
#include <stdlib.h>

#include "spsc.h" /* spsc_round_capacity */

mm_lockq_t *mm_lockq_create(size_t capacity) {
  size_t cap = spsc_round_capacity(capacity);
  if (cap == 0) {
    errno = EINVAL;
    return NULL;
  }
  mm_lockq_t *q = calloc(1, sizeof *q);
  void **slots = malloc(cap * sizeof(void *));
  if (!q || !slots) {
    free(q);
    free(slots);
    errno = ENOMEM;
    return NULL;
  }
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->not_empty, NULL);
  pthread_cond_init(&q->not_full, NULL);
  q->slots = slots;
  q->mask = cap - 1;
  return q;
}

void mm_lockq_destroy(mm_lockq_t *q) {
  if (!q) return;
  pthread_cond_destroy(&q->not_full);
  pthread_cond_destroy(&q->not_empty);
  pthread_mutex_destroy(&q->mu);
  free(q->slots);
  free(q);
}

/* Under mu. */
static void lockq_put(mm_lockq_t *q, void *item) {
  q->slots[q->tail++ & q->mask] = item;
  if (q->pop_waiters) pthread_cond_signal(&q->not_empty);
}

/* Under mu. */
static void *lockq_take(mm_lockq_t *q) {
  void *item = q->slots[q->head++ & q->mask];
  if (q->push_waiters) pthread_cond_signal(&q->not_full);
  return item;
}

bool mm_lockq_try_push(mm_lockq_t *q, void *item) {
  pthread_mutex_lock(&q->mu);
  bool ok = !q->closed && q->tail - q->head <= q->mask;
  if (ok) lockq_put(q, item);
  pthread_mutex_unlock(&q->mu);
  return ok;
}

bool mm_lockq_try_pop(mm_lockq_t *q, void **out) {
  pthread_mutex_lock(&q->mu);
  bool ok = q->tail != q->head;
  if (ok) *out = lockq_take(q);
  pthread_mutex_unlock(&q->mu);
  return ok;
}

int mm_lockq_push(mm_lockq_t *q, void *item) {
  pthread_mutex_lock(&q->mu);
  while (!q->closed && q->tail - q->head > q->mask) {
    q->push_waiters++;
    q->waits++;
    pthread_cond_wait(&q->not_full, &q->mu);
    q->push_waiters--;
  }
  int rc = q->closed ? ECANCELED : 0;
  if (rc == 0) lockq_put(q, item);
  pthread_mutex_unlock(&q->mu);
  return rc;
}

int mm_lockq_pop(mm_lockq_t *q, void **out) {
  pthread_mutex_lock(&q->mu);
  while (!q->closed && q->tail == q->head) {
    q->pop_waiters++;
    q->waits++;
    pthread_cond_wait(&q->not_empty, &q->mu);
    q->pop_waiters--;
  }
  int rc = q->tail != q->head ? 0 : ECANCELED;
  if (rc == 0) *out = lockq_take(q);
  pthread_mutex_unlock(&q->mu);
  return rc;
}

void mm_lockq_close(mm_lockq_t *q) {
  pthread_mutex_lock(&q->mu);
  q->closed = true;
  pthread_cond_broadcast(&q->not_empty);
  pthread_cond_broadcast(&q->not_full);
  pthread_mutex_unlock(&q->mu);
}
