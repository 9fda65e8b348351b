/* table.h — the open-addressing hash table the trace readers keep their
 * live blocks in (stats.c, replay.c): a 64-bit key to three 64-bit values,
 * linear probing, at most half full, deletion by backward shift (so no
 * tombstones and every probe chain stays unbroken).  Key 0 marks an empty
 * slot: table_block_key never gives it.  Out of memory ends the command
 * (mmt_oom, tool.c). */
#ifndef MMTRACE_TABLE_H
#define MMTRACE_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "tool.h"

typedef struct { uint64_t key, a, b, c; } table_slot_t;
typedef struct { table_slot_t *s; size_t cap, n; } table_t;   /* cap: 0 or a power of two */

/* A block (thread, n) as a key: never 0 (n < 2^40, as the recorder's ids). */
static inline uint64_t table_block_key(uint64_t thread, uint64_t n) { return (thread << 40 | n) + 1; }

static inline size_t table_home(const table_t *t, uint64_t k) {
  k ^= k >> 33; k *= 0xff51afd7ed558ccdull; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53ull; k ^= k >> 33;
  return (size_t)k & (t->cap - 1);
}

/* key's slot, or NULL. */
static inline table_slot_t *table_find(table_t *t, uint64_t key) {
  if (!t->cap) return NULL;
  for (size_t i = table_home(t, key);; i = (i + 1) & (t->cap - 1)) {
    if (t->s[i].key == key) return &t->s[i];
    if (!t->s[i].key) return NULL;
  }
}

static inline void table_put(table_t *t, uint64_t key, uint64_t a, uint64_t b, uint64_t c) {
  if (2 * (t->n + 1) > t->cap) {
    table_t old = *t;
    t->cap = old.cap ? old.cap * 2 : 1024;
    t->s = calloc(t->cap, sizeof *t->s);
    if (!t->s) mmt_oom();
    t->n = 0;
    for (size_t i = 0; i < old.cap; i++)
      if (old.s[i].key) table_put(t, old.s[i].key, old.s[i].a, old.s[i].b, old.s[i].c);
    free(old.s);
  }
  size_t i = table_home(t, key);
  while (t->s[i].key && t->s[i].key != key) i = (i + 1) & (t->cap - 1);
  if (!t->s[i].key) t->n++;
  t->s[i] = (table_slot_t){key, a, b, c};
}

/* Removes key; true, with its slot's copy in *out, if it was there. */
static inline bool table_take(table_t *t, uint64_t key, table_slot_t *out) {
  table_slot_t *f = table_find(t, key);
  if (!f) return false;
  *out = *f;
  size_t i = (size_t)(f - t->s), j = i;
  for (;;) {
    t->s[i].key = 0;
    for (;;) {
      j = (j + 1) & (t->cap - 1);
      if (!t->s[j].key) { t->n--; return true; }
      size_t home = table_home(t, t->s[j].key);
      /* an entry moves back into the hole unless its home lies in (i, j] */
      if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) break;
    }
    t->s[i] = t->s[j];
    i = j;
  }
}

static inline void table_free(table_t *t) { free(t->s); t->s = NULL; t->cap = t->n = 0; }

#endif
