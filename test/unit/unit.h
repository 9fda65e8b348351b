/* unit.h — what the unit tests of the allocator's structures share: a
 * seeded generator and NEGATIVE, the shape of every check that a checker
 * catches a planted corruption.  Include after check.h. */
#ifndef MM_TEST_UNIT_H
#define MM_TEST_UNIT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* xorshift64: seed rng with an odd value, then next_rand(). */
static uint64_t rng;
__attribute__((unused)) static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* The checkers' one-line reason, and whether NEGATIVE prints each one. */
__attribute__((unused)) static char why[256];
__attribute__((unused)) static bool verbose;

/* A corruption the checker must catch: `valid` (a checker call that
 * writes `why`) accepts the structure before, rejects it after `corrupt`
 * with a reason containing `fragment`, and accepts it again once `restore`
 * ran. */
#define NEGATIVE(name, valid, corrupt, restore, fragment)                              \
  do {                                                                                 \
    bool ok_ = (valid);                                                                \
    if (!ok_) fprintf(stderr, "  %s: rejected before the corruption: %s\n", name, why); \
    CHECK(name ": accepted before the corruption", ok_);                               \
    corrupt;                                                                           \
    why[0] = 0;                                                                        \
    ok_ = (valid);                                                                     \
    CHECK(name ": rejected", !ok_);                                                    \
    CHECK(name ": with the reason \"" fragment "\"", !ok_ && strstr(why, fragment));   \
    if (verbose || ok_ || !strstr(why, fragment))                                      \
      fprintf(stderr, "  %-46s -> %s\n", name, ok_ ? "ACCEPTED" : why);                \
    restore;                                                                           \
    ok_ = (valid);                                                                     \
    if (!ok_) fprintf(stderr, "  %s: rejected after the restore: %s\n", name, why);    \
    CHECK(name ": accepted after the restore", ok_);                                   \
  } while (0)

#endif
