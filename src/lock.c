/* lock.c — a mutex's contended half, and the lock witness: who holds
 * which lock, and the rank rule.
 *
 * Layer: os.  The locks' uncontended paths are inline in lock.h; this file
 * has the mutex's wait (spin, then sleep on the futex word) and keeps, per
 * thread, how many locks of each rank it holds and the last few it took
 * (to name them in a message), and checks every acquisition and release
 * against the rule in lock.h.  Only MM_WITNESS builds call the witness.
 *
 * Invariants (per thread): held[r] == the number of locks of rank r whose
 * xholder is this thread; recent[] holds the most recent of them (at most
 * WITNESS_RECENT; fork holds hundreds, which are only counted).  Per
 * mutex: a thread asleep on it went to sleep on state MM_MUTEX_WAITED, and
 * whoever takes it after a sleeper has been there sets MM_MUTEX_WAITED
 * itself, so the release that matters wakes one (at worst one more than
 * needed).
 */
#include "lock.h"

/* ---- the mutex's contended half -------------------------------------------------- */

/* The spins before sleeping: a local heap's critical sections are short
 * (a carve, a list splice), so the holder is often done within them. */
#define MUTEX_SPINS 64

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#endif
}

void mutex_wait(mm_mutex_t *l) {
  for (unsigned spins = 0; spins < MUTEX_SPINS; spins++) {
    if (atomic_load_relaxed(&l->xstate) == MM_MUTEX_FREE && mutex_grab(l)) return;
    cpu_relax();
  }
  /* Taken as WAITED from here on: this thread may have slept, and others
   * may sleep still, so its release must wake one. */
  while (atomic_exchange_explicit(&l->xstate, MM_MUTEX_WAITED, memory_order_acquire) !=
         MM_MUTEX_FREE)
    os_wait(&l->xstate, MM_MUTEX_WAITED, 0);
}

/* ---- the witness ------------------------------------------------------------------ */

#define WITNESS_RECENT 8

/* Per-thread state only where the witness runs; elsewhere the functions are
 * compiled (and type-checked) but never called, and cost no thread any TLS. */
#if MM_WITNESS
#define WITNESS_TLS __thread
#else
#define WITNESS_TLS
#endif
static WITNESS_TLS uint32_t held[MM_RANK_COUNT];
static WITNESS_TLS const lock_witness_t *recent[WITNESS_RECENT];
static WITNESS_TLS uint32_t nrecent;

void witness_init(lock_witness_t *w, const char *name, lock_rank_t rank, uint32_t index) {
  w->name = name;
  w->rank = (uint32_t)rank;
  w->index = index;
  atomic_store_relaxed(&w->xholder, 0);
}

/* A lock of rank r this thread holds, for the message (NULL: only counted). */
static const lock_witness_t *held_of_rank(uint32_t r) {
  for (uint32_t i = nrecent; i-- > 0;)
    if (recent[i]->rank == r) return recent[i];
  return NULL;
}

static MM_COLD MM_NORETURN void witness_fail(const char *what, const lock_witness_t *w,
                                              uint32_t held_rank) {
  const lock_witness_t *h = held_of_rank(held_rank);
  if (h)
    os_fatal("mmalloc: lock witness: %s: %s %u (rank %u) while holding %s %u (rank %u)\n", what,
             w->name, w->index, w->rank, h->name, h->index, h->rank);
  os_fatal("mmalloc: lock witness: %s: %s %u (rank %u) while holding %u lock(s) of rank %u\n",
           what, w->name, w->index, w->rank, held[held_rank], held_rank);
}

void witness_before(const lock_witness_t *w, int how) {
  uintptr_t self = mm_thread_id();
  if (w->rank == 0 || w->rank >= MM_RANK_COUNT)
    os_fatal("mmalloc: lock witness: lock %s %u has no rank\n", w->name, w->index);
  if (atomic_load_relaxed(&w->xholder) == self)
    witness_fail("acquired again by its holder", w, w->rank);
  if (how != WITNESS_TRY) {
    /* waiting: nothing of a higher rank may be held, nor (outside the
     * ordered fork sequence) another lock of the same rank */
    for (uint32_t r = w->rank + 1; r < MM_RANK_COUNT; r++)
      if (held[r]) witness_fail("lock order reversal, waiting for", w, r);
    if (how == WITNESS_WAIT && held[w->rank])
      witness_fail("waiting for a second lock of a rank", w, w->rank);
    if (how == WITNESS_ORDERED && held[w->rank]) {
      const lock_witness_t *last = held_of_rank(w->rank);
      if (last && last->index >= w->index && w->rank != MM_RANK_THREAD_HEAP)
        witness_fail("fork order broken, waiting for", w, w->rank);
    }
  }
}

void witness_after(lock_witness_t *w) {
  atomic_store_relaxed(&w->xholder, mm_thread_id());
  held[w->rank]++;
  if (nrecent < WITNESS_RECENT) {
    recent[nrecent++] = w;
  } else { /* forget the oldest name; the count stays exact */
    for (uint32_t i = 1; i < WITNESS_RECENT; i++) recent[i - 1] = recent[i];
    recent[WITNESS_RECENT - 1] = w;
  }
}

void witness_release(lock_witness_t *w) {
  uintptr_t self = mm_thread_id();
  if (atomic_load_relaxed(&w->xholder) != self)
    os_fatal("mmalloc: lock witness: %s %u (rank %u) released by a thread that does not hold it\n",
             w->name, w->index, w->rank);
  if (held[w->rank] == 0)
    os_fatal("mmalloc: lock witness: %s %u released but no lock of rank %u is counted\n", w->name,
             w->index, w->rank);
  atomic_store_relaxed(&w->xholder, 0);
  held[w->rank]--;
  for (uint32_t i = nrecent; i-- > 0;)
    if (recent[i] == w) {
      for (uint32_t k = i + 1; k < nrecent; k++) recent[k - 1] = recent[k];
      nrecent--;
      break;
    }
}

bool witness_held(const lock_witness_t *w) {
  return atomic_load_relaxed(&w->xholder) == mm_thread_id();
}

void witness_forget_all(void) {
  for (uint32_t r = 0; r < MM_RANK_COUNT; r++) held[r] = 0;
  nrecent = 0;
}
