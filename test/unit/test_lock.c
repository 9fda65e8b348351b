/* test_lock.c — the allocator's mutex (lock.h, lock.c): mutual exclusion
 * under contention, trylock, the wait that lock_waited reports, a waiter
 * that went to sleep in the kernel woken by the release, and the word left
 * free.  Not a benchmark: the sleeps only make sure a waiter is waiting.
 *
 * Usage: unit_lock [threads] [rounds]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "lock.h"

static mm_mutex_t lock;
static uint64_t counter;          /* written only under lock */
static _Atomic(uint32_t) xinside; /* threads between lock and unlock */
static _Atomic(uint32_t) xoverlaps;
static unsigned rounds = 200000;

/* Each round: lock (every 8th by trylock until it succeeds), check that no
 * one else is inside, a plain read-modify-write of the counter, unlock. */
static void *hammer(void *arg) {
  unsigned id = (unsigned)(uintptr_t)arg;
  for (unsigned i = 0; i < rounds; i++) {
    if ((i + id) % 8 == 0) {
      while (!mutex_trylock(&lock)) sched_yield();
    } else {
      mutex_lock(&lock);
    }
    if (atomic_fetch_add_relaxed(&xinside, 1) != 0) atomic_fetch_add_relaxed(&xoverlaps, 1);
    uint64_t c = counter;
    if (i % 1024 == 0) sched_yield(); /* now and then the holder is descheduled */
    counter = c + 1;
    atomic_fetch_sub_relaxed(&xinside, 1);
    mutex_unlock(&lock);
  }
  return NULL;
}

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* Another thread's trylock (the holder's own would be a recursive
 * acquisition, which the witness of the checked builds refuses). */
static void *try_once(void *arg) {
  (void)arg;
  if (!mutex_trylock(&lock)) return NULL;
  mutex_unlock(&lock);
  return &lock;
}

static _Atomic(uint32_t) xstarted, xwaited_result, xdone;

static void *waiter(void *arg) {
  (void)arg;
  atomic_store_relaxed(&xstarted, 1);
  bool waited = mutex_lock_waited(&lock);
  atomic_store_relaxed(&xwaited_result, waited ? 1 : 2);
  mutex_unlock(&lock);
  atomic_store_relaxed(&xdone, 1);
  return NULL;
}

int main(int argc, char **argv) {
  unsigned nthreads = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
  if (argc > 2) rounds = (unsigned)atoi(argv[2]);
  if (nthreads < 2 || nthreads > 64 || rounds == 0) {
    fprintf(stderr, "usage: unit_lock [threads 2-64] [rounds]\n");
    return 2;
  }
  mutex_init(&lock, "test", MM_RANK_LOCAL_HEAP, 0);

  /* trylock */
  CHECK("a free mutex: trylock takes it", mutex_trylock(&lock));
  pthread_t other;
  void *got = NULL;
  REQUIRE("thread started", pthread_create(&other, NULL, try_once, NULL) == 0);
  pthread_join(other, &got);
  CHECK("a held mutex: another thread's trylock fails", got == NULL);
  mutex_unlock(&lock);
  CHECK("released: the word is free", atomic_load_relaxed(&lock.xstate) == MM_MUTEX_FREE);
  CHECK("an uncontended lock_waited did not wait", !mutex_lock_waited(&lock));
  mutex_unlock(&lock);

  /* A waiter that sleeps: the holder keeps the lock far longer than the
   * spins, then its release must wake the waiter. */
  mutex_lock(&lock);
  pthread_t w;
  CHECK("waiter started", pthread_create(&w, NULL, waiter, NULL) == 0);
  while (!atomic_load_relaxed(&xstarted)) sched_yield();
  for (int i = 0; i < 5000 && atomic_load_relaxed(&lock.xstate) != MM_MUTEX_WAITED; i++) sleep_ms(1);
  CHECK("a waiter past its spins marks the word", atomic_load_relaxed(&lock.xstate) == MM_MUTEX_WAITED);
  sleep_ms(20); /* asleep in the kernel by now */
  CHECK("the waiter waits while the lock is held", !atomic_load_relaxed(&xdone));
  mutex_unlock(&lock);
  for (int i = 0; i < 5000 && !atomic_load_relaxed(&xdone); i++) sleep_ms(1);
  CHECK("the release woke the sleeping waiter", atomic_load_relaxed(&xdone));
  pthread_join(w, NULL);
  CHECK("lock_waited says it waited", atomic_load_relaxed(&xwaited_result) == 1);
  CHECK("after the waiter: the word is free", atomic_load_relaxed(&lock.xstate) == MM_MUTEX_FREE);

  /* Contention: every increment counted, no two threads inside at once. */
  pthread_t t[64];
  for (unsigned i = 0; i < nthreads; i++)
    REQUIRE("thread started", pthread_create(&t[i], NULL, hammer, (void *)(uintptr_t)i) == 0);
  for (unsigned i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
  fprintf(stderr, "unit_lock: %u threads x %u rounds: counter %llu, %u overlaps\n", nthreads,
          rounds, (unsigned long long)counter, atomic_load_relaxed(&xoverlaps));
  CHECK("no two holders at once", atomic_load_relaxed(&xoverlaps) == 0);
  CHECK("every increment counted", counter == (uint64_t)nthreads * rounds);
  CHECK("after the contention: the word is free",
        atomic_load_relaxed(&lock.xstate) == MM_MUTEX_FREE);

  /* A forked child's reinit: a mutex held at fork is free again. */
  mutex_lock(&lock);
  mutex_reinit(&lock);
  CHECK("reinit frees a held mutex", mutex_trylock(&lock));
  mutex_unlock(&lock);
  return check_summary("unit_lock");
}
