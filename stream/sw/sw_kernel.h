/* sw_kernel.h — internal: what sw_striped.c hands to the per-instruction-set
 * kernels (sw_kernel_sse2.c, sw_kernel_avx2.c), whose common body is
 * sw_kernel_body.h.
 *
 * Striped layout (Farrar 2007).  With L lanes per vector and
 * seglen = ceil(qlen / L), vector t (0 <= t < seglen) of a column holds the
 * query positions t, t + seglen, t + 2 seglen, ... (lane k holds position
 * k * seglen + t).  Positions >= qlen are padding: their profile entry is the
 * matrix minimum, so they can never score above a real cell and never feed
 * one (a cell depends only on lower query positions).
 *
 *   profile8[c][t][k]  = score(c, q[k*seglen+t]) + bias   (uint8, bias = -min)
 *   profile16[c][t][k] = score(c, q[k*seglen+t])          (int16)
 *
 * Invariants of the arguments: h0, h1, e each hold seglen vectors, aligned
 * to 32 bytes; the kernel overwrites them; 0 <= open, extend <= SW_GAP_MAX.
 */
#ifndef MM_SW_KERNEL_H
#define MM_SW_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sw_kernel_args {
  const void *profile; /* [SW_ALPHABET_SIZE][seglen] vectors */
  size_t seglen;
  const uint8_t *s;    /* subject codes */
  size_t slen;
  void *h0, *h1, *e;   /* scratch rows */
  int open, extend;
  int bias;            /* 8-bit only: -matrix min */
  int limit;           /* a best score >= limit may be saturated */
} sw_kernel_args_t;

/* Each returns the best score; *saturated = (best >= a->limit). */
int sw_kernel8_sse2(const sw_kernel_args_t *a, bool *saturated);
int sw_kernel16_sse2(const sw_kernel_args_t *a, bool *saturated);
int sw_kernel8_avx2(const sw_kernel_args_t *a, bool *saturated);
int sw_kernel16_avx2(const sw_kernel_args_t *a, bool *saturated);

#endif
