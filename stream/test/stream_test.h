/* stream_test.h — helpers shared by the streaming module's tests: a scale
 * that shrinks under ThreadSanitizer, a deterministic PRNG, a few cycles of
 * busy work, and a polite spin for test threads.  Not a benchmark: nothing
 * here measures time.
 */
#ifndef MM_STREAM_TEST_H
#define MM_STREAM_TEST_H

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

#if defined(__SANITIZE_THREAD__)
#define STREAM_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STREAM_TEST_TSAN 1
#endif
#endif
#ifndef STREAM_TEST_TSAN
#define STREAM_TEST_TSAN 0
#endif

/* Item counts are multiplied by this; TSan runs ~10x slower. */
static inline double test_scale(int argc, char **argv) {
  double s = argc > 1 ? atof(argv[argc - 1]) : 1.0;
  if (s <= 0) s = 1.0;
  return STREAM_TEST_TSAN ? s / 10 : s;
}

static inline uint64_t test_rand(uint64_t *state) { /* xorshift64* */
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* A little work the compiler cannot remove. */
static inline uint64_t test_work(uint64_t seed, unsigned iters) {
  volatile uint64_t acc = seed;
  for (unsigned i = 0; i < iters; i++) acc = acc * 6364136223846793005ULL + 1;
  return acc;
}

/* Test threads that spin on a condition: yield every so often so that the
 * test also finishes quickly when threads outnumber cores. */
static inline void test_relax(unsigned *spins) {
  if (++*spins % 64 == 0) sched_yield();
}

#endif
