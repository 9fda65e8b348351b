/* spsc.h — the bounded lock-free single-producer/single-consumer ring: its
 * layout and its inlined fast paths.
 *
 * Layer: stream, the lowest queue.  spsc.c wraps these into the public
 * mm_spsc_* calls; uspsc.c, queue.c and the farm inline them directly.
 *
 * Layout (one 64-byte line each; the slot array is a separate allocation
 * unless a caller embeds the ring, as uspsc.c does):
 *
 *   line 0  producer:  xtail | head_cache | pslots | pmask
 *   line 1  consumer:  xhead | tail_cache | cslots | cmask
 *
 * Each side reads and writes only its own line on the fast path (the slot
 * pointer and mask are copied into both lines so that neither side touches a
 * third one), and reads the other side's line only when its cached copy of
 * the other index says the ring is full (producer) or empty (consumer).
 *
 * Invariants (indices are free-running and never wrap in practice: 2^64):
 *   head <= tail <= head + capacity,  capacity = mask + 1 = 2^k
 *   the items are slots[i & mask] for head <= i < tail
 *   head_cache <= head (producer's stale copy),  tail_cache <= tail
 *
 * Protocol (Lamport's queue with cached indices, as in FastForward and
 * rigtorp's SPSCQueue; no read-modify-write, no fence):
 *   push: write slots[tail & mask], then store xtail = tail + 1 (release).
 *         The release orders the slot write before the index, so a consumer
 *         that acquires xtail >= i + 1 sees slot i.
 *   pop:  read slots[head & mask], then store xhead = head + 1 (release).
 *         The release orders the slot read before the index, so a producer
 *         that acquires xhead and then overwrites the slot cannot disturb a
 *         read still in flight.
 *   full/empty: the producer re-reads xhead (acquire) only when
 *         tail - head_cache == capacity; the consumer re-reads xtail
 *         (acquire) only when head == tail_cache.  A stale cache can only
 *         make the queue look fuller (emptier) than it is: safe.
 *   Batches copy k slots and publish them with one release store.
 * Each side reads its own index relaxed: it is the only writer.
 */
#ifndef MM_STREAM_SPSC_H
#define MM_STREAM_SPSC_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "atomic.h"
#include "mmalloc/stream.h"

struct mm_spsc {
  /* producer's line: written by the producer only */
  _Alignas(MMS_CACHE_LINE) _Atomic size_t xtail; /* next slot to write */
  size_t head_cache; /* producer's copy of xhead */
  void **pslots;     /* const after init */
  size_t pmask;      /* const after init */
  /* consumer's line: written by the consumer only */
  _Alignas(MMS_CACHE_LINE) _Atomic size_t xhead; /* next slot to read */
  size_t tail_cache; /* consumer's copy of xtail */
  void **cslots;     /* const after init */
  size_t cmask;      /* const after init */
  /* const after init, read by create/destroy only */
  _Alignas(MMS_CACHE_LINE) void *slots_block; /* malloc'ed slots, or NULL */
};

_Static_assert(offsetof(struct mm_spsc, xtail) % MMS_CACHE_LINE == 0,
               "producer state starts a cache line");
_Static_assert(offsetof(struct mm_spsc, xhead) - offsetof(struct mm_spsc, xtail) >=
                   MMS_CACHE_LINE,
               "producer and consumer indices on separate cache lines");
_Static_assert(offsetof(struct mm_spsc, cmask) + sizeof(size_t) <=
                   offsetof(struct mm_spsc, slots_block),
               "consumer state fits its line");
_Static_assert(offsetof(struct mm_spsc, pmask) + sizeof(size_t) <=
                   offsetof(struct mm_spsc, xhead),
               "producer state fits its line");
_Static_assert(sizeof(struct mm_spsc) % MMS_CACHE_LINE == 0,
               "no other object shares the ring's last line");

/* Round up to a power of two, at least 1; 0 if it would overflow. */
static inline size_t spsc_round_capacity(size_t n) {
  size_t c = 1;
  while (c < n) {
    if (c > ((size_t)-1 >> 2) / sizeof(void *)) return 0;
    c <<= 1;
  }
  return c;
}

/* Initialise q over `slots` (capacity a power of two).  Not concurrent. */
static inline void spsc_init(struct mm_spsc *q, void **slots, size_t capacity) {
  mms_atomic_store_relaxed(&q->xtail, 0);
  mms_atomic_store_relaxed(&q->xhead, 0);
  q->head_cache = 0;
  q->tail_cache = 0;
  q->pslots = q->cslots = slots;
  q->pmask = q->cmask = capacity - 1;
  q->slots_block = NULL;
}

/* Producer. */
static inline bool spsc_push(struct mm_spsc *q, void *item) {
  size_t t = mms_atomic_load_relaxed(&q->xtail);
  if (t - q->head_cache > q->pmask) {
    q->head_cache = mms_atomic_load_acquire(&q->xhead);
    if (t - q->head_cache > q->pmask) return false;
  }
  q->pslots[t & q->pmask] = item;
  mms_atomic_store_release(&q->xtail, t + 1);
  return true;
}

/* Producer.  True when at least one slot is free (refreshes the cache). */
static inline bool spsc_has_space(struct mm_spsc *q) {
  size_t t = mms_atomic_load_relaxed(&q->xtail);
  if (t - q->head_cache <= q->pmask) return true;
  q->head_cache = mms_atomic_load_acquire(&q->xhead);
  return t - q->head_cache <= q->pmask;
}

/* Producer. */
static inline size_t spsc_push_batch(struct mm_spsc *q, void *const *items,
                                     size_t n) {
  size_t t = mms_atomic_load_relaxed(&q->xtail);
  size_t cap = q->pmask + 1;
  size_t room = cap - (t - q->head_cache);
  if (room < n) {
    q->head_cache = mms_atomic_load_acquire(&q->xhead);
    room = cap - (t - q->head_cache);
  }
  size_t k = n < room ? n : room;
  if (k == 0) return 0;
  size_t at = t & q->pmask;
  size_t first = cap - at < k ? cap - at : k; /* up to the end of the ring */
  memcpy(&q->pslots[at], items, first * sizeof(void *));
  memcpy(&q->pslots[0], items + first, (k - first) * sizeof(void *));
  mms_atomic_store_release(&q->xtail, t + k);
  return k;
}

/* Consumer. */
static inline bool spsc_pop(struct mm_spsc *q, void **out) {
  size_t h = mms_atomic_load_relaxed(&q->xhead);
  if (h == q->tail_cache) {
    q->tail_cache = mms_atomic_load_acquire(&q->xtail);
    if (h == q->tail_cache) return false;
  }
  *out = q->cslots[h & q->cmask];
  mms_atomic_store_release(&q->xhead, h + 1);
  return true;
}

/* Consumer.  True when at least one item is ready (refreshes the cache). */
static inline bool spsc_has_item(struct mm_spsc *q) {
  size_t h = mms_atomic_load_relaxed(&q->xhead);
  if (h != q->tail_cache) return true;
  q->tail_cache = mms_atomic_load_acquire(&q->xtail);
  return h != q->tail_cache;
}

/* Consumer. */
static inline size_t spsc_pop_batch(struct mm_spsc *q, void **out, size_t max) {
  size_t h = mms_atomic_load_relaxed(&q->xhead);
  size_t avail = q->tail_cache - h;
  if (avail < max) {
    q->tail_cache = mms_atomic_load_acquire(&q->xtail);
    avail = q->tail_cache - h;
  }
  size_t k = max < avail ? max : avail;
  if (k == 0) return 0;
  size_t cap = q->cmask + 1;
  size_t at = h & q->cmask;
  size_t first = cap - at < k ? cap - at : k;
  memcpy(out, &q->cslots[at], first * sizeof(void *));
  memcpy(out + first, &q->cslots[0], (k - first) * sizeof(void *));
  mms_atomic_store_release(&q->xhead, h + k);
  return k;
}

/* Any thread: a snapshot, clamped to [0, capacity]. */
static inline size_t spsc_size(const struct mm_spsc *q) {
  size_t h = mms_atomic_load_acquire(&((struct mm_spsc *)q)->xhead);
  size_t t = mms_atomic_load_acquire(&((struct mm_spsc *)q)->xtail);
  if (t < h) return 0;
  return t - h > q->pmask + 1 ? q->pmask + 1 : t - h;
}

#endif /* MM_STREAM_SPSC_H */
