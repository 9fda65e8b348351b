/* purger.c — the purge thread: free memory goes back to the OS on time even
 * when no thread calls the allocator any more.
 *
 * Layer: local heap.
 *
 * Without it, purges ride on allocator calls (a thread's heartbeat purges
 * the heaps that are due, decay.c), so a process that frees a burst and
 * then blocks in epoll_wait keeps all of it.  The thread changes who runs
 * the purge, never what is purged or when it is due: the schedule is the
 * heaps' own (xpurge_at, one purge delay after the memory went idle), so
 * memory that is reused within the delay is never purged and faulted back.
 *
 * It exists only in a process that has grown big: the purger is wanted the
 * first time the heaps have taken purge_thread_mib from the OS (slot memory
 * committed plus huge blocks mapped, counted by purger_grew, monotone), or
 * hold that much free memory that may be resident (dirty extents, cached
 * page blocks, cached huge mappings: each heap keeps it in whole MiB in
 * xheld_mib, kept by held_changed in decay.c and large.c, a shift and a
 * compare, no shared write; when a heap's figure grows by a MiB the sum
 * over all heaps is compared with the threshold).  The next call of
 * malloc's general slow path, holding no lock, starts it
 * (local_heap_purger_poke: pthread_create may call malloc).  Only an
 * allocating call does: glibc calls free() while it holds its thread-stack
 * cache lock (freeing the TLS of a cached stack when pthread_join trims
 * the cache), and pthread_create takes that lock, so a free that started
 * the thread would deadlock.  Wanting it at growth rather than when free
 * memory piles up is what lets it run in time for a process that frees a
 * burst and then makes no call at all.  A small program never has a
 * second thread.  The thread blocks
 * every signal, never allocates, takes only local heap locks (one at a
 * time, blocking: it holds nothing else), and sleeps until the earliest
 * deadline, or, with nothing scheduled, until decay_schedule wakes it.
 *
 * Sleeping without a deadline is a handshake on two words: the purger sets
 * xasleep, then looks at every heap's xpurge_at; a heap scheduling a purge
 * sets its xpurge_at, then looks at xasleep; a full fence between the store
 * and the load on both sides means at least one of them sees the other, so
 * either the purger finds the deadline or the scheduler wakes it.
 *
 * Under a cgroup memory limit (cgroup.h) it also looks at the cgroup's
 * usage at least every MM_CGROUP_CHECK_MS while memory waits for a purge,
 * and purges everything at once when the usage nears the limit.
 *
 * Fork: the child has no purger and starts with it off; it is wanted
 * again once the child itself takes purge_thread_mib from the OS, or a
 * heap of the child grows its held memory by a MiB and the total is over
 * the threshold (a child that execs right away never starts one).  States only
 * go OFF -> WANTED -> RUNNING, or WANTED -> FAILED when the OS refuses the
 * thread (purges then ride on allocator calls, as without it).
 */
#include "local_heap_parts.h"

_Atomic(uint32_t) mm_xpurger_state;
static _Atomic(uint32_t) xseq;     /* the futex word: bumped to wake the purger */
static _Atomic(uint32_t) xasleep;  /* 1 while it waits with no deadline */
static _Atomic(uint64_t) xpurges;  /* heap purges the thread ran */
static _Atomic(uint64_t) xwakeups; /* times it woke up */

static _Atomic(uint64_t) xgrown; /* bytes the heaps have taken from the OS (purger_grew) */

/* OFF -> WANTED once the heaps have taken, or together hold, purge_thread_mib. */
static void purger_consider(void) {
  if (atomic_load_relaxed(&mm_xpurger_state) != MM_PURGER_OFF) return;
  long want = option_live(&options.purge_thread_mib);
  if (want <= 0) return;
  uint64_t total = atomic_load_relaxed(&xgrown) >> 20;
  for (uint32_t i = 0; i < mm_nheaps; i++) total += atomic_load_relaxed(&mm_heaps[i].xheld_mib);
  uint32_t off = MM_PURGER_OFF;
  if (total >= (uint64_t)want) atomic_cas_strong_acq_rel(&mm_xpurger_state, &off, MM_PURGER_WANTED);
}

void purger_grew(size_t bytes) {
  if (atomic_load_relaxed(&mm_xpurger_state) != MM_PURGER_OFF) return;
  atomic_fetch_add_relaxed(&xgrown, bytes);
  purger_consider();
}

void purger_held_moved(local_heap_t *h, size_t mib) {
  mm_assert_internal(local_heap_locked(h));
  bool grew = mib > atomic_load_relaxed(&h->xheld_mib);
  atomic_store_relaxed(&h->xheld_mib, mib);
  if (grew) purger_consider();
}

/* Purge every heap whose deadline has passed; the milliseconds until the
 * earliest deadline left, or 0 when no heap has one. */
static uint32_t purge_due_heaps(void) {
  uint64_t purged = 0;
  uint32_t wait = local_heap_purge_due(os_now_ms(), true, &purged);
  atomic_fetch_add_relaxed(&xpurges, purged);
  /* under a cgroup memory limit, look at its usage between deadlines too */
  if (wait > MM_CGROUP_CHECK_MS && cgroup_has_memory_limit()) wait = MM_CGROUP_CHECK_MS;
  return wait;
}

static bool any_scheduled(void) {
  for (uint32_t i = 0; i < mm_nheaps; i++)
    if (atomic_load_relaxed(&mm_heaps[i].xpurge_at)) return true;
  return false;
}

static void *purger_main(void *arg) {
  (void)arg;
  for (;;) {
    uint32_t seq = atomic_load_acquire(&xseq);
    uint32_t wait = purge_due_heaps();
    if (wait) {
      os_wait(&xseq, seq, wait + 1); /* + 1: a deadline is reached, not neared */
    } else {
      atomic_store_relaxed(&xasleep, 1);
      atomic_fence_store_load(); /* store xasleep, then load xpurge_at */
      if (!any_scheduled()) os_wait(&xseq, seq, 0);
      atomic_store_relaxed(&xasleep, 0);
    }
    atomic_fetch_add_relaxed(&xwakeups, 1);
  }
  return NULL;
}

void purger_start(void) {
  uint32_t want = MM_PURGER_WANTED;
  if (!atomic_cas_strong_acq_rel(&mm_xpurger_state, &want, MM_PURGER_RUNNING)) return;
  if (os_thread_start(purger_main, NULL, "mmalloc-purge")) return;
  atomic_store_relaxed(&mm_xpurger_state, MM_PURGER_FAILED);
  if (option_live(&options.verbose))
    os_message("mmalloc: could not start the purge thread; free memory goes back on "
               "allocator calls only\n");
}

void purger_wake(void) {
  atomic_fence_store_load(); /* store xpurge_at, then load xasleep */
  if (!atomic_load_relaxed(&xasleep)) return;
  atomic_fetch_add_relaxed(&xseq, 1);
  os_wake(&xseq);
}

void purger_fork_child(void) {
  atomic_store_relaxed(&xasleep, 0);
  atomic_store_relaxed(&xgrown, 0); /* the child's own growth counts */
  /* Off, whatever it was: a child that goes on to exec should not pay for
   * a thread; one that frees another MiB is considered again. */
  atomic_store_relaxed(&mm_xpurger_state, MM_PURGER_OFF);
}

void local_heap_purger_stats(uint32_t *state, uint64_t *purges, uint64_t *wakeups) {
  *state = atomic_load_relaxed(&mm_xpurger_state);
  *purges = atomic_load_relaxed(&xpurges);
  *wakeups = atomic_load_relaxed(&xwakeups);
}
