/* uspsc.c — the unbounded lock-free SPSC queue (mm_uspsc_*): a chain of
 * bounded rings, with drained rings recycled to the producer.
 *
 * Layer: stream, on top of spsc.h.  Used by the farm for the return
 * channels of allocation over queues, and public.
 *
 *   producer                                          consumer
 *   ptail ──► [ring]──xnext──►[ring]──xnext──►[ring] ◄── chead
 *       ▲                                          │ drained ring
 *       └──────────── cache (bounded SPSC) ◄───────┘
 *
 * Each ring is one cache-aligned allocation: its mm_spsc header, its xnext
 * link on a line of its own, then the slots.
 *
 * Invariants:
 *   the rings from chead along xnext to ptail hold the queue's items, in
 *   order; every ring but ptail is full or being drained and is never
 *   written again by the producer (xnext != NULL <=> producer left it);
 *   a ring is in exactly one place: the chain, the cache, or freed;
 *   rings_allocated - rings freed == |chain| + |cache| (only destroy frees
 *   while the queue is in use when the cache is full).
 *
 * Protocol:
 *   producer, ring full: take a ring from the cache (or malloc one), reset
 *     it, push the item into it, then store old->xnext = new (release).
 *     The release orders every push into the old ring, the reset and the
 *     first push into the new one before the link.
 *   consumer, ring empty: load chead->xnext (acquire).  NULL: the queue is
 *     empty.  Otherwise the producer has left this ring for good and all its
 *     pushes are visible, so pop once more; still empty means the ring is
 *     drained: move chead to the next ring and hand the old one back through
 *     the cache (a release push; the producer's acquire pop orders the
 *     consumer's last reads of the ring before the producer's reset).
 *   Steady state: with a bounded number of items in flight the producer
 *   always finds a drained ring in the cache, so it allocates nothing (the
 *   rings_allocated counter stops growing; the tests check it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "spsc.h"
#include "uspsc.h"

typedef struct uring {
  struct mm_spsc q;
  /* the producer writes it once */
  _Alignas(MMS_CACHE_LINE) struct uring *_Atomic xnext;
  _Alignas(MMS_CACHE_LINE) void *slots[];
} uring_t;

_Static_assert(offsetof(uring_t, xnext) % MMS_CACHE_LINE == 0,
               "the link has a line of its own");
_Static_assert(offsetof(uring_t, slots) % MMS_CACHE_LINE == 0,
               "slots start on a fresh line");

struct mm_uspsc {
  /* producer's line */
  _Alignas(MMS_CACHE_LINE) uring_t *ptail; /* ring the producer pushes into */
  _Atomic uint64_t xrings;  /* rings malloc'ed; producer writes, any reads */
  size_t ring_capacity;     /* const after init */
  struct mm_spsc *pcache;   /* const after init: producer pops rings here */
  /* consumer's line */
  _Alignas(MMS_CACHE_LINE) uring_t *chead; /* ring the consumer pops from */
  struct mm_spsc *ccache;   /* const after init: consumer pushes rings here */
};

_Static_assert(offsetof(struct mm_uspsc, chead) -
                       offsetof(struct mm_uspsc, ptail) >= MMS_CACHE_LINE,
               "producer and consumer state on separate lines");

static uring_t *uring_new(mm_uspsc_t *q) {
  void *mem = NULL;
  size_t size = sizeof(uring_t) + q->ring_capacity * sizeof(void *);
  if (posix_memalign(&mem, MMS_CACHE_LINE, size) != 0) return NULL;
  /* Single writer: a load and a store, not an RMW. */
  mms_atomic_store_relaxed(&q->xrings,
                           mms_atomic_load_relaxed(&q->xrings) + 1);
  return mem;
}

static void uring_reset(mm_uspsc_t *q, uring_t *r) {
  spsc_init(&r->q, r->slots, q->ring_capacity);
  mms_atomic_store_relaxed(&r->xnext, NULL);
}

mm_uspsc_t *mm_uspsc_create(size_t ring_capacity, size_t cache_rings) {
  size_t cap = spsc_round_capacity(ring_capacity ? ring_capacity : 1024);
  if (cap == 0) {
    errno = EINVAL;
    return NULL;
  }
  void *mem = NULL;
  if (posix_memalign(&mem, MMS_CACHE_LINE, sizeof(mm_uspsc_t)) != 0) {
    errno = ENOMEM;
    return NULL;
  }
  mm_uspsc_t *q = mem;
  q->ring_capacity = cap;
  mms_atomic_store_relaxed(&q->xrings, 0);
  q->pcache = q->ccache = mm_spsc_create(cache_rings ? cache_rings : 4);
  uring_t *first = q->pcache ? uring_new(q) : NULL;
  if (!first) {
    mm_spsc_destroy(q->pcache);
    free(q);
    errno = ENOMEM;
    return NULL;
  }
  uring_reset(q, first);
  q->ptail = q->chead = first;
  return q;
}

void mm_uspsc_destroy(mm_uspsc_t *q) {
  if (!q) return;
  uring_t *r = q->chead;
  while (r) {
    uring_t *next = mms_atomic_load_relaxed(&r->xnext);
    free(r);
    r = next;
  }
  void *cached;
  while (spsc_pop(q->ccache, &cached)) free(cached);
  mm_spsc_destroy(q->ccache);
  free(q);
}

/* Producer, slow path of mm_uspsc_push: the tail ring is full. */
static __attribute__((noinline)) uring_t *uspsc_grow(mm_uspsc_t *q) {
  void *got;
  uring_t *r = spsc_pop(q->pcache, &got) ? got : uring_new(q);
  if (!r) return NULL;
  uring_reset(q, r);
  return r;
}

static void uspsc_link(mm_uspsc_t *q, uring_t *r) {
  mms_atomic_store_release(&q->ptail->xnext, r);
  q->ptail = r;
}

bool mm_uspsc_push(mm_uspsc_t *q, void *item) {
  if (spsc_push(&q->ptail->q, item)) return true;
  uring_t *r = uspsc_grow(q);
  if (!r) {
    errno = ENOMEM;
    return false;
  }
  spsc_push(&r->q, item);
  uspsc_link(q, r);
  return true;
}

size_t mm_uspsc_push_batch(mm_uspsc_t *q, void *const *items, size_t n) {
  size_t done = spsc_push_batch(&q->ptail->q, items, n);
  while (done < n) {
    uring_t *r = uspsc_grow(q);
    if (!r) {
      errno = ENOMEM;
      break;
    }
    done += spsc_push_batch(&r->q, items + done, n - done);
    uspsc_link(q, r);
  }
  return done;
}

/* Consumer, slow path: chead looked empty.  Moves past drained rings. */
static __attribute__((noinline)) bool uspsc_advance(mm_uspsc_t *q) {
  uring_t *next = mms_atomic_load_acquire(&q->chead->xnext);
  if (!next) return false;
  if (spsc_has_item(&q->chead->q)) return true; /* pushed before the link */
  uring_t *old = q->chead;
  q->chead = next;
  if (!spsc_push(q->ccache, old)) free(old);
  return true;
}

bool mm_uspsc_pop(mm_uspsc_t *q, void **out) {
  do {
    if (spsc_pop(&q->chead->q, out)) return true;
  } while (uspsc_advance(q));
  return false;
}

size_t mm_uspsc_pop_batch(mm_uspsc_t *q, void **out, size_t max) {
  size_t done = 0;
  while (done < max) {
    size_t k = spsc_pop_batch(&q->chead->q, out + done, max - done);
    done += k;
    if (k == 0 && !uspsc_advance(q)) break;
  }
  return done;
}

uint64_t mm_uspsc_rings_allocated(const mm_uspsc_t *q) {
  return mms_atomic_load_relaxed(&((mm_uspsc_t *)q)->xrings);
}

bool uspsc_has_item(mm_uspsc_t *q) {
  return spsc_has_item(&q->chead->q) ||
         mms_atomic_load_acquire(&q->chead->xnext) != NULL;
}
