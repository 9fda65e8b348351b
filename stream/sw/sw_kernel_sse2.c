/* sw_kernel_sse2.c — the striped kernels on 128-bit SSE2 vectors
 * (16 x 8-bit or 8 x 16-bit lanes).  The column loop is sw_kernel_body.h;
 * this file only supplies the vector primitives it names.  SSE2 is part of
 * x86-64, so this file needs no special flags and runs on every CPU.
 */
#include <emmintrin.h>
#include <stdint.h>

#include "sw_kernel.h"

#define SWK_VEC __m128i
#define SWK_KERNEL8 sw_kernel8_sse2
#define SWK_KERNEL16 sw_kernel16_sse2

static inline __m128i swk_load(const __m128i *p) { return _mm_load_si128(p); }
static inline void swk_store(__m128i *p, __m128i v) { _mm_store_si128(p, v); }
static inline __m128i swk_zero(void) { return _mm_setzero_si128(); }
static inline __m128i swk_or(__m128i a, __m128i b) { return _mm_or_si128(a, b); }
static inline __m128i swk_set1_8(int x) { return _mm_set1_epi8((char)x); }
static inline __m128i swk_set1_16(int x) { return _mm_set1_epi16((short)x); }
static inline __m128i swk_lane0_16(int x) {
  return _mm_insert_epi16(_mm_setzero_si128(), x, 0);
}

static inline __m128i swk_adds_u8(__m128i a, __m128i b) { return _mm_adds_epu8(a, b); }
static inline __m128i swk_subs_u8(__m128i a, __m128i b) { return _mm_subs_epu8(a, b); }
static inline __m128i swk_max_u8(__m128i a, __m128i b) { return _mm_max_epu8(a, b); }
/* Some lane with a > b (unsigned): a -sat b is nonzero there. */
static inline int swk_any_gt_u8(__m128i a, __m128i b) {
  __m128i z = _mm_cmpeq_epi8(_mm_subs_epu8(a, b), _mm_setzero_si128());
  return _mm_movemask_epi8(z) != 0xFFFF;
}
/* Lane k <- lane k-1, lane 0 <- 0. */
static inline __m128i swk_shift_lane8(__m128i v) { return _mm_slli_si128(v, 1); }
static inline int swk_hmax_u8(__m128i v) {
  v = _mm_max_epu8(v, _mm_srli_si128(v, 8));
  v = _mm_max_epu8(v, _mm_srli_si128(v, 4));
  v = _mm_max_epu8(v, _mm_srli_si128(v, 2));
  v = _mm_max_epu8(v, _mm_srli_si128(v, 1));
  return _mm_cvtsi128_si32(v) & 0xFF;
}

static inline __m128i swk_adds_i16(__m128i a, __m128i b) { return _mm_adds_epi16(a, b); }
static inline __m128i swk_subs_i16(__m128i a, __m128i b) { return _mm_subs_epi16(a, b); }
static inline __m128i swk_max_i16(__m128i a, __m128i b) { return _mm_max_epi16(a, b); }
static inline int swk_any_gt_i16(__m128i a, __m128i b) {
  return _mm_movemask_epi8(_mm_cmpgt_epi16(a, b)) != 0;
}
static inline __m128i swk_shift_lane16(__m128i v) { return _mm_slli_si128(v, 2); }
static inline int swk_hmax_i16(__m128i v) {
  v = _mm_max_epi16(v, _mm_srli_si128(v, 8));
  v = _mm_max_epi16(v, _mm_srli_si128(v, 4));
  v = _mm_max_epi16(v, _mm_srli_si128(v, 2));
  return (int16_t)_mm_extract_epi16(v, 0);
}

#include "sw_kernel_body.h"
