/* lock.h — the allocator's two locks, with ranks and a witness.
 *
 * Layer: os.
 *
 *   mm_mutex_t   a futex lock of one word: a local heap, a registry of
 *                thread heaps, the lists of heaps and pools (taken and
 *                given back with one atomic instruction each when nobody
 *                waits; a waiter spins a little, then sleeps in the kernel)
 *   mm_spin_t    a spin-then-yield lock of one word: a thread heap's
 *                slow-path lock (uncontended but for the rare taker of an
 *                idle heap's pages, so one exchange is all it costs), an
 *                object pool's (held for a splice or a batch)
 *
 * Every lock has a rank.  The rule: a thread that holds a lock of rank r
 * may wait for (block on) a lock of a higher rank only; a lock of the same
 * or a lower rank it may only try (trylock), which never waits and so can
 * never close a cycle of waiting threads.  The one exception is fork
 * (lifecycle.c), which takes every lock, rank by rank, in index order
 * (the _ordered calls).  Ranks, lowest first:
 *
 *   MM_RANK_REGISTRY     a local heap's list of thread heaps (thread_heap.c)
 *   MM_RANK_THREAD_HEAP  a thread heap's slow-path lock: its owner's, or an
 *                        idle one's taken by another thread (try only)
 *   MM_RANK_HEAP_LIST    the list of first-class heaps (heap.c)
 *   MM_RANK_HEAP         a first-class heap: its size-class pools' creation
 *                        and its large blocks
 *   MM_RANK_POOL_LIST    the list of object pools and the threads' pool
 *                        indices (pool.c); secure mode's release
 *                        quarantine (pool_quarantine.c; never held with
 *                        the list's lock but at fork, in index order)
 *   MM_RANK_POOL         an object pool: its depot, blocks and carving
 *   MM_RANK_LOCAL_HEAP   a local heap; a second one only by try
 *
 * The witness (MM_DEBUG >= 2, MM_WITNESS): each lock records its holder's
 * thread id, each thread the ranks it holds, and an acquisition that breaks
 * the rule, a recursive acquisition, or a release by a thread that does
 * not hold the lock aborts with one line naming both locks.  lock_held()
 * backs the "lock held" assertions (mm_assert_internal(mutex_held(&h->lock))).
 * In other builds the witness code is compiled but never called.
 */
#ifndef MM_LOCK_H
#define MM_LOCK_H

#include <pthread.h>
#include <sched.h>

#include "debug.h"
#include "os.h"

MM_HIDDEN_BEGIN

typedef enum lock_rank_e {
  MM_RANK_REGISTRY = 1,
  MM_RANK_THREAD_HEAP = 2,
  MM_RANK_HEAP_LIST = 3,
  MM_RANK_HEAP = 4,
  MM_RANK_POOL_LIST = 5,
  MM_RANK_POOL = 6,
  MM_RANK_LOCAL_HEAP = 7,
  MM_RANK_COUNT = 8
} lock_rank_t;

typedef struct lock_witness_s {
  const char *name;           /* "local heap", "thread heap", "registry" */
  uint32_t rank;              /* lock_rank_t */
  uint32_t index;             /* which one, for messages and the fork order */
  _Atomic(uintptr_t) xholder; /* MM_WITNESS: the holder's mm_thread_id(), or 0 */
} lock_witness_t;

/* xstate: 0 free, 1 held, 2 held and a thread may be asleep on it (its
 * release must wake one).  Only 2 is ever waited on in the kernel. */
typedef struct mm_mutex_s {
  _Atomic(uint32_t) xstate;
  lock_witness_t w;
} mm_mutex_t;
#define MM_MUTEX_FREE 0u
#define MM_MUTEX_HELD 1u
#define MM_MUTEX_WAITED 2u

typedef struct mm_spin_s {
  _Atomic(uint32_t) xheld;
  lock_witness_t w;
} mm_spin_t;

/* how a lock is taken, for the witness */
enum { WITNESS_WAIT = 0, WITNESS_TRY = 1, WITNESS_ORDERED = 2 };

void witness_init(lock_witness_t *w, const char *name, lock_rank_t rank, uint32_t index);
void witness_before(const lock_witness_t *w, int how); /* checks, before waiting */
void witness_after(lock_witness_t *w);                  /* records, once it is held */
void witness_release(lock_witness_t *w);
bool witness_held(const lock_witness_t *w);
void witness_forget_all(void); /* a forked child's thread: it holds nothing now */

/* ---- mutex ------------------------------------------------------------------- */
/* The contended half of mutex_lock (lock.c): spin a little, then sleep. */
void mutex_wait(mm_mutex_t *l);
MM_INLINE bool mutex_grab(mm_mutex_t *l) {
  uint32_t expected = MM_MUTEX_FREE;
  return atomic_compare_exchange_strong_explicit(&l->xstate, &expected, MM_MUTEX_HELD,
                                                 memory_order_acquire, memory_order_relaxed);
}
MM_INLINE void mutex_init(mm_mutex_t *l, const char *name, lock_rank_t rank, uint32_t index) {
  atomic_store_relaxed(&l->xstate, MM_MUTEX_FREE);
  witness_init(&l->w, name, rank, index);
}
MM_INLINE void mutex_lock(mm_mutex_t *l) {
  if (MM_WITNESS) witness_before(&l->w, WITNESS_WAIT);
  if (unlikely(!mutex_grab(l))) mutex_wait(l);
  if (MM_WITNESS) witness_after(&l->w);
}
/* mutex_lock that says whether it had to wait (the lock was held): for the
 * statistics of contention (the witness checks it as a wait, which is what
 * it may be). */
MM_INLINE bool mutex_lock_waited(mm_mutex_t *l) {
  if (MM_WITNESS) witness_before(&l->w, WITNESS_WAIT);
  bool waited = false;
  if (unlikely(!mutex_grab(l))) {
    mutex_wait(l);
    waited = true;
  }
  if (MM_WITNESS) witness_after(&l->w);
  return waited;
}
/* fork only: every lock of a rank, in index order */
MM_INLINE void mutex_lock_ordered(mm_mutex_t *l) {
  if (MM_WITNESS) witness_before(&l->w, WITNESS_ORDERED);
  if (unlikely(!mutex_grab(l))) mutex_wait(l);
  if (MM_WITNESS) witness_after(&l->w);
}
MM_INLINE bool mutex_trylock(mm_mutex_t *l) {
  if (MM_WITNESS) witness_before(&l->w, WITNESS_TRY);
  if (!mutex_grab(l)) return false;
  if (MM_WITNESS) witness_after(&l->w);
  return true;
}
MM_INLINE void mutex_unlock(mm_mutex_t *l) {
  if (MM_WITNESS) witness_release(&l->w);
  if (unlikely(atomic_exchange_explicit(&l->xstate, MM_MUTEX_FREE, memory_order_release) ==
               MM_MUTEX_WAITED))
    os_wake(&l->xstate);
}
/* For assertions: true when the witness is off. */
MM_INLINE bool mutex_held(const mm_mutex_t *l) { return !MM_WITNESS || witness_held(&l->w); }
/* In a forked child (which holds every lock): a fresh, unlocked mutex. */
MM_INLINE void mutex_reinit(mm_mutex_t *l) {
  atomic_store_relaxed(&l->xstate, MM_MUTEX_FREE);
  atomic_store_relaxed(&l->w.xholder, 0);
}
/* ---- spin lock ------------------------------------------------------------------ */

MM_INLINE void spin_init(mm_spin_t *l, const char *name, lock_rank_t rank, uint32_t index) {
  atomic_store_relaxed(&l->xheld, 0);
  witness_init(&l->w, name, rank, index);
}
MM_INLINE void spin_lock_how(mm_spin_t *l, int how) {
  if (MM_WITNESS) witness_before(&l->w, how);
  for (unsigned spins = 0; atomic_exchange_acquire(&l->xheld, 1) != 0; spins++)
    if (spins >= 64) sched_yield(); /* the holder runs a bounded walk */
  if (MM_WITNESS) witness_after(&l->w);
}
MM_INLINE void spin_lock(mm_spin_t *l) { spin_lock_how(l, WITNESS_WAIT); }
MM_INLINE void spin_lock_ordered(mm_spin_t *l) { spin_lock_how(l, WITNESS_ORDERED); }
MM_INLINE bool spin_trylock(mm_spin_t *l) {
  if (atomic_load_relaxed(&l->xheld) != 0 || atomic_exchange_acquire(&l->xheld, 1) != 0)
    return false;
  if (MM_WITNESS) witness_after(&l->w);
  return true;
}
MM_INLINE void spin_unlock(mm_spin_t *l) {
  if (MM_WITNESS) witness_release(&l->w);
  atomic_store_release(&l->xheld, 0);
}
MM_INLINE bool spin_held(const mm_spin_t *l) { return !MM_WITNESS || witness_held(&l->w); }
/* In a forked child: the lock is free (its holder, if any, is not here). */
MM_INLINE void spin_reset(mm_spin_t *l) {
  atomic_store_relaxed(&l->xheld, 0);
  atomic_store_relaxed(&l->w.xholder, 0);
}

MM_HIDDEN_END

#endif
