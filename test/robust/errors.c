/* errors.c — impossible requests: NULL with errno, nothing lost.
 *
 * Built twice: robust_errors_std (standard names, libmmalloc.so linked in)
 * and robust_errors_mm (-DUSE_MM: the mm_ names).
 *   - calloc / reallocarray overflow, malloc(SIZE_MAX), malloc(PTRDIFF_MAX+1),
 *     sizes no machine has, realloc(p, SIZE_MAX) and friends: NULL, errno
 *     ENOMEM, and p untouched (its bytes still there, its usable size the
 *     same, still freeable) for small, large and huge p;
 *   - the aligned calls with impossible sizes: ENOMEM (posix_memalign returns
 *     it and leaves *out alone);
 *   - posix_memalign with a bad alignment: EINVAL, *out untouched;
 *     aligned_alloc with a non-power-of-two: NULL, EINVAL.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include "api/harness.h"
#include "api/names.h"
#include "check.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

#undef SUITE
#ifdef USE_MM
#define SUITE "robust_errors_mm"
#else
#define SUITE "robust_errors_std"
#endif

static const size_t impossible[] = {
    SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4095, (size_t)PTRDIFF_MAX + 1, (size_t)PTRDIFF_MAX,
    (size_t)1 << 62, (size_t)1 << 56, (size_t)1 << 50};
#define NIMPOSSIBLE (sizeof(impossible) / sizeof(impossible[0]))

static bool null_enomem(const char *what, size_t n, void *p) {
  int e = errno;
  bool ok = p == NULL && e == ENOMEM;
  if (!ok) fprintf(stderr, "  %s%s(%zu): %p, errno %d\n", API, what, n, p, e);
  return ok;
}

static void test_malloc(void) {
  for (size_t k = 0; k < NIMPOSSIBLE; k++) {
    size_t n = opaque_size(impossible[k]);
    errno = 0;
    CHECK(API " malloc(impossible) == NULL, ENOMEM", null_enomem("malloc", n, F(malloc)(n)));
    errno = 0;
    CHECK(API " calloc(1, impossible) == NULL, ENOMEM", null_enomem("calloc", n, F(calloc)(1, n)));
    errno = 0;
    CHECK(API " realloc(NULL, impossible) == NULL, ENOMEM",
          null_enomem("realloc(NULL)", n, F(realloc)(NULL, n)));
    errno = 0;
    CHECK(API " valloc(impossible) == NULL, ENOMEM", null_enomem("valloc", n, F(valloc)(n)));
    errno = 0;
    CHECK(API " pvalloc(impossible) == NULL, ENOMEM", null_enomem("pvalloc", n, F(pvalloc)(n)));
    errno = 0;
    CHECK(API " aligned_alloc(64, impossible) == NULL, ENOMEM",
          null_enomem("aligned_alloc(64)", n, F(aligned_alloc)(64, n)));
    errno = 0;
    CHECK(API " aligned_alloc(8, impossible) == NULL, ENOMEM",
          null_enomem("aligned_alloc(8)", n, F(aligned_alloc)(8, n)));
    errno = 0;
    CHECK(API " memalign(4096, impossible) == NULL, ENOMEM",
          null_enomem("memalign(4096)", n, F(memalign)(4096, n)));
    void *sentinel = (void *)(uintptr_t)0xabcdef, *out = sentinel;
    int rc = F(posix_memalign)(&out, 64, n);
    if (rc != ENOMEM || out != sentinel) fprintf(stderr, "  posix_memalign(64, %zu): %d %p\n", n, rc, out);
    CHECK(API " posix_memalign(64, impossible) == ENOMEM", rc == ENOMEM);
    CHECK(API " posix_memalign(64, impossible) leaves *out untouched", out == sentinel);
    out = sentinel;
    rc = F(posix_memalign)(&out, 1 << 20, n);
    CHECK(API " posix_memalign(1 MiB, impossible) == ENOMEM, *out untouched",
          rc == ENOMEM && out == sentinel);
  }
}

static void test_calloc_overflow(void) {
  static const size_t pairs[][2] = {
      {SIZE_MAX / 2, 3}, {(size_t)1 << 32, (size_t)1 << 32}, {SIZE_MAX, SIZE_MAX},
      {2, SIZE_MAX / 2 + 1}, {SIZE_MAX, 2}, {(size_t)1 << 33, (size_t)1 << 31},
      {65537, (size_t)1 << 48}};
  for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
    errno = 0;
    void *p = F(calloc)(opaque_size(pairs[k][0]), opaque_size(pairs[k][1]));
    CHECK(API " calloc(overflow) == NULL, ENOMEM", null_enomem("calloc(overflow)", pairs[k][0], p));
    errno = 0;
    p = F(reallocarray)(NULL, opaque_size(pairs[k][0]), opaque_size(pairs[k][1]));
    CHECK(API " reallocarray(NULL, overflow) == NULL, ENOMEM",
          null_enomem("reallocarray(NULL, overflow)", pairs[k][0], p));
  }
}

/* A failed realloc leaves p as it was: contents, usable size, freeable. */
static void test_realloc_keeps(void) {
  static const size_t sizes[] = {100, 100 * KiB, 40 * MiB};
  for (size_t s = 0; s < 3; s++) {
    size_t n = sizes[s];
    char *p = F(malloc)(n);
    REQUIRE(API " malloc for the realloc test", p != NULL);
    size_t u = F(malloc_usable_size)(p);
    pattern_fill(p, n, (unsigned)s);
    int bad = 0;
    for (size_t k = 0; k < NIMPOSSIBLE; k++) {
      errno = 0;
      void *q = F(realloc)(opaque_ptr(p), opaque_size(impossible[k]));
      if (!null_enomem("realloc(p, impossible)", impossible[k], q)) bad++;
      errno = 0;
      q = F(reallocarray)(opaque_ptr(p), opaque_size(impossible[k]), 2); /* overflow or impossible */
      if (!null_enomem("reallocarray(p, impossible, 2)", impossible[k], q)) bad++;
    }
    errno = 0;
    void *q = F(reallocarray)(opaque_ptr(p), opaque_size(SIZE_MAX / 2), 3);
    if (!null_enomem("reallocarray(p, SIZE_MAX/2, 3)", n, q)) bad++;
    CHECK(API " realloc/reallocarray(p, impossible) == NULL, ENOMEM", bad == 0);
    CHECK(API " failed realloc keeps p's bytes", pattern_check(p, n, (unsigned)s) == (size_t)-1);
    CHECK(API " failed realloc keeps p's usable size", F(malloc_usable_size)(p) == u);
    /* still a live block: it grows and is freed normally */
    char *r = F(realloc)(p, n * 2);
    CHECK(API " after failed reallocs p still reallocs", r && pattern_check(r, n, (unsigned)s) == (size_t)-1);
    F(free)(r ? r : p);
  }
}

static void test_bad_alignment(void) {
  static const size_t bad[] = {0, 3, 4, 24, 48, 1000, 4097, (size_t)1 << 63 | 1, SIZE_MAX};
  for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
    void *sentinel = (void *)(uintptr_t)0xabcdef, *out = sentinel;
    int rc = F(posix_memalign)(&out, opaque_size(bad[k]), 100);
    CHECK(API " posix_memalign(bad alignment) == EINVAL, *out untouched", rc == EINVAL && out == sentinel);
    /* the size does not change the verdict */
    out = sentinel;
    rc = F(posix_memalign)(&out, opaque_size(bad[k]), SIZE_MAX);
    CHECK(API " posix_memalign(bad alignment, SIZE_MAX) == EINVAL", rc == EINVAL && out == sentinel);
    if (bad[k] == 4) continue; /* a power of two: fine for aligned_alloc */
    errno = 0;
    void *p = F(aligned_alloc)(opaque_size(bad[k]), 100);
    CHECK(API " aligned_alloc(non-power-of-two) == NULL, EINVAL", p == NULL && errno == EINVAL);
    F(free)(p);
  }
}

/* A refused request makes mmalloc give free address space back (free
 * extents unmapped in place).  A large block that then grows in place into
 * such an extent must get its tail mapped again (found by the fuzzer:
 * test/fuzz/crashes/realloc-grows-into-unmapped-extent). */
static void test_grow_after_refusal(void) {
  unsigned char *a = F(malloc)(100 * KiB);
  unsigned char *b = F(malloc)(2 * MiB); /* right behind a */
  REQUIRE(API " malloc for the growth test", a != NULL && b != NULL);
  memset(a, 0x3C, 100 * KiB);
  F(free)(b);
  errno = 0;
  void *x = F(malloc)(opaque_size((size_t)1 << 50));
  CHECK(API " malloc(2^50) == NULL, ENOMEM", x == NULL && errno == ENOMEM);
  unsigned char *q = F(realloc)(a, MiB);
  REQUIRE(API " realloc after a refusal", q != NULL);
  memset(q + 100 * KiB, 0x5A, MiB - 100 * KiB); /* the tail is mapped */
  bool kept = q[0] == 0x3C && q[100 * KiB - 1] == 0x3C && q[MiB - 1] == 0x5A;
  CHECK(API " a block grown after a refusal keeps its bytes and is usable to its end", kept);
  F(free)(q);
}

int main(void) {
  test_grow_after_refusal();
  test_malloc();
  test_calloc_overflow();
  test_realloc_keeps();
  test_bad_alignment();
  /* and the allocator still works */
  void *p = F(malloc)(1000);
  CHECK(API " malloc works after all the failures", p != NULL);
  F(free)(p);
  return check_summary(SUITE);
}
