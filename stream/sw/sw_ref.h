/* sw_ref.h — the plain scalar Smith-Waterman of the test-bed: the oracle the
 * striped kernels are tested against, and their last fallback when even
 * 16-bit lanes saturate.
 *
 * Scoring (the same everywhere in stream/sw/, and the same as parasail's):
 *   a gap of length k >= 1 costs open + (k - 1) * extend;
 *   score = max over all local alignments of (sum of substitution scores
 *   - sum of gap costs), and 0 when nothing scores above 0.
 */
#ifndef MM_SW_REF_H
#define MM_SW_REF_H

#include <stddef.h>
#include <stdint.h>

#include "sw_matrix.h"

/* Score of the best local alignment of residue codes q[0..qlen) and
 * s[0..slen) (codes < SW_ALPHABET_SIZE), with 32-bit arithmetic, O(qlen)
 * memory.  open >= 0, extend >= 0.  -1 only when memory runs out. */
int sw_ref_score(const uint8_t *q, size_t qlen, const uint8_t *s, size_t slen,
                 const sw_matrix_t *m, int open, int extend);

#endif
