/* sw_striped.h — Farrar's striped SIMD Smith-Waterman, score only, affine
 * gaps: the kernel of the test-bed.
 *
 * Owns: the query (its striped profiles, built once per query and matrix
 * and shared read-only by every worker), the per-thread scratch (sw_aligner),
 * the choice of instruction set (SSE2 always, AVX2 when the CPU has it) and
 * the precision ladder of one alignment:
 *
 *   8-bit unsigned saturated lanes, biased (16 per SSE2 vector, 32 per AVX2)
 *     -> if the best score reaches 255 - bias: 16-bit signed lanes
 *     -> if that reaches INT16_MAX - matrix max: sw_ref_score (32-bit scalar)
 *
 * so a printed score is never a saturated one.  Scoring is sw_ref.h's: a gap
 * of length k costs open + (k - 1) * extend, the same as parasail's -o/-e.
 *
 * Threads: an sw_query_t is immutable after sw_query_create and may be used
 * by any number of threads; an sw_aligner_t belongs to one thread at a time.
 */
#ifndef MM_SW_STRIPED_H
#define MM_SW_STRIPED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sw_matrix.h"

typedef enum sw_isa {
  SW_ISA_SSE2 = 0,
  SW_ISA_AVX2 = 1
} sw_isa_t;

typedef enum sw_width {
  SW_WIDTH_8 = 0,  /* 8-bit lanes answered */
  SW_WIDTH_16 = 1, /* 8-bit saturated; 16-bit lanes answered */
  SW_WIDTH_32 = 2  /* both saturated; the scalar 32-bit code answered */
} sw_width_t;

/* The best instruction set this CPU runs (AVX2 if __builtin_cpu_supports). */
sw_isa_t sw_isa_best(void);
/* Whether this CPU runs isa. */
bool sw_isa_supported(sw_isa_t isa);
const char *sw_isa_name(sw_isa_t isa);
/* "sse2" / "avx2" / "auto" (the best) -> 0, else EINVAL. */
int sw_isa_parse(const char *name, sw_isa_t *out);

typedef struct sw_query sw_query_t;

/* Builds the 8-bit and 16-bit striped profiles of the query codes q[0..len)
 * for matrix m and isa (which must be supported).  open and extend are gap
 * costs in 0..SW_GAP_MAX.  NULL with errno EINVAL or ENOMEM. */
#define SW_GAP_MAX 10000
sw_query_t *sw_query_create(const uint8_t *q, size_t len, const sw_matrix_t *m,
                            int open, int extend, sw_isa_t isa);
void sw_query_destroy(sw_query_t *query);
size_t sw_query_length(const sw_query_t *query);
sw_isa_t sw_query_isa(const sw_query_t *query);

typedef struct sw_aligner sw_aligner_t;

/* Scratch rows for aligning against query (which must outlive it). */
sw_aligner_t *sw_aligner_create(const sw_query_t *query);
void sw_aligner_destroy(sw_aligner_t *a);

/* The Smith-Waterman score of the query against subject codes s[0..len)
 * (each < SW_ALPHABET_SIZE: not checked; the FASTA reader makes them),
 * climbing the precision ladder as needed; *width (if not NULL) says which
 * rung answered.  -1 only when memory runs out on the 32-bit rung. */
int sw_align(sw_aligner_t *a, const uint8_t *s, size_t len, sw_width_t *width);

/* One rung alone, for tests: the score with 8-bit (SW_WIDTH_8) or 16-bit
 * (SW_WIDTH_16) lanes; *saturated tells whether it may be wrong. */
int sw_align_width(sw_aligner_t *a, const uint8_t *s, size_t len,
                   sw_width_t width, bool *saturated);

#endif
