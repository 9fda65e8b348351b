/* waiter.c — spin, yield, park: the slow side of every wait in stream/.
 *
 * Layer: stream (below queue.c and the farm).  The protocol and the reasons
 * for the policy are in waiter.h; this file owns the futex calls.
 *
 * Invariants:
 *   xsleeping == 1 only between the owner's announcement and its return
 *   from futex_wait (a waker may see a stale 1 and wake in vain: harmless);
 *   xwake only grows (mod 2^32); only wakers write it, only with an RMW.
 */
#define _GNU_SOURCE
#include "waiter.h"

#include <errno.h>
#include <sched.h>
#include <time.h>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

void waiter_init(waiter_t *w) {
  mms_atomic_store_relaxed(&w->xwake, 0);
  mms_atomic_store_relaxed(&w->xsleeping, 0);
  w->parks = 0;
}

static void futex_wait_bounded(_Atomic uint32_t *word, uint32_t expected,
                               long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
#ifdef __linux__
  /* Returns on a wake, on EAGAIN (word already changed), on a signal or on
   * the timeout: every case sends the caller back to its re-check. */
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, &ts,
          NULL, 0);
#else
  (void)word;
  (void)expected;
  nanosleep(&ts, NULL);
#endif
}

void waiter_wake(waiter_t *w) {
  /* Release: nothing needs to be published through xwake (the data went
   * through the queue); it only has to differ from the sleeper's seq. */
  mms_atomic_fetch_add_release(&w->xwake, 1);
#ifdef __linux__
  syscall(SYS_futex, (uint32_t *)&w->xwake, FUTEX_WAKE_PRIVATE, 1, NULL,
          NULL, 0);
#endif
}

void backoff_wait(backoff_t *b, waiter_t *w, waiter_ready_fn ready,
                  void *arg) {
  unsigned r = b->round;
  if (r < WAITER_SPIN_ROUNDS) {
    unsigned n = r < 5 ? 1u << r : 32u;
    for (unsigned i = 0; i < n; i++) mms_cpu_relax();
    b->round = r + 1;
    return;
  }
  if (r < WAITER_SPIN_ROUNDS + WAITER_YIELD_ROUNDS) {
    sched_yield();
    b->round = r + 1;
    return;
  }
  if (!w) {
    struct timespec ts = {0, WAITER_PARK_NS / 8};
    nanosleep(&ts, NULL);
    return;
  }
  uint32_t seq = mms_atomic_load_acquire(&w->xwake);
  mms_atomic_store_relaxed(&w->xsleeping, 1);
  /* Orders the announcement before the re-check (see waiter.h). */
  mms_atomic_fence_seq_cst();
  if (!ready(arg)) {
    w->parks++;
    futex_wait_bounded(&w->xwake, seq, WAITER_PARK_NS);
  }
  mms_atomic_store_relaxed(&w->xsleeping, 0);
  /* Stay in the park phase: the caller re-checks, and if it was a timeout or
   * a wake meant for another condition, it parks again at once. */
}
