/* stats_json.h — the statistics as a NUL-terminated string (mm_stats_json),
 * for the tests that read them with json.h.  Free it with mm_free. */
#ifndef MM_TEST_STATS_JSON_H
#define MM_TEST_STATS_JSON_H

#include <stddef.h>

#include "mmalloc.h"

/* Allocating the buffer may itself change the statistics, so ask again
 * until the answer fits. */
static inline char *stats_json(void) {
  size_t cap = 4096;
  for (;;) {
    char *buf = mm_malloc(cap);
    size_t n = mm_stats_json(buf, cap);
    if (n < cap) return buf;
    mm_free(buf);
    cap = n + 4096;
  }
}

#endif
