/* test_queue.c — mm_queue_t over both kinds (the lock-free ring and the
 * mutex + condition-variable baseline) passing the same tests, plus the
 * mm_lockq_* calls directly (many producers and consumers).  Not a
 * benchmark.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mmalloc/stream.h"
#include "stream_test.h"

#define V(i) ((void *)(uintptr_t)(i))

static void test_edges(mm_queue_kind_t kind) {
  char name[80];
  const char *k = mm_queue_kind_name(kind);
  mm_queue_t *q = mm_queue_create(kind, 3);
  snprintf(name, sizeof name, "%s: create", k);
  CHECK(name, q && mm_queue_kind(q) == kind);
  void *out;
  snprintf(name, sizeof name, "%s: empty", k);
  CHECK(name, !mm_queue_try_pop(q, &out));
  int ok = 1;
  for (uintptr_t i = 0; i < 4; i++) ok &= mm_queue_try_push(q, V(i));
  snprintf(name, sizeof name, "%s: capacity 3 rounds to 4", k);
  CHECK(name, ok && !mm_queue_try_push(q, V(9)));
  for (uintptr_t i = 0; i < 4; i++) ok &= mm_queue_try_pop(q, &out) && out == V(i);
  snprintf(name, sizeof name, "%s: FIFO", k);
  CHECK(name, ok && !mm_queue_try_pop(q, &out));
  /* Blocking calls that need not block. */
  snprintf(name, sizeof name, "%s: blocking push/pop", k);
  CHECK(name, mm_queue_push(q, V(5)) == 0 && mm_queue_pop(q, &out) == 0 && out == V(5));
  /* Close: items left are still popped, then ECANCELED; pushes fail. */
  mm_queue_push(q, V(6));
  mm_queue_close(q);
  snprintf(name, sizeof name, "%s: pop after close drains", k);
  CHECK(name, mm_queue_pop(q, &out) == 0 && out == V(6));
  snprintf(name, sizeof name, "%s: pop after close, empty", k);
  CHECK(name, mm_queue_pop(q, &out) == ECANCELED);
  mm_queue_destroy(q);
}

typedef struct pc {
  mm_queue_t *q;
  uint64_t n;
  int errors;
  _Atomic int xstarted;
} pc_t;

static void *producer(void *arg) {
  pc_t *p = arg;
  for (uint64_t i = 1; i <= p->n; i++)
    if (mm_queue_push(p->q, V(i)) != 0) p->errors++;
  return NULL;
}

static void *consumer(void *arg) {
  pc_t *p = arg;
  for (uint64_t i = 1; i <= p->n; i++) {
    void *out;
    if (mm_queue_pop(p->q, &out) != 0 || out != V(i)) p->errors++;
  }
  return NULL;
}

static void test_two_threads(mm_queue_kind_t kind, size_t cap, uint64_t n) {
  pc_t p = {.q = mm_queue_create(kind, cap), .n = n};
  pthread_t a, b;
  pthread_create(&a, NULL, producer, &p);
  pthread_create(&b, NULL, consumer, &p);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  char name[96];
  snprintf(name, sizeof name, "%s: blocking, capacity %zu, %llu items",
           mm_queue_kind_name(kind), cap, (unsigned long long)n);
  CHECK(name, p.errors == 0);
  mm_queue_destroy(p.q);
}

static void *blocked_pop(void *arg) {
  pc_t *p = arg;
  void *out;
  atomic_store(&p->xstarted, 1);
  if (mm_queue_pop(p->q, &out) != ECANCELED) p->errors++;
  return NULL;
}

static void *blocked_push(void *arg) {
  pc_t *p = arg;
  atomic_store(&p->xstarted, 1);
  int rc = 0;
  while (rc == 0) rc = mm_queue_push(p->q, V(1)); /* fills, then blocks */
  if (rc != ECANCELED) p->errors++;
  return NULL;
}

/* A thread blocked in pop (or push) is released by close, whether it is
 * still spinning or already parked (we sleep a while to let it park). */
static void test_close_wakes(mm_queue_kind_t kind, void *(*fn)(void *)) {
  pc_t p = {.q = mm_queue_create(kind, 4)};
  pthread_t t;
  pthread_create(&t, NULL, fn, &p);
  while (!atomic_load(&p.xstarted)) sched_yield();
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
  mm_queue_close(p.q);
  pthread_join(t, NULL);
  char name[80];
  snprintf(name, sizeof name, "%s: close releases a blocked %s",
           mm_queue_kind_name(kind), fn == blocked_pop ? "pop" : "push");
  CHECK(name, p.errors == 0);
  mm_queue_destroy(p.q);
}

/* mm_lockq_t is safe for many producers and many consumers. */
typedef struct mpmc {
  mm_lockq_t *q;
  uint64_t per_producer;
  _Atomic uint64_t xsum;
  _Atomic uint64_t xcount;
} mpmc_t;

static void *mp_producer(void *arg) {
  mpmc_t *m = arg;
  for (uint64_t i = 1; i <= m->per_producer; i++) mm_lockq_push(m->q, V(i));
  return NULL;
}

static void *mp_consumer(void *arg) {
  mpmc_t *m = arg;
  void *out;
  while (mm_lockq_pop(m->q, &out) == 0) {
    atomic_fetch_add(&m->xsum, (uint64_t)(uintptr_t)out);
    atomic_fetch_add(&m->xcount, 1);
  }
  return NULL;
}

static void test_lockq_mpmc(uint64_t per) {
  mpmc_t m = {.q = mm_lockq_create(16), .per_producer = per};
  pthread_t prod[3], cons[3];
  for (int i = 0; i < 3; i++) pthread_create(&prod[i], NULL, mp_producer, &m);
  for (int i = 0; i < 3; i++) pthread_create(&cons[i], NULL, mp_consumer, &m);
  for (int i = 0; i < 3; i++) pthread_join(prod[i], NULL);
  mm_lockq_close(m.q); /* consumers drain what is left, then stop */
  for (int i = 0; i < 3; i++) pthread_join(cons[i], NULL);
  CHECK("lockq 3x3: every item once",
        atomic_load(&m.xcount) == 3 * per &&
            atomic_load(&m.xsum) == 3 * per * (per + 1) / 2);
  void *out;
  CHECK("lockq: push after close fails", mm_lockq_push(m.q, V(1)) == ECANCELED &&
                                             !mm_lockq_try_push(m.q, V(1)) &&
                                             !mm_lockq_try_pop(m.q, &out));
  mm_lockq_destroy(m.q);
}

int main(int argc, char **argv) {
  double s = test_scale(argc, argv);
  mm_queue_kind_t kinds[] = {MM_QUEUE_LOCKFREE, MM_QUEUE_MUTEX};
  for (int i = 0; i < 2; i++) {
    test_edges(kinds[i]);
    test_two_threads(kinds[i], 1, (uint64_t)(5000 * s));
    test_two_threads(kinds[i], 64, (uint64_t)(500000 * s));
    test_close_wakes(kinds[i], blocked_pop);
    test_close_wakes(kinds[i], blocked_push);
  }
  test_lockq_mpmc((uint64_t)(100000 * s));

  mm_queue_kind_t k;
  CHECK("parse lockfree", mm_queue_kind_parse("lockfree", &k) == 0 && k == MM_QUEUE_LOCKFREE);
  CHECK("parse mutex", mm_queue_kind_parse("MUTEX", &k) == 0 && k == MM_QUEUE_MUTEX);
  CHECK("parse junk", mm_queue_kind_parse("tbb", &k) == EINVAL);
  CHECK("names", strcmp(mm_queue_kind_name(MM_QUEUE_MUTEX), "mutex") == 0 &&
                     strcmp(mm_queue_kind_name(MM_QUEUE_LOCKFREE), "lockfree") == 0);
  return check_summary("test_queue");
}
