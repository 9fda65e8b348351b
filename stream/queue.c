/* queue.c — mm_queue_t: creation, blocking push/pop and close over either
 * queue kind (see queue.h for the interface and its invariants).
 *
 * Layer: stream, on top of spsc.h, lockq.c and waiter.c.
 *
 * Protocol of the blocking calls:
 *   lock-free: try; otherwise loop { closed? -> ECANCELED; one backoff step
 *     on the caller's own waiter, whose park re-checks "space (item) or
 *     closed"; try again }.  The other side notifies that waiter after each
 *     operation (queue.h), mm_queue_close wakes both waiters.
 *   mutex: mm_lockq_push/pop, which wait on the queue's condition variables;
 *     then notify the other side's waiter, for threads that wait on several
 *     queues through their waiter rather than on this queue's condvar.
 * A pop on a closed queue still returns the items left, then ECANCELED.
 */
#define _GNU_SOURCE
#include "queue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

mm_queue_t *queue_new(mm_queue_kind_t kind, size_t capacity) {
  if (kind != MM_QUEUE_LOCKFREE && kind != MM_QUEUE_MUTEX) {
    errno = EINVAL;
    return NULL;
  }
  void *mem = NULL;
  if (posix_memalign(&mem, MMS_CACHE_LINE, sizeof(mm_queue_t)) != 0) {
    errno = ENOMEM;
    return NULL;
  }
  mm_queue_t *q = mem;
  memset(q, 0, sizeof *q);
  waiter_init(&q->own[0]);
  waiter_init(&q->own[1]);
  mms_atomic_store_relaxed(&q->xclosed, 0);
  if (kind == MM_QUEUE_LOCKFREE)
    q->lf = mm_spsc_create(capacity);
  else
    q->mx = mm_lockq_create(capacity);
  if (!q->lf && !q->mx) {
    int e = errno;
    free(q);
    errno = e;
    return NULL;
  }
  return q;
}

mm_queue_t *mm_queue_create(mm_queue_kind_t kind, size_t capacity) {
  mm_queue_t *q = queue_new(kind, capacity);
  if (q) {
    q->wprod = &q->own[0];
    q->wcons = &q->own[1];
  }
  return q;
}

void mm_queue_destroy(mm_queue_t *q) {
  if (!q) return;
  mm_spsc_destroy(q->lf);
  mm_lockq_destroy(q->mx);
  free(q);
}

mm_queue_kind_t mm_queue_kind(const mm_queue_t *q) {
  return q->lf ? MM_QUEUE_LOCKFREE : MM_QUEUE_MUTEX;
}

bool mm_queue_try_push(mm_queue_t *q, void *item) {
  return queue_try_push(q, item);
}

bool mm_queue_try_pop(mm_queue_t *q, void **out) {
  return queue_try_pop(q, out);
}

static bool queue_ready_space(void *arg) {
  mm_queue_t *q = arg;
  return queue_closed(q) || spsc_has_space(q->lf);
}

static bool queue_ready_item(void *arg) {
  mm_queue_t *q = arg;
  return queue_closed(q) || spsc_has_item(q->lf);
}

int queue_push_wait(mm_queue_t *q, void *item) {
  if (queue_try_push(q, item)) return 0;
  if (q->mx) {
    int rc = mm_lockq_push(q->mx, item);
    if (rc == 0) waiter_notify(q->wcons);
    return rc;
  }
  backoff_t b = {0};
  for (;;) {
    if (queue_closed(q)) return ECANCELED;
    backoff_wait(&b, q->wprod, queue_ready_space, q);
    if (queue_try_push(q, item)) return 0;
  }
}

int queue_pop_wait(mm_queue_t *q, void **out) {
  if (queue_try_pop(q, out)) return 0;
  if (q->mx) {
    int rc = mm_lockq_pop(q->mx, out);
    if (rc == 0) waiter_notify(q->wprod);
    return rc;
  }
  backoff_t b = {0};
  for (;;) {
    if (queue_closed(q)) return queue_try_pop(q, out) ? 0 : ECANCELED;
    backoff_wait(&b, q->wcons, queue_ready_item, q);
    if (queue_try_pop(q, out)) return 0;
  }
}

int mm_queue_push(mm_queue_t *q, void *item) { return queue_push_wait(q, item); }

int mm_queue_pop(mm_queue_t *q, void **out) { return queue_pop_wait(q, out); }

void mm_queue_close(mm_queue_t *q) {
  mms_atomic_store_release(&q->xclosed, 1);
  if (q->mx) mm_lockq_close(q->mx);
  if (q->wprod) waiter_wake(q->wprod);
  if (q->wcons) waiter_wake(q->wcons);
}

uint64_t queue_cond_waits(const mm_queue_t *q) { return q->mx ? q->mx->waits : 0; }

int mm_queue_kind_parse(const char *name, mm_queue_kind_t *out) {
  static const struct {
    const char *name;
    mm_queue_kind_t kind;
  } names[] = {{"lockfree", MM_QUEUE_LOCKFREE}, {"lock-free", MM_QUEUE_LOCKFREE},
               {"spsc", MM_QUEUE_LOCKFREE},     {"mutex", MM_QUEUE_MUTEX},
               {"lock", MM_QUEUE_MUTEX},        {"locked", MM_QUEUE_MUTEX}};
  for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++) {
    if (strcasecmp(name, names[i].name) == 0) {
      *out = names[i].kind;
      return 0;
    }
  }
  return EINVAL;
}

const char *mm_queue_kind_name(mm_queue_kind_t kind) {
  return kind == MM_QUEUE_MUTEX ? "mutex" : "lockfree";
}
