/* spsc.c — the public calls of the bounded lock-free SPSC queue (mm_spsc_*).
 *
 * Layer: stream.  The ring's layout, invariants and memory-order protocol
 * are in spsc.h, whose inline fast paths these functions wrap; this file
 * owns only creation and destruction.
 *
 * The ring and its slot array are two allocations, both aligned to a cache
 * line, so that slot 0 never shares a line with the consumer's index.
 */
#define _GNU_SOURCE
#include "spsc.h"

#include <errno.h>
#include <stdlib.h>

mm_spsc_t *mm_spsc_create(size_t capacity) {
  size_t cap = spsc_round_capacity(capacity);
  if (cap == 0) {
    errno = EINVAL;
    return NULL;
  }
  void *qmem = NULL, *smem = NULL;
  if (posix_memalign(&qmem, MMS_CACHE_LINE, sizeof(struct mm_spsc)) != 0 ||
      posix_memalign(&smem, MMS_CACHE_LINE, cap * sizeof(void *)) != 0) {
    free(qmem);
    errno = ENOMEM;
    return NULL;
  }
  struct mm_spsc *q = qmem;
  spsc_init(q, smem, cap);
  q->slots_block = smem;
  return q;
}

void mm_spsc_destroy(mm_spsc_t *q) {
  if (!q) return;
  free(q->slots_block);
  free(q);
}

size_t mm_spsc_capacity(const mm_spsc_t *q) { return q->pmask + 1; }

bool mm_spsc_push(mm_spsc_t *q, void *item) { return spsc_push(q, item); }

size_t mm_spsc_push_batch(mm_spsc_t *q, void *const *items, size_t n) {
  return spsc_push_batch(q, items, n);
}

bool mm_spsc_pop(mm_spsc_t *q, void **out) { return spsc_pop(q, out); }

size_t mm_spsc_pop_batch(mm_spsc_t *q, void **out, size_t max) {
  return spsc_pop_batch(q, out, max);
}

size_t mm_spsc_size(const mm_spsc_t *q) { return spsc_size(q); }
