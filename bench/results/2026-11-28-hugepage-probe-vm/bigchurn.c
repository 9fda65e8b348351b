/* bigchurn.c — big buffers replaced at random: 20 slots, each new buffer
 * 5-25 MiB (uniform), filled by the program (as C++'s value-initialised
 * new[] zero-fills), allocated before the one it replaces is freed; 2,000
 * replacements, fixed seed.  What it measures is how much of that memory
 * the allocator has to fault in fresh, and what a fresh page costs.
 *   gcc -O2 -o bigchurn bigchurn.c && bin/mmrun ./bigchurn
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 42;
static uint64_t next(void) { /* xorshift64* */
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  return rng * 2685821657736338717ull;
}

int main(void) {
  enum { SLOTS = 20, ROUNDS = 2000 };
  const size_t lo = (size_t)5 << 20, hi = (size_t)25 << 20;
  char *slot[SLOTS] = {0};
  uint64_t sum = 0;
  for (int i = 0; i < ROUNDS; i++) {
    int k = (int)(next() % SLOTS);
    size_t n = lo + next() % (hi - lo + 1);
    char *p = malloc(n);
    if (!p) { fprintf(stderr, "bigchurn: out of memory at %zu bytes\n", n); return 1; }
    memset(p, 1 + i % 255, n); /* not 0: a compiler may turn malloc+memset(0) into calloc */
    p[n / 2] = (char)i;
    free(slot[k]);
    slot[k] = p;
    sum += (unsigned char)p[n / 2] + (unsigned char)p[0];
  }
  for (int k = 0; k < SLOTS; k++) free(slot[k]);
  printf("bigchurn: checksum %llu\n", (unsigned long long)sum);
  return 0;
}
