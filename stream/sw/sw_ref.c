/* sw_ref.c — scalar Smith-Waterman with affine gaps (Gotoh's recurrences),
 * written to be obviously right rather than fast.
 *
 * Layer: stream/sw, above sw_matrix.
 *
 * Recurrences, for query position i (1..qlen) and subject position j
 * (1..slen), with o = open and e = extend:
 *   E(i,j) = max(E(i,j-1) - e, H(i,j-1) - o)   gap in the query (horizontal)
 *   F(i,j) = max(F(i-1,j) - e, H(i-1,j) - o)   gap in the subject (vertical)
 *   H(i,j) = max(0, H(i-1,j-1) + score(q_i, s_j), E(i,j), F(i,j))
 * with H = 0 and E = F = -infinity on the borders; the result is max H.
 * Invariant of the loop: after column j, h[i] = H(i,j) and e[i] = E(i,j);
 * best = max H over the columns done.
 */
#include "sw_ref.h"

#include <limits.h>
#include <stdlib.h>

/* Far below any reachable score, yet subtracting a gap cost cannot wrap. */
#define SW_REF_NEG_INF (INT_MIN / 2)

int sw_ref_score(const uint8_t *q, size_t qlen, const uint8_t *s, size_t slen,
                 const sw_matrix_t *m, int open, int extend) {
  if (qlen == 0 || slen == 0) return 0;
  int *h = malloc((qlen + 1) * sizeof *h); /* H(i, j-1), then H(i, j) */
  int *e = malloc((qlen + 1) * sizeof *e); /* E(i, j) */
  if (h == NULL || e == NULL) {
    free(h);
    free(e);
    return -1;
  }
  for (size_t i = 0; i <= qlen; i++) {
    h[i] = 0;
    e[i] = SW_REF_NEG_INF;
  }
  int best = 0;
  for (size_t j = 1; j <= slen; j++) {
    const int8_t *row = m->score[s[j - 1]];
    int diag = 0; /* H(i-1, j-1); H(0, j-1) = 0 */
    int f = SW_REF_NEG_INF;
    h[0] = 0;
    for (size_t i = 1; i <= qlen; i++) {
      int up = h[i - 1]; /* H(i-1, j), already updated for column j */
      int left = h[i];   /* H(i, j-1) */
      int ei = e[i] - extend > left - open ? e[i] - extend : left - open;
      int fi = f - extend > up - open ? f - extend : up - open;
      int hi = diag + row[q[i - 1]];
      if (ei > hi) hi = ei;
      if (fi > hi) hi = fi;
      if (hi < 0) hi = 0;
      if (hi > best) best = hi;
      e[i] = ei;
      f = fi;
      diag = left;
      h[i] = hi;
    }
  }
  free(h);
  free(e);
  return best;
}
