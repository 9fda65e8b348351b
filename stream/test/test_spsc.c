/* test_spsc.c — the bounded lock-free SPSC ring (mm_spsc_*): edges in one
 * thread (capacity rounding, full, empty, wrap-around, batches), then two
 * threads moving millions of items with random batch sizes, checking FIFO
 * order and that nothing is lost or duplicated.  Not a benchmark.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "mmalloc/stream.h"
#include "stream_test.h"

#define V(i) ((void *)(uintptr_t)(i))

static void test_edges(void) {
  mm_spsc_t *q = mm_spsc_create(0);
  CHECK("capacity 0 rounds to 1", q && mm_spsc_capacity(q) == 1);
  void *out = NULL;
  CHECK("empty pop", !mm_spsc_pop(q, &out));
  CHECK("push into capacity 1", mm_spsc_push(q, V(7)));
  CHECK("capacity 1 full", !mm_spsc_push(q, V(8)));
  CHECK("size 1", mm_spsc_size(q) == 1);
  CHECK("pop capacity 1", mm_spsc_pop(q, &out) && out == V(7));
  CHECK("empty again", !mm_spsc_pop(q, &out) && mm_spsc_size(q) == 0);
  mm_spsc_destroy(q);

  q = mm_spsc_create(5);
  CHECK("capacity 5 rounds to 8", mm_spsc_capacity(q) == 8);
  CHECK("NULL is an item", mm_spsc_push(q, NULL) && mm_spsc_pop(q, &out) && !out);
  /* Wrap around many times, keeping the ring partly full. */
  uintptr_t next_in = 1, next_out = 1;
  int order_ok = 1;
  for (int round = 0; round < 1000; round++) {
    int k = round % 9; /* 0..8 pushes, some of them refused */
    for (int i = 0; i < k; i++)
      if (mm_spsc_push(q, V(next_in))) next_in++;
    for (int i = 0; i < (round * 7) % 6; i++)
      if (mm_spsc_pop(q, &out)) order_ok &= out == V(next_out++);
    if (mm_spsc_size(q) > 8) order_ok = 0;
  }
  CHECK("FIFO across wrap-around", order_ok);
  while (mm_spsc_pop(q, &out)) order_ok &= out == V(next_out++);
  CHECK("drained in order", order_ok && next_in == next_out);

  /* Fill exactly to capacity. */
  for (uintptr_t i = 0; i < 8; i++) order_ok &= mm_spsc_push(q, V(i + 100));
  CHECK("8 pushes fit", order_ok);
  CHECK("ninth refused", !mm_spsc_push(q, V(1)));
  CHECK("size full", mm_spsc_size(q) == 8);
  void *buf[16];
  CHECK("pop_batch 3", mm_spsc_pop_batch(q, buf, 3) == 3 && buf[0] == V(100) &&
                           buf[2] == V(102));
  void *in[16];
  for (uintptr_t i = 0; i < 16; i++) in[i] = V(200 + i);
  CHECK("push_batch partial: 3 of 5", mm_spsc_push_batch(q, in, 5) == 3);
  CHECK("push_batch when full", mm_spsc_push_batch(q, in, 5) == 0);
  size_t got = mm_spsc_pop_batch(q, buf, 16);
  int ok = got == 8;
  for (size_t i = 0; i < 5 && ok; i++) ok = buf[i] == V(103 + i);
  for (size_t i = 0; i < 3 && ok; i++) ok = buf[5 + i] == V(200 + i);
  CHECK("pop_batch across the wrap, in order", ok);
  CHECK("pop_batch when empty", mm_spsc_pop_batch(q, buf, 4) == 0);
  CHECK("batch of 0", mm_spsc_push_batch(q, in, 0) == 0);
  mm_spsc_destroy(q);
  mm_spsc_destroy(NULL);
}

typedef struct pc {
  mm_spsc_t *q;
  uint64_t n;
  uint64_t seed;
  int errors;
} pc_t;

static void *producer(void *arg) {
  pc_t *p = arg;
  uint64_t rng = p->seed, next = 1;
  void *batch[64];
  unsigned spins = 0;
  while (next <= p->n) {
    uint64_t r = test_rand(&rng);
    if (r & 1) {
      if (mm_spsc_push(p->q, V(next))) next++;
      else test_relax(&spins);
    } else {
      size_t k = 1 + (r >> 8) % 64;
      if (k > p->n - next + 1) k = p->n - next + 1;
      for (size_t i = 0; i < k; i++) batch[i] = V(next + i);
      size_t done = mm_spsc_push_batch(p->q, batch, k);
      if (done == 0) test_relax(&spins);
      next += done;
    }
  }
  return NULL;
}

static void *consumer(void *arg) {
  pc_t *p = arg;
  uint64_t rng = p->seed ^ 0x9e3779b97f4a7c15ULL, expect = 1;
  void *batch[64];
  unsigned spins = 0;
  while (expect <= p->n) {
    uint64_t r = test_rand(&rng);
    if (r & 1) {
      void *out;
      if (mm_spsc_pop(p->q, &out)) {
        if (out != V(expect)) p->errors++;
        expect++;
      } else {
        test_relax(&spins);
      }
    } else {
      size_t got = mm_spsc_pop_batch(p->q, batch, 1 + (r >> 8) % 64);
      if (got == 0) test_relax(&spins);
      for (size_t i = 0; i < got; i++) {
        if (batch[i] != V(expect)) p->errors++;
        expect++;
      }
    }
    if (p->errors > 10) break;
  }
  return NULL;
}

static void test_two_threads(size_t capacity, uint64_t n, uint64_t seed) {
  pc_t p = {mm_spsc_create(capacity), n, seed, 0};
  pthread_t a, b;
  pthread_create(&a, NULL, producer, &p);
  pthread_create(&b, NULL, consumer, &p);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  char name[96];
  snprintf(name, sizeof name, "2 threads, capacity %zu, %llu items, seed %llu",
           capacity, (unsigned long long)n, (unsigned long long)seed);
  CHECK(name, p.errors == 0 && mm_spsc_size(p.q) == 0);
  mm_spsc_destroy(p.q);
}

int main(int argc, char **argv) {
  double s = test_scale(argc, argv);
  test_edges();
  test_two_threads(1, (uint64_t)(20000 * s), 1);
  test_two_threads(8, (uint64_t)(1000000 * s), 2);
  test_two_threads(1024, (uint64_t)(4000000 * s), 3);
  test_two_threads(100, (uint64_t)(1000000 * s), 4);
  return check_summary("test_spsc");
}
