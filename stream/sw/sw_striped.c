/* sw_striped.c — the query profiles, the per-thread scratch, the choice of
 * instruction set and the precision ladder (8 -> 16 -> 32 bits) around the
 * striped kernels.
 *
 * Layer: stream/sw, above sw_matrix, sw_ref and the kernels (sw_kernel.h).
 *
 * Invariants
 *   query: const after sw_query_create; lanes8 = 2 * lanes16 = vector bytes;
 *     seglen8 = ceil(len / lanes8), seglen16 = ceil(len / lanes16), both >= 1;
 *     profile8/profile16 laid out as sw_kernel.h says, 32-byte aligned;
 *   aligner: h0, h1, e hold max(seglen8, seglen16) vectors (the 16-bit rows
 *     are the longer), 32-byte aligned; one thread at a time.
 */
#include "sw_striped.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sw_kernel.h"
#include "sw_ref.h"

#define SW_VEC_ALIGN 32

struct sw_query {
  uint8_t *codes; /* the query, for the 32-bit rung */
  size_t len;
  const sw_matrix_t *matrix;
  int open, extend;
  sw_isa_t isa;
  size_t vec_bytes;        /* 16 (SSE2) or 32 (AVX2) */
  size_t seglen8, seglen16;
  uint8_t *profile8;       /* [24][seglen8][vec_bytes] */
  int16_t *profile16;      /* [24][seglen16][vec_bytes / 2] */
};

struct sw_aligner {
  const sw_query_t *query;
  void *h0, *h1, *e;
};

bool sw_isa_supported(sw_isa_t isa) {
  switch (isa) {
  case SW_ISA_SSE2:
    return true; /* part of x86-64 */
  case SW_ISA_AVX2:
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }
  return false;
}

sw_isa_t sw_isa_best(void) {
  return sw_isa_supported(SW_ISA_AVX2) ? SW_ISA_AVX2 : SW_ISA_SSE2;
}

const char *sw_isa_name(sw_isa_t isa) {
  return isa == SW_ISA_AVX2 ? "avx2" : "sse2";
}

int sw_isa_parse(const char *name, sw_isa_t *out) {
  if (strcasecmp(name, "sse2") == 0) {
    *out = SW_ISA_SSE2;
  } else if (strcasecmp(name, "avx2") == 0) {
    *out = SW_ISA_AVX2;
  } else if (strcasecmp(name, "auto") == 0) {
    *out = sw_isa_best();
  } else {
    return EINVAL;
  }
  return 0;
}

/* size rounded up to the alignment, as aligned_alloc wants. */
static void *sw_alloc_vectors(size_t bytes) {
  size_t n = (bytes + SW_VEC_ALIGN - 1) / SW_VEC_ALIGN * SW_VEC_ALIGN;
  return aligned_alloc(SW_VEC_ALIGN, n ? n : SW_VEC_ALIGN);
}

sw_query_t *sw_query_create(const uint8_t *q, size_t len, const sw_matrix_t *m,
                            int open, int extend, sw_isa_t isa) {
  if (m == NULL || open < 0 || extend < 0 || open > SW_GAP_MAX ||
      extend > SW_GAP_MAX || !sw_isa_supported(isa)) {
    errno = EINVAL;
    return NULL;
  }
  for (size_t i = 0; i < len; i++) {
    if (q[i] >= SW_ALPHABET_SIZE) {
      errno = EINVAL;
      return NULL;
    }
  }
  sw_query_t *query = calloc(1, sizeof *query);
  if (query == NULL) return NULL;
  query->len = len;
  query->matrix = m;
  query->open = open;
  query->extend = extend;
  query->isa = isa;
  query->vec_bytes = isa == SW_ISA_AVX2 ? 32 : 16;
  const size_t lanes8 = query->vec_bytes, lanes16 = query->vec_bytes / 2;
  query->seglen8 = len ? (len + lanes8 - 1) / lanes8 : 1;
  query->seglen16 = len ? (len + lanes16 - 1) / lanes16 : 1;
  query->codes = malloc(len ? len : 1);
  query->profile8 = sw_alloc_vectors(SW_ALPHABET_SIZE * query->seglen8 * lanes8);
  query->profile16 = sw_alloc_vectors(SW_ALPHABET_SIZE * query->seglen16 *
                                      lanes16 * sizeof(int16_t));
  if (query->codes == NULL || query->profile8 == NULL || query->profile16 == NULL) {
    sw_query_destroy(query);
    errno = ENOMEM;
    return NULL;
  }
  if (len) memcpy(query->codes, q, len);

  const int bias = -m->min;
  for (int c = 0; c < SW_ALPHABET_SIZE; c++) {
    uint8_t *p8 = query->profile8 + (size_t)c * query->seglen8 * lanes8;
    for (size_t t = 0; t < query->seglen8; t++) {
      for (size_t k = 0; k < lanes8; k++) {
        size_t pos = k * query->seglen8 + t;
        int s = pos < len ? m->score[c][q[pos]] : m->min; /* padding: min */
        p8[t * lanes8 + k] = (uint8_t)(s + bias);
      }
    }
    int16_t *p16 = query->profile16 + (size_t)c * query->seglen16 * lanes16;
    for (size_t t = 0; t < query->seglen16; t++) {
      for (size_t k = 0; k < lanes16; k++) {
        size_t pos = k * query->seglen16 + t;
        p16[t * lanes16 + k] = (int16_t)(pos < len ? m->score[c][q[pos]] : m->min);
      }
    }
  }
  return query;
}

void sw_query_destroy(sw_query_t *query) {
  if (query == NULL) return;
  free(query->codes);
  free(query->profile8);
  free(query->profile16);
  free(query);
}

size_t sw_query_length(const sw_query_t *query) { return query->len; }
sw_isa_t sw_query_isa(const sw_query_t *query) { return query->isa; }

sw_aligner_t *sw_aligner_create(const sw_query_t *query) {
  sw_aligner_t *a = calloc(1, sizeof *a);
  if (a == NULL) return NULL;
  a->query = query;
  size_t seg = query->seglen16 > query->seglen8 ? query->seglen16 : query->seglen8;
  size_t bytes = seg * query->vec_bytes;
  a->h0 = sw_alloc_vectors(bytes);
  a->h1 = sw_alloc_vectors(bytes);
  a->e = sw_alloc_vectors(bytes);
  if (a->h0 == NULL || a->h1 == NULL || a->e == NULL) {
    sw_aligner_destroy(a);
    errno = ENOMEM;
    return NULL;
  }
  return a;
}

void sw_aligner_destroy(sw_aligner_t *a) {
  if (a == NULL) return;
  free(a->h0);
  free(a->h1);
  free(a->e);
  free(a);
}

int sw_align_width(sw_aligner_t *a, const uint8_t *s, size_t len,
                   sw_width_t width, bool *saturated) {
  const sw_query_t *q = a->query;
  *saturated = false;
  if (q->len == 0 || len == 0) return 0;
  sw_kernel_args_t args = {
      .s = s, .slen = len, .h0 = a->h0, .h1 = a->h1, .e = a->e,
      .open = q->open, .extend = q->extend, .bias = -q->matrix->min,
  };
  if (width == SW_WIDTH_8) {
    args.profile = q->profile8;
    args.seglen = q->seglen8;
    args.limit = 255 - args.bias;
    return q->isa == SW_ISA_AVX2 ? sw_kernel8_avx2(&args, saturated)
                                 : sw_kernel8_sse2(&args, saturated);
  }
  args.profile = q->profile16;
  args.seglen = q->seglen16;
  args.limit = INT16_MAX - q->matrix->max;
  return q->isa == SW_ISA_AVX2 ? sw_kernel16_avx2(&args, saturated)
                               : sw_kernel16_sse2(&args, saturated);
}

int sw_align(sw_aligner_t *a, const uint8_t *s, size_t len, sw_width_t *width) {
  bool saturated;
  int score = sw_align_width(a, s, len, SW_WIDTH_8, &saturated);
  if (!saturated) {
    if (width) *width = SW_WIDTH_8;
    return score;
  }
  score = sw_align_width(a, s, len, SW_WIDTH_16, &saturated);
  if (!saturated) {
    if (width) *width = SW_WIDTH_16;
    return score;
  }
  if (width) *width = SW_WIDTH_32;
  const sw_query_t *q = a->query;
  return sw_ref_score(q->codes, q->len, s, len, q->matrix, q->open, q->extend);
}
