/* test_sw_kernel.c — the striped kernels (SSE2, and AVX2 when the CPU has
 * it; 8-bit, 16-bit and the whole ladder) against the scalar reference
 * sw_ref_score, on random and related sequences of many lengths: every
 * query length 1..80 (below, at and across multiples of every lane count),
 * the lane-count boundaries up to 512, subjects of length 1 upwards, both
 * matrices, and gap costs including open < extend and extend = 0 (where
 * the lazy-F loop must still stop).  Then the saturation ladder: a pair that
 * needs 16 bits and a long self-alignment that needs 32.  Fixed seeds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sw_ref.h"
#include "sw_striped.h"
#include "sw_test_util.h"

#define MAXLEN 9000

static uint8_t qbuf[MAXLEN], sbuf[MAXLEN], tbuf[MAXLEN];

struct gap { int open, extend; };
static const struct gap gaps[] = {
  {10, 2}, {5, 2}, {10, 1}, {12, 2}, {3, 5}, {1, 0}, {0, 0}, {20, 0}, {40, 3}, {300, 300},
};
#define NGAPS (sizeof gaps / sizeof gaps[0])

static long pairs_checked;

/* One query against one subject, every rung and the ladder. */
static void check_pair(sw_aligner_t *al, const uint8_t *q, size_t qlen,
                       const uint8_t *s, size_t slen, const sw_matrix_t *m,
                       struct gap g, sw_isa_t isa) {
  int want = sw_ref_score(q, qlen, s, slen, m, g.open, g.extend);
  bool sat8, sat16;
  int got8 = sw_align_width(al, s, slen, SW_WIDTH_8, &sat8);
  int got16 = sw_align_width(al, s, slen, SW_WIDTH_16, &sat16);
  sw_width_t w;
  int got = sw_align(al, s, slen, &w);
  pairs_checked++;
  if ((!sat8 && got8 != want) || sat16 || got16 != want || got != want ||
      (sat8 && want < 255 + m->min)) {
    fprintf(stderr,
            "mismatch: isa %s matrix %s gap %d/%d qlen %zu slen %zu: ref %d, "
            "8-bit %d%s, 16-bit %d%s, ladder %d (width %d)\n",
            sw_isa_name(isa), m->name, g.open, g.extend, qlen, slen, want, got8,
            sat8 ? " (saturated)" : "", got16, sat16 ? " (saturated)" : "", got, (int)w);
  }
  REQUIRE("8-bit equals the reference unless it says saturated", sat8 || got8 == want);
  REQUIRE("8-bit saturates only near its limit", !sat8 || want >= 255 + m->min);
  REQUIRE("16-bit does not saturate here", !sat16);
  REQUIRE("16-bit equals the reference", got16 == want);
  REQUIRE("the ladder equals the reference", got == want);
}

static void check_query(sw_isa_t isa, const sw_matrix_t *m, struct gap g,
                        size_t qlen, int subjects) {
  sw_test_random_codes(qbuf, qlen);
  sw_query_t *query = sw_query_create(qbuf, qlen, m, g.open, g.extend, isa);
  REQUIRE("query created", query != NULL);
  sw_aligner_t *al = sw_aligner_create(query);
  REQUIRE("aligner created", al != NULL);
  for (int k = 0; k < subjects; k++) {
    size_t slen;
    switch (k % 4) {
    case 0: /* unrelated, short */
      slen = 1 + sw_test_below(k < 4 ? 3 : 60);
      sw_test_random_codes(sbuf, slen);
      break;
    case 1: /* unrelated, longer */
      slen = 1 + sw_test_below(400);
      sw_test_random_codes(sbuf, slen);
      break;
    case 2: /* a mutated copy of the query: long alignments, gaps */
      slen = sw_test_mutate(qbuf, qlen, sbuf, MAXLEN);
      if (slen == 0) sbuf[slen++] = qbuf[0];
      break;
    default: /* query pieces inside random flanks */
      {
        size_t left = sw_test_below(50), mid = sw_test_mutate(qbuf, qlen, tbuf, MAXLEN);
        sw_test_random_codes(sbuf, left);
        memcpy(sbuf + left, tbuf, mid);
        size_t right = sw_test_below(50);
        sw_test_random_codes(sbuf + left + mid, right);
        slen = left + mid + right;
        if (slen == 0) sbuf[slen++] = 0;
      }
    }
    check_pair(al, qbuf, qlen, sbuf, slen, m, g, isa);
  }
  /* The same query as subject: the highest score it can have. */
  check_pair(al, qbuf, qlen, qbuf, qlen, m, g, isa);
  sw_aligner_destroy(al);
  sw_query_destroy(query);
}

static void check_ladder(sw_isa_t isa, const sw_matrix_t *m) {
  /* A 1200-residue self-alignment scores ~7000: beyond 8 bits, within 16. */
  sw_test_random_codes(qbuf, 1200);
  sw_query_t *query = sw_query_create(qbuf, 1200, m, 10, 2, isa);
  sw_aligner_t *al = sw_aligner_create(query);
  REQUIRE("ladder query", query != NULL && al != NULL);
  sw_width_t w;
  int got = sw_align(al, qbuf, 1200, &w);
  int want = sw_ref_score(qbuf, 1200, qbuf, 1200, m, 10, 2);
  CHECK("1200 self: 16-bit rung answers", w == SW_WIDTH_16);
  CHECK("1200 self: score", got == want);
  sw_aligner_destroy(al);
  sw_query_destroy(query);

  /* An 8000-residue self-alignment scores ~45000: beyond 16 bits. */
  const size_t n = 8000;
  sw_test_random_codes(qbuf, n);
  query = sw_query_create(qbuf, n, m, 10, 2, isa);
  al = sw_aligner_create(query);
  REQUIRE("long query", query != NULL && al != NULL);
  bool sat;
  (void)sw_align_width(al, qbuf, n, SW_WIDTH_16, &sat);
  CHECK("8000 self: 16-bit says saturated", sat);
  got = sw_align(al, qbuf, n, &w);
  want = sw_ref_score(qbuf, n, qbuf, n, m, 10, 2);
  CHECK("8000 self: 32-bit rung answers", w == SW_WIDTH_32);
  CHECK("8000 self: score above INT16_MAX", want > INT16_MAX);
  CHECK("8000 self: score", got == want);
  fprintf(stderr, "%s %s: 8000-residue self-alignment scores %d (32-bit rung)\n",
          sw_isa_name(isa), m->name, got);
  sw_aligner_destroy(al);
  sw_query_destroy(query);
}

int main(void) {
  const sw_matrix_t *mats[2] = {sw_matrix_lookup("blosum50"), sw_matrix_lookup("blosum62")};
  REQUIRE("matrices", mats[0] && mats[1]);
  sw_isa_t isas[2] = {SW_ISA_SSE2, SW_ISA_AVX2};
  int nisa = sw_isa_supported(SW_ISA_AVX2) ? 2 : 1;
  if (nisa == 1) fprintf(stderr, "test_sw_kernel: this CPU has no AVX2: SSE2 only\n");
  sw_test_seed(20240611);

  for (int ii = 0; ii < nisa; ii++) {
    for (int mi = 0; mi < 2; mi++) {
      for (size_t gi = 0; gi < NGAPS; gi++) {
        /* Every length 1..80, then the lane-count boundaries. */
        for (size_t qlen = 1; qlen <= 80; qlen++)
          check_query(isas[ii], mats[mi], gaps[gi], qlen, 4);
        static const size_t edges[] = {95, 96, 97, 127, 128, 129, 255, 256, 257, 511, 512};
        for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++)
          check_query(isas[ii], mats[mi], gaps[gi], edges[k], 8);
      }
      check_ladder(isas[ii], mats[mi]);
    }
  }

  /* An empty query or subject scores 0 (the API allows both). */
  sw_query_t *q0 = sw_query_create(qbuf, 0, mats[0], 10, 2, SW_ISA_SSE2);
  sw_aligner_t *a0 = sw_aligner_create(q0);
  CHECK("empty query scores 0", sw_align(a0, qbuf, 5, NULL) == 0);
  sw_aligner_destroy(a0);
  sw_query_destroy(q0);
  q0 = sw_query_create(qbuf, 5, mats[0], 10, 2, SW_ISA_SSE2);
  a0 = sw_aligner_create(q0);
  CHECK("empty subject scores 0", sw_align(a0, qbuf, 0, NULL) == 0);
  sw_aligner_destroy(a0);
  sw_query_destroy(q0);
  CHECK("negative gap refused", sw_query_create(qbuf, 5, mats[0], -1, 2, SW_ISA_SSE2) == NULL);
  uint8_t bad = SW_ALPHABET_SIZE;
  CHECK("bad code refused", sw_query_create(&bad, 1, mats[0], 10, 2, SW_ISA_SSE2) == NULL);

  fprintf(stderr, "test_sw_kernel: %ld pairs checked against the scalar reference\n",
          pairs_checked);
  return check_summary("test_sw_kernel");
}
