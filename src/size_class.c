/* size_class.c — the size classes of small objects.
 *
 * Layer: page (pure arithmetic; no state but a table built once).
 *
 * Classes step by 16 bytes up to 128 B, then four per power of two up to
 * 1 KiB, then five per power of two up to MM_SMALL_MAX (32 KiB), an eighth
 * above the power and its quarters: 16 32 48 ... 128 | 160 192 224 256 |
 * 320 384 ... 1024 | 1152 1280 1536 1792 2048 | 2304 2560 ... so internal
 * fragmentation stays under 25% (under 12.5% above 128 B on average), and
 * under 12.5% for a power of two above 1 KiB and a header of up to an
 * eighth of it.  Each class lives in pages of 16..128 datablocks, chosen so that
 * a page holds at least 8 objects and wastes at most 1/32 of itself.
 *
 * Invariants (checked by size_class_is_valid and the unit test):
 *   size_class_of(n) is the smallest class with size >= n, for 0 < n <=
 *   MM_SMALL_MAX (0 maps to class 0);
 *   sizes are multiples of 16, strictly increasing, and above
 *   MM_DIRECT_MAX multiples of MM_MEDIUM_STEP (so the medium table, by
 *   steps of that many bytes, is exact);
 *   capacity * size <= ndatablocks * MM_DATABLOCK_SIZE;
 *   for every offset o < 2^32: (o * magic mod 2^64) < magic iff size divides
 *   o (Lemire, Kaser and Kurz's divisibility test), and for o = k * size
 *   the product is k * step, step = magic * size mod 2^64 > 0, so that one
 *   compare with n * step tells "a block boundary below block n" (page.h).
 *   magic = ceil(2^64/size) + 1: the +1 makes step > 0 for the powers of
 *   two too (with ceil alone their step is 0); the test stays exact, the
 *   products of the block starts being k * step < 2^33 < magic and those of
 *   the other offsets at least magic.
 */
#include "size_class.h"

size_class_t mm_size_classes[MM_CLASSES];
uint8_t mm_direct_class[MM_DIRECT_SLOTS];
uint8_t mm_medium_class[MM_MEDIUM_SLOTS];

static uint32_t class_size(unsigned c) {
  if (c < 8) return 16 * (c + 1);
  if (c < MM_CLASS_FINE) {
    unsigned k = c - 8;           /* 0.. */
    unsigned shift = 7 + k / 4;   /* 128 << (k/4) is the power below */
    return (uint32_t)((1u << shift) + (k % 4 + 1) * (1u << (shift - 2)));
  }
  unsigned k = c - MM_CLASS_FINE; /* 0.. */
  unsigned shift = 10 + k / 5;    /* 1024 << (k/5) is the power below */
  unsigned j = k % 5;             /* an eighth above it, then the quarters */
  return (uint32_t)((1u << shift) + (j ? j * (1u << (shift - 2)) : 1u << (shift - 3)));
}

static uint32_t class_ndatablocks(uint32_t size) {
  /* Smallest page (in 16-datablock steps, 64..512 KiB) that holds at least
   * 8 objects and wastes at most 1/32 of itself. */
  for (uint32_t np = 16; np <= 128; np += 16) {
    size_t bytes = (size_t)np << MM_DATABLOCK_SHIFT;
    size_t cap = bytes / size;
    if (cap >= 8 && (bytes - cap * size) * 32 <= bytes) return np;
  }
  return 64;
}

void size_class_init(void) {
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    size_class_t *sc = &mm_size_classes[c];
    sc->size = class_size(c);
    sc->ndatablocks = class_ndatablocks(sc->size);
    sc->capacity = (uint32_t)(((size_t)sc->ndatablocks << MM_DATABLOCK_SHIFT) / sc->size);
    sc->align = sc->size & (~sc->size + 1);
    sc->magic = UINT64_MAX / sc->size + 2; /* ceil(2^64 / size) + 1 */
  }
  for (unsigned k = 0; k < MM_DIRECT_SLOTS; k++)
    mm_direct_class[k] = (uint8_t)size_class_of_slow(k ? 16 * k : 1);
  for (unsigned k = 0; k < MM_MEDIUM_SLOTS; k++)
    mm_medium_class[k] = (uint8_t)size_class_of_slow(k ? MM_MEDIUM_STEP * k : 1);
}

/* The class of a size in (0, MM_SMALL_MAX], by arithmetic. */
unsigned size_class_of_slow(size_t n) {
  if (n <= 128) return n ? (unsigned)((n - 1) >> 4) : 0;
  unsigned b = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
  /* n - 1 in [2^b, 2^(b+1)): four classes of 2^(b-2) above 2^b */
  if (n <= 1024) return 8 + (b - 7) * 4 + (unsigned)((n - 1) >> (b - 2)) - 4;
  unsigned base = MM_CLASS_FINE + (b - 10) * 5;
  if (n - 1 < (1u << b) + (1u << (b - 3))) return base;
  return base + 1 + (unsigned)((n - 1) >> (b - 2)) - 4;
}

bool size_class_is_valid(char *why, size_t why_size) {
  uint32_t prev = 0;
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    const size_class_t *sc = &mm_size_classes[c];
    size_t bytes = (size_t)sc->ndatablocks << MM_DATABLOCK_SHIFT;
    if (sc->size <= prev || sc->size % 16) {
      os_format(why, why_size, "class %u: size %u not increasing or not a multiple of 16", c, sc->size);
      return false;
    }
    if ((size_t)sc->capacity * sc->size > bytes || sc->capacity == 0) {
      os_format(why, why_size, "class %u: capacity %u does not fit", c, sc->capacity);
      return false;
    }
    if (sc->size > MM_DIRECT_MAX && sc->size % MM_MEDIUM_STEP) {
      os_format(why, why_size, "class %u: size %u above MM_DIRECT_MAX not a multiple of MM_MEDIUM_STEP",
                c, sc->size);
      return false;
    }
    if (size_class_of_slow(sc->size) != c || size_class_of_slow(prev + 1) != c) {
      os_format(why, why_size, "class %u: size_class_of is not the smallest fit", c);
      return false;
    }
    uint64_t step = sc->magic * sc->size;
    for (uint64_t i = 0; i <= sc->capacity; i++) {
      uint64_t o = i * sc->size;
      /* every block start passes, as block i; the bytes just before and
       * after fail */
      if (!(o * sc->magic < sc->magic) || o * sc->magic != i * step ||
          (o && (o - 1) * sc->magic < sc->magic) || (o + 1) * sc->magic < sc->magic) {
        os_format(why, why_size, "class %u: magic wrong at offset %lu", c, (unsigned long)o);
        return false;
      }
    }
    if (step == 0 || (uint64_t)sc->capacity * step >= sc->magic) {
      os_format(why, why_size, "class %u: block step %lu unusable with magic", c, (unsigned long)step);
      return false;
    }
    prev = sc->size;
  }
  if (prev != MM_SMALL_MAX) {
    os_format(why, why_size, "largest class %u is not MM_SMALL_MAX", prev);
    return false;
  }
  return true;
}
