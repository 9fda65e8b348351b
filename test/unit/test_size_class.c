/* test_size_class.c — size-class math: every size maps to the smallest
 * class that holds it, the direct and medium tables agree, the divisibility test the
 * free fast path uses is exact, aligned classes are aligned.  Not a benchmark. */
#include <stdint.h>

#include "check.h"
#include "size_class.h"

int main(void) {
  size_class_init();
  char why[200] = "";
  CHECK("checker accepts the table", size_class_is_valid(why, sizeof(why)));
  if (why[0]) fprintf(stderr, "checker: %s\n", why);

  CHECK("class 0 is 16 bytes", mm_size_classes[0].size == 16);
  CHECK("largest class is MM_SMALL_MAX", mm_size_classes[MM_CLASSES - 1].size == MM_SMALL_MAX);
  CHECK("malloc(0) gets the 16-byte class", size_class_of(0) == 0);

  /* Every size: the class holds it, the class below does not. */
  int bad_fit = 0, bad_direct = 0, bad_medium = 0, bad_waste = 0;
  for (size_t n = 1; n <= MM_SMALL_MAX; n++) {
    unsigned c = size_class_of(n);
    if (c >= MM_CLASSES || mm_size_classes[c].size < n ||
        (c > 0 && mm_size_classes[c - 1].size >= n))
      bad_fit++;
    if (n <= MM_DIRECT_MAX && mm_direct_class[(n + 15) >> 4] != size_class_of_slow(n))
      bad_direct++;
    if (n > MM_DIRECT_MAX && size_class_of_medium(n) != size_class_of_slow(n)) bad_medium++;
    /* at most 25% internal fragmentation above 128 B, 15 bytes below, and
     * 12.5% for a power of two above 1 KiB and a header of up to an eighth
     * of it */
    uint32_t s = mm_size_classes[c].size;
    if (n > 128 ? (s - n) * 4 > n : s - n > 15) bad_waste++;
    uint32_t pow2 = n > 1 ? 1u << (31 - __builtin_clz((unsigned)(n - 1))) : 1;
    if (n > 1024 && n <= pow2 + pow2 / 8 && (s - n) * 8 > n) bad_waste++;
  }
  CHECK("every size maps to its smallest fitting class", bad_fit == 0);
  CHECK("direct table equals the arithmetic", bad_direct == 0);
  CHECK("medium table equals the arithmetic", bad_medium == 0);
  CHECK("internal fragmentation bounded", bad_waste == 0);

  /* Above 128 B, the quarters of each power of two; above 1 KiB also the
   * size an eighth above it, first. */
  int per_doubling_ok = 1;
  for (uint32_t p = 128; p < MM_SMALL_MAX; p *= 2) {
    int k = 0;
    for (unsigned c = 0; c < MM_CLASSES; c++) {
      uint32_t s = mm_size_classes[c].size;
      if (s <= p || s > 2 * p) continue;
      k++;
      if ((s - p) % (p / 4) && !(p >= 1024 && s == p + p / 8)) per_doubling_ok = 0;
    }
    if (k != (p < 1024 ? 4 : 5)) per_doubling_ok = 0;
  }
  CHECK("the quarters of each power of two, and an eighth above it from 1 KiB", per_doubling_ok);
  /* A growing block's class: n's own unless that is an eighth class, then
   * the next one up, a quarter class that holds n. */
  int bad_growing = 0;
  for (size_t n = 1; n <= MM_SMALL_MAX; n++) {
    unsigned c = size_class_of(n), g = size_class_of_growing(n);
    uint32_t s = mm_size_classes[c].size;
    uint32_t pow2 = 1u << (31 - __builtin_clz((unsigned)(s - 1 ? s - 1 : 1)));
    bool eighth = n > 1024 && s == pow2 + pow2 / 8;
    if (g != (eighth ? c + 1 : c) || mm_size_classes[g].size < n) bad_growing++;
  }
  CHECK("a growing block skips the eighth classes", bad_growing == 0);
  CHECK("MM_CLASS_FINE is the first class above 1 KiB",
        mm_size_classes[MM_CLASS_FINE - 1].size == 1024 && mm_size_classes[MM_CLASS_FINE].size == 1152);

  /* Pages: hold at least 8 blocks, waste at most 1/32. */
  int bad_page = 0;
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    const size_class_t *sc = &mm_size_classes[c];
    size_t bytes = (size_t)sc->ndatablocks << MM_DATABLOCK_SHIFT;
    if (sc->capacity < 8 || (bytes - (size_t)sc->capacity * sc->size) * 32 > bytes) bad_page++;
  }
  CHECK("pages hold >= 8 blocks and waste <= 1/32", bad_page == 0);

  /* The divisibility test: exact for every offset inside a page, not only
   * at block starts (the free fast path rejects interior pointers with it),
   * and for offsets far beyond (a stale or wild pointer). */
  int bad_magic = 0;
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    const size_class_t *sc = &mm_size_classes[c];
    uint64_t bytes = (uint64_t)sc->ndatablocks << MM_DATABLOCK_SHIFT;
    for (uint64_t off = 0; off < bytes; off++)
      if ((off * sc->magic < sc->magic) != (off % sc->size == 0)) bad_magic++;
    for (uint64_t off = bytes; off < ((uint64_t)1 << 32); off += 65537 + c)
      if ((off * sc->magic < sc->magic) != (off % sc->size == 0)) bad_magic++;
  }
  CHECK("divisibility test exact at every offset", bad_magic == 0);

  /* Aligned classes: blocks aligned (size multiple of the alignment). */
  int bad_aligned = 0;
  for (size_t align = 32; align <= MM_DATABLOCK_SIZE; align *= 2)
    for (size_t n = 1; n <= MM_SMALL_MAX; n += 97) {
      unsigned c = size_class_aligned(n, align);
      if (c == MM_CLASSES) continue;
      if (mm_size_classes[c].size < n || mm_size_classes[c].size % align) bad_aligned++;
    }
  CHECK("aligned classes fit and align", bad_aligned == 0);
  CHECK("4 KiB alignment of a small size has a class", size_class_aligned(100, 4096) < MM_CLASSES);
  CHECK("no class above MM_SMALL_MAX", size_class_aligned(MM_SMALL_MAX + 1, 16) == MM_CLASSES);

  /* The checker catches a broken table. */
  uint64_t saved = mm_size_classes[5].magic;
  mm_size_classes[5].magic = saved - 2;
  CHECK("checker rejects a wrong divisibility constant", !size_class_is_valid(why, sizeof(why)));
  mm_size_classes[5].magic = saved;
  uint32_t saved_cap = mm_size_classes[3].capacity;
  mm_size_classes[3].capacity = saved_cap + 100000;
  CHECK("checker rejects an impossible capacity", !size_class_is_valid(why, sizeof(why)));
  mm_size_classes[3].capacity = saved_cap;
  CHECK("checker accepts the repaired table", size_class_is_valid(why, sizeof(why)));
  return check_summary("unit_size_class");
}
