/* waiter.h — how a streaming thread waits: spin a little, yield a little,
 * then park on a futex until a neighbour wakes it.
 *
 * Layer: stream, below the queues' blocking calls and the farm's loops.
 *
 * Every thread that may wait (a farm node, or each side of a standalone
 * mm_queue_t) owns one waiter_t.  Whoever makes progress the owner may be
 * waiting for (pushes into a queue the owner pops, or pops from a queue the
 * owner pushes) calls waiter_notify() on the owner's waiter afterwards.
 *
 * Policy, and why (the machine this was designed on has 2 cores and runs
 * farms of 8 workers, i.e. 10 threads):
 *   1. spin: WAITER_SPIN_ROUNDS rounds of 1, 2, 4 ... 32 `pause`s (a few µs).
 *      With a core each, the partner usually answers within a queue
 *      round-trip, and a context switch (several µs) would cost more.
 *   2. yield: WAITER_YIELD_ROUNDS sched_yield() calls.  Cheap when no one
 *      else is runnable; when threads outnumber cores it hands the core to
 *      the thread we are waiting for.
 *   3. park: futex wait.  A parked thread costs nothing, which is what makes
 *      oversubscription work: 8 idle workers that kept spinning or yielding
 *      would take most of 2 cores from the emitter that feeds them.
 *
 * Park/notify protocol (Dekker-style, on the waiter's two words):
 *   owner:  seq = xwake (acquire); xsleeping = 1; fence(seq_cst);
 *           re-check the condition; if still unmet futex_wait(xwake, seq,
 *           WAITER_PARK_NS); xsleeping = 0.
 *   waker:  (its push/pop, i.e. a release store in the queue);
 *           if (xsleeping, relaxed) { xwake += 1 (release); futex_wake }.
 *   The owner's fence orders its xsleeping store before its re-check; the
 *   futex compares xwake with seq inside the kernel, so a wake between the
 *   re-check and the sleep makes futex_wait return at once.  The waker has
 *   no fence (the queue fast path must not pay one), so its load of
 *   xsleeping can be satisfied before its queue store is visible: the store
 *   buffer window of a few ns can lose one wake-up.  This race is tolerated
 *   because every park is bounded by WAITER_PARK_NS: a lost wake-up costs
 *   at most that much latency, never progress.
 *
 * waiter_notify() is one relaxed load of a line the owner writes only when
 * it parks, so while nobody parks the notify costs a cache hit.
 */
#ifndef MM_STREAM_WAITER_H
#define MM_STREAM_WAITER_H

#include <stdbool.h>
#include <stdint.h>

#include "atomic.h"

/* Spin rounds before yielding (round r spins min(2^r, 32) pauses). */
#define WAITER_SPIN_ROUNDS 10
/* sched_yield() calls before parking. */
#define WAITER_YIELD_ROUNDS 8
/* Longest park (ns): bounds the cost of the tolerated lost wake-up. */
#define WAITER_PARK_NS 1000000L

typedef struct waiter {
  /* the futex word; wakers bump it */
  _Alignas(MMS_CACHE_LINE) _Atomic uint32_t xwake;
  _Atomic uint32_t xsleeping; /* 1 while the owner may be in futex_wait */
  uint64_t parks;             /* owner only: futex waits entered */
} waiter_t;

_Static_assert(sizeof(waiter_t) == MMS_CACHE_LINE,
               "a waiter fills one cache line: neighbours read it on every notify");

/* The state of one wait (one call of a blocking operation). */
typedef struct backoff {
  unsigned round;
} backoff_t;

/* True when the awaited condition holds (or the wait must end anyway). */
typedef bool (*waiter_ready_fn)(void *arg);

void waiter_init(waiter_t *w);
/* Slow path of waiter_notify: wake the parked owner. */
void waiter_wake(waiter_t *w);
/* Wait one step of the policy; the caller re-checks its condition after.
 * w may be NULL (spin and yield, then sleep WAITER_PARK_NS / 8). */
void backoff_wait(backoff_t *b, waiter_t *w, waiter_ready_fn ready, void *arg);

/* Fast path: a relaxed load; waiter_wake only when the owner parks. */
static inline void waiter_notify(waiter_t *w) {
  if (w && mms_atomic_load_relaxed(&w->xsleeping)) waiter_wake(w);
}

#endif /* MM_STREAM_WAITER_H */
