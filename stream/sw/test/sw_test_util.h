/* sw_test_util.h — what the Smith-Waterman tests share: a deterministic
 * PRNG (splitmix64) and random or mutated residue strings.  Not a benchmark.
 */
#ifndef MM_SW_TEST_UTIL_H
#define MM_SW_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "sw_matrix.h"

static uint64_t sw_test_state;

static inline void sw_test_seed(uint64_t seed) { sw_test_state = seed; }

static inline uint64_t sw_test_next(void) {
  uint64_t z = (sw_test_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static inline size_t sw_test_below(size_t n) { return (size_t)(sw_test_next() % n); }

/* Random codes: mostly the 20 standard residues, 1 in 50 one of B Z X *. */
static inline void sw_test_random_codes(uint8_t *out, size_t len) {
  for (size_t i = 0; i < len; i++) {
    out[i] = sw_test_below(50) == 0 ? (uint8_t)(20 + sw_test_below(4))
                                    : (uint8_t)sw_test_below(20);
  }
}

/* A mutated copy of src into out (capacity cap): each position is kept,
 * substituted (1 in 6), deleted (1 in 40), or followed by an insertion
 * (1 in 40).  Returns the length written. */
static inline size_t sw_test_mutate(const uint8_t *src, size_t len, uint8_t *out,
                                    size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < len && n < cap; i++) {
    size_t r = sw_test_below(240);
    if (r < 6) continue; /* deletion */
    out[n++] = r < 46 ? (uint8_t)sw_test_below(20) : src[i];
    if (r >= 234 && n < cap) out[n++] = (uint8_t)sw_test_below(20);
  }
  return n;
}

#endif
