/* lent.h — the pool and heap tests' view of the page blocks lent out:
 * lent_bytes of the "total" object in mm_stats_json (docs/statistics.md).
 * -1 when the field is missing. */
#ifndef MM_TEST_LENT_H
#define MM_TEST_LENT_H

#include <stdlib.h>
#include <string.h>

#include "mmalloc.h"

static inline long total_lent_bytes(void) {
  static char buf[1 << 16];
  mm_stats_json(buf, sizeof(buf));
  const char *t = strstr(buf, "\"total\":");
  const char *l = t ? strstr(t, "\"lent_bytes\":") : NULL;
  return l ? atol(l + strlen("\"lent_bytes\":")) : -1;
}

#endif
