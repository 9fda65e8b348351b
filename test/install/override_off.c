/* override_off.c — a program linked with an MM_OVERRIDE=OFF libmmalloc
 * (shared or static): the C library's malloc/free and mmalloc's
 * mm_malloc/mm_free side by side (test/install/run.sh, case override-off).
 *
 * Checks that
 *   - malloc is the C library's: glibc's own arena statistics (mallinfo2)
 *     count a malloc'ed block and forget it after free; with the override
 *     linked in they would not move (mallinfo2 is not overridden);
 *   - mm_malloc is mmalloc's: mm_malloc_usable_size (which aborts on a
 *     pointer mmalloc never handed out) answers for its blocks, and they do
 *     not show in glibc's statistics;
 *   - both keep their bytes while interleaved, through realloc/mm_realloc.
 * Prints one line and exits 0, or names the first failed check and exits 1. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mmalloc.h>

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
static size_t glibc_in_use(void) { return mallinfo2().uordblks; }
#else
static size_t glibc_in_use(void) { return (size_t)(unsigned)mallinfo().uordblks; }
#endif

#define CHECK(cond)                                       \
  do {                                                    \
    if (!(cond)) {                                        \
      printf("FAIL %s (line %d)\n", #cond, __LINE__);     \
      return 1;                                           \
    }                                                     \
  } while (0)

#define N 256

int main(void) {
  /* Warm both allocators up (first-call set-up, thread heap, arena). */
  mm_free(mm_malloc(1000));
  free(malloc(1000));

  /* The C library's malloc.  4000 bytes: above glibc's per-thread cache,
   * whose blocks would still count as in use once freed. */
  size_t before = glibc_in_use();
  char *g = malloc(4000);
  CHECK(g != NULL);
  size_t during = glibc_in_use();
  CHECK(during >= before + 4000);            /* glibc counts it: malloc is glibc's */
  CHECK(malloc_usable_size(g) >= 4000);
  memset(g, 'g', 1000);
  char *g2 = malloc(4000);
  CHECK(g2 != NULL);
  size_t with_g2 = glibc_in_use();
  free(g2);
  CHECK(glibc_in_use() + 4000 <= with_g2);   /* and forgets it after free */

  /* mmalloc's, beside it. */
  char *m = mm_malloc(1000);
  CHECK(m != NULL);
  CHECK(mm_malloc_usable_size(m) >= 1000);   /* aborts unless mmalloc handed it out */
  CHECK(glibc_in_use() == during);           /* not from glibc's heap */
  memset(m, 'm', 1000);

  /* Interleaved, both kept intact; realloc on each side. */
  char *gs[N], *ms[N];
  for (int i = 0; i < N; i++) {
    size_t n = 16 + (size_t)i * 37;
    gs[i] = malloc(n);
    ms[i] = mm_malloc(n);
    CHECK(gs[i] != NULL && ms[i] != NULL);
    memset(gs[i], i & 0xff, n);
    memset(ms[i], ~i & 0xff, n);
  }
  for (int i = 0; i < N; i += 2) {
    size_t n = 16 + (size_t)i * 37;
    gs[i] = realloc(gs[i], 2 * n);
    ms[i] = mm_realloc(ms[i], 2 * n);
    CHECK(gs[i] != NULL && ms[i] != NULL);
    CHECK(mm_malloc_usable_size(ms[i]) >= 2 * n);
  }
  for (int i = 0; i < N; i++) {
    size_t n = 16 + (size_t)i * 37;
    for (size_t k = 0; k < n; k++) {
      CHECK(gs[i][k] == (char)(i & 0xff));
      CHECK(ms[i][k] == (char)(~i & 0xff));
    }
    free(gs[i]);
    mm_free(ms[i]);
  }
  for (int k = 0; k < 1000; k++) CHECK(g[k] == 'g' && m[k] == 'm');

  free(g);
  mm_free(m);

  char json[64];
  size_t len = mm_stats_json(json, sizeof json);
  CHECK(len > 0 && json[0] == '{');
  printf("malloc is glibc's (glibc's bytes in use %zu -> %zu with a 4000-byte block), "
         "mm_malloc is mmalloc's\n", before, during);
  return 0;
}
