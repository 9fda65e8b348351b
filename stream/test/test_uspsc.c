/* test_uspsc.c — the unbounded SPSC queue (mm_uspsc_*): growth past one
 * ring, FIFO across rings, recycling (in a steady state no ring is
 * allocated any more), and two threads with random batches.  Not a
 * benchmark.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "mmalloc/stream.h"
#include "stream_test.h"

#define V(i) ((void *)(uintptr_t)(i))

static void test_growth(void) {
  mm_uspsc_t *q = mm_uspsc_create(16, 4);
  CHECK("create", q && mm_uspsc_rings_allocated(q) == 1);
  void *out;
  CHECK("empty", !mm_uspsc_pop(q, &out));
  int ok = 1;
  for (uintptr_t i = 1; i <= 10000; i++) ok &= mm_uspsc_push(q, V(i));
  CHECK("10000 pushes never refused", ok);
  CHECK("grew by rings", mm_uspsc_rings_allocated(q) >= 10000 / 16);
  for (uintptr_t i = 1; i <= 10000; i++) ok &= mm_uspsc_pop(q, &out) && out == V(i);
  CHECK("FIFO across 625 rings", ok);
  CHECK("empty after", !mm_uspsc_pop(q, &out));
  mm_uspsc_destroy(q);
}

static void test_batches(void) {
  mm_uspsc_t *q = mm_uspsc_create(8, 2);
  void *in[100], *buf[100];
  uintptr_t next_in = 1, next_out = 1;
  uint64_t rng = 7;
  int ok = 1;
  for (int round = 0; round < 2000; round++) {
    size_t k = test_rand(&rng) % 40;
    for (size_t i = 0; i < k; i++) in[i] = V(next_in + i);
    ok &= mm_uspsc_push_batch(q, in, k) == k;
    next_in += k;
    size_t got = mm_uspsc_pop_batch(q, buf, test_rand(&rng) % 45);
    for (size_t i = 0; i < got; i++) ok &= buf[i] == V(next_out++);
  }
  size_t got;
  while ((got = mm_uspsc_pop_batch(q, buf, 100)))
    for (size_t i = 0; i < got; i++) ok &= buf[i] == V(next_out++);
  CHECK("batches across rings, FIFO, nothing lost", ok && next_in == next_out);
  mm_uspsc_destroy(q);
}

/* One thread, a bounded number of items in flight: after the first cycle
 * the producer always finds a recycled ring, so no ring is allocated. */
static void test_steady_state(void) {
  mm_uspsc_t *q = mm_uspsc_create(16, 4);
  void *out;
  uintptr_t next_out = 0, next_in = 0;
  int ok = 1;
  uint64_t after_warmup = 0;
  for (int cycle = 0; cycle < 1000; cycle++) {
    for (int i = 0; i < 50; i++) ok &= mm_uspsc_push(q, V(next_in++));
    for (int i = 0; i < 50; i++) ok &= mm_uspsc_pop(q, &out) && out == V(next_out++);
    if (cycle == 0) after_warmup = mm_uspsc_rings_allocated(q);
  }
  CHECK("steady state: FIFO", ok);
  CHECK("steady state: no ring allocated after warm-up",
        mm_uspsc_rings_allocated(q) == after_warmup);
  CHECK("warm-up needed few rings", after_warmup <= 5);
  /* A burst beyond the cache allocates, then the queue settles again. */
  for (int i = 0; i < 1000; i++) ok &= mm_uspsc_push(q, V(i));
  for (int i = 0; i < 1000; i++) ok &= mm_uspsc_pop(q, &out) && out == V(i);
  uint64_t after_burst = mm_uspsc_rings_allocated(q);
  CHECK("burst grew the chain", after_burst > after_warmup);
  for (int cycle = 0; cycle < 100; cycle++) {
    for (int i = 0; i < 50; i++) ok &= mm_uspsc_push(q, V(i));
    for (int i = 0; i < 50; i++) ok &= mm_uspsc_pop(q, &out) && out == V(i);
  }
  CHECK("settles again after the burst", ok && mm_uspsc_rings_allocated(q) == after_burst);
  mm_uspsc_destroy(q);
}

typedef struct pc {
  mm_uspsc_t *q;
  uint64_t n;
  uint64_t window;        /* 0: unbounded */
  _Atomic uint64_t xpopped;
  int errors;
} pc_t;

static void *producer(void *arg) {
  pc_t *p = arg;
  uint64_t rng = 11, next = 1;
  void *batch[32];
  unsigned spins = 0;
  while (next <= p->n) {
    if (p->window) {
      while (next - 1 - atomic_load_explicit(&p->xpopped, memory_order_acquire) >
             p->window - 32)
        test_relax(&spins);
    }
    size_t k = 1 + test_rand(&rng) % 32;
    if (k > p->n - next + 1) k = p->n - next + 1;
    for (size_t i = 0; i < k; i++) batch[i] = V(next + i);
    if (k == 1) {
      if (!mm_uspsc_push(p->q, batch[0])) p->errors++;
    } else if (mm_uspsc_push_batch(p->q, batch, k) != k) {
      p->errors++;
    }
    next += k;
  }
  return NULL;
}

static void *consumer(void *arg) {
  pc_t *p = arg;
  uint64_t rng = 13, expect = 1;
  void *batch[48];
  unsigned spins = 0;
  while (expect <= p->n && p->errors < 10) {
    size_t got;
    if (test_rand(&rng) & 1) {
      got = mm_uspsc_pop(p->q, batch) ? 1 : 0;
    } else {
      got = mm_uspsc_pop_batch(p->q, batch, 1 + test_rand(&rng) % 48);
    }
    if (got == 0) test_relax(&spins);
    for (size_t i = 0; i < got; i++) p->errors += batch[i] != V(expect++);
    atomic_store_explicit(&p->xpopped, expect - 1, memory_order_release);
  }
  return NULL;
}

static void run_two_threads(pc_t *p) {
  pthread_t a, b;
  pthread_create(&a, NULL, producer, p);
  pthread_create(&b, NULL, consumer, p);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
}

int main(int argc, char **argv) {
  double s = test_scale(argc, argv);
  test_growth();
  test_batches();
  test_steady_state();

  pc_t p = {.q = mm_uspsc_create(64, 4), .n = (uint64_t)(2000000 * s)};
  run_two_threads(&p);
  CHECK("2 threads, unbounded: FIFO, nothing lost", p.errors == 0);
  mm_uspsc_destroy(p.q);

  /* At most `window` items in flight: the chain never needs more than
   * window/64 + 2 rings, and the cache (8) holds every drained ring, so the
   * number of rings ever allocated stays small however long the stream. */
  pc_t w = {.q = mm_uspsc_create(64, 8), .n = (uint64_t)(2000000 * s), .window = 128};
  run_two_threads(&w);
  CHECK("2 threads, bounded window: FIFO", w.errors == 0);
  uint64_t rings = mm_uspsc_rings_allocated(w.q);
  CHECK("2 threads, bounded window: rings recycled", rings <= 9);
  fprintf(stderr, "rings allocated for %llu items: %llu\n",
          (unsigned long long)w.n, (unsigned long long)rings);
  mm_uspsc_destroy(w.q);
  return check_summary("test_uspsc");
}
