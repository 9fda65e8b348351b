/* lent.h — the pool and heap tests' view of the page blocks lent out:
 * lent_bytes of the "total" object in mm_stats_json (docs/statistics.md),
 * less what secure mode's release quarantine holds (pool_quarantine.bytes:
 * memory a pool or heap gave back, held until it is checked), so that
 * "given back" reads the same with and without secure mode.  -1 when a
 * field is missing. */
#ifndef MM_TEST_LENT_H
#define MM_TEST_LENT_H

#include <stdlib.h>
#include <string.h>

#include "mmalloc.h"

static inline long stats_field(const char *object, const char *field) {
  static char buf[1 << 16];
  mm_stats_json(buf, sizeof(buf));
  const char *t = strstr(buf, object);
  const char *l = t ? strstr(t, field) : NULL;
  return l ? atol(l + strlen(field)) : -1;
}

/* The bytes secure mode's release quarantine holds (0 without it). */
static inline long quarantine_bytes(void) {
  return stats_field("\"pool_quarantine\":", "\"bytes\":");
}

static inline long total_lent_bytes(void) {
  long lent = stats_field("\"total\":", "\"lent_bytes\":"), held = quarantine_bytes();
  return lent < 0 || held < 0 ? -1 : lent - held;
}

#endif
