/* sw_kernel_avx2.c — the striped kernels on 256-bit AVX2 vectors
 * (32 x 8-bit or 16 x 16-bit lanes).  The column loop is sw_kernel_body.h.
 *
 * This is the only file compiled with -mavx2 (see CMakeLists.txt); its
 * functions are called only after sw_isa_supported(SW_ISA_AVX2), so no AVX2
 * instruction runs on a CPU without it.
 *
 * AVX2 byte shifts stay inside each 128-bit half, so a one-lane shift of the
 * whole vector is built from two instructions:
 *
 *     v            = [ hi | lo ]
 *     carry        = [ lo | 0  ]                 permute2x128(v, v, 0x08)
 *     alignr(v, carry, 16 - n) = [ hi << n, top n bytes of lo | lo << n ]
 */
#include <immintrin.h>
#include <stdint.h>

#include "sw_kernel.h"

#define SWK_VEC __m256i
#define SWK_KERNEL8 sw_kernel8_avx2
#define SWK_KERNEL16 sw_kernel16_avx2

static inline __m256i swk_load(const __m256i *p) { return _mm256_load_si256(p); }
static inline void swk_store(__m256i *p, __m256i v) { _mm256_store_si256(p, v); }
static inline __m256i swk_zero(void) { return _mm256_setzero_si256(); }
static inline __m256i swk_or(__m256i a, __m256i b) { return _mm256_or_si256(a, b); }
static inline __m256i swk_set1_8(int x) { return _mm256_set1_epi8((char)x); }
static inline __m256i swk_set1_16(int x) { return _mm256_set1_epi16((short)x); }
static inline __m256i swk_lane0_16(int x) {
  return _mm256_insert_epi16(_mm256_setzero_si256(), (short)x, 0);
}

static inline __m256i swk_adds_u8(__m256i a, __m256i b) { return _mm256_adds_epu8(a, b); }
static inline __m256i swk_subs_u8(__m256i a, __m256i b) { return _mm256_subs_epu8(a, b); }
static inline __m256i swk_max_u8(__m256i a, __m256i b) { return _mm256_max_epu8(a, b); }
static inline int swk_any_gt_u8(__m256i a, __m256i b) {
  __m256i z = _mm256_cmpeq_epi8(_mm256_subs_epu8(a, b), _mm256_setzero_si256());
  return _mm256_movemask_epi8(z) != -1;
}
static inline __m256i swk_shift_lane8(__m256i v) {
  return _mm256_alignr_epi8(v, _mm256_permute2x128_si256(v, v, 0x08), 15);
}
static inline __m256i swk_shift_lane16(__m256i v) {
  return _mm256_alignr_epi8(v, _mm256_permute2x128_si256(v, v, 0x08), 14);
}
static inline int swk_hmax_u8(__m256i v) {
  __m128i x = _mm_max_epu8(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  x = _mm_max_epu8(x, _mm_srli_si128(x, 8));
  x = _mm_max_epu8(x, _mm_srli_si128(x, 4));
  x = _mm_max_epu8(x, _mm_srli_si128(x, 2));
  x = _mm_max_epu8(x, _mm_srli_si128(x, 1));
  return _mm_cvtsi128_si32(x) & 0xFF;
}

static inline __m256i swk_adds_i16(__m256i a, __m256i b) { return _mm256_adds_epi16(a, b); }
static inline __m256i swk_subs_i16(__m256i a, __m256i b) { return _mm256_subs_epi16(a, b); }
static inline __m256i swk_max_i16(__m256i a, __m256i b) { return _mm256_max_epi16(a, b); }
static inline int swk_any_gt_i16(__m256i a, __m256i b) {
  return _mm256_movemask_epi8(_mm256_cmpgt_epi16(a, b)) != 0;
}
static inline int swk_hmax_i16(__m256i v) {
  __m128i x = _mm_max_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  x = _mm_max_epi16(x, _mm_srli_si128(x, 8));
  x = _mm_max_epi16(x, _mm_srli_si128(x, 4));
  x = _mm_max_epi16(x, _mm_srli_si128(x, 2));
  return (int16_t)_mm_extract_epi16(x, 0);
}

#include "sw_kernel_body.h"
