/* check.h — the tiny test helper every mmalloc test uses.
 *
 * CHECK(name, expr) records one named assertion; a failing one prints the
 * name, the expression and the line.  check_summary() prints the totals and
 * returns the failure count, which main() returns so that ctest sees it.
 */
#ifndef MM_TEST_CHECK_H
#define MM_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int check_failures;
static int check_total;

#define CHECK(name, expr)                                                   \
  do {                                                                      \
    check_total++;                                                          \
    if (!(expr)) {                                                          \
      check_failures++;                                                     \
      fprintf(stderr, "FAIL %s: %s (%s:%d)\n", (name), #expr, __FILE__,     \
              __LINE__);                                                    \
    }                                                                       \
  } while (0)

/* For checks inside loops: stop the test at the first failure of many.
 * expr is evaluated once (it may start a thread or allocate). */
#define REQUIRE(name, expr)                                                 \
  do {                                                                      \
    int require_ok_ = !!(expr);                                             \
    check_total++;                                                          \
    if (!require_ok_) {                                                     \
      check_failures++;                                                     \
      fprintf(stderr, "FAIL %s: %s (%s:%d)\n", (name), #expr, __FILE__,     \
              __LINE__);                                                    \
      fprintf(stderr, "stopping at the first failed requirement\n");        \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

static inline int check_summary(const char *suite) {
  fprintf(stderr, "%s: %d checks, %d failed\n", suite, check_total,
          check_failures);
  return check_failures ? 1 : 0;
}

#endif
