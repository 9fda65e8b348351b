/* api.c — semantics of the malloc family, black-box.
 *
 * Built twice (test/api/CMakeLists.txt): api_mm exercises the mm_ names of
 * include/mmalloc.h, api_std the standard names that libmmalloc.so replaces
 * (names.h).  Every case asserts observable behaviour: sizes, alignment,
 * contents, errno, and that a block is freed (a child process then gets an
 * mmalloc error when it touches it through the API).
 *
 * Facts the issue promises and this file checks:
 *   - no header in front of objects: successive malloc(16) in a fresh thread
 *     are 16 bytes apart;
 *   - small classes: 16-byte steps to 128 B, then 4 per power of two to
 *     32 KiB (its quarters), and from 1 KiB one more an eighth above each
 *     power of two; requested <= usable < 1.25 * requested + 16; a block
 *     that realloc grows to 1-32 KiB gets a quarter class;
 *   - larger blocks are page multiples;
 *   - glibc conventions: realloc(p, 0) frees p and returns NULL,
 *     realloc(NULL, n) is malloc(n), memalign rounds a non-power-of-two
 *     alignment up, aligned_alloc rejects it with EINVAL.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>

#include "api/harness.h"
#include "api/names.h"
#include "check.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define PAGE ((size_t)4096)

/* The size class the issue promises for a small request n (1..32 KiB). */
static size_t spec_class(size_t n) {
  if (n <= 128) return (n + 15) & ~(size_t)15;
  size_t p = 128;
  while (p * 2 < n) p *= 2; /* p < n <= 2p */
  if (p >= 1024 && n <= p + p / 8) return p + p / 8;
  size_t step = p / 4;
  return (n + step - 1) / step * step;
}

static size_t usable(void *p) { return F(malloc_usable_size)(p); }

/* ---- the block is no longer live: a child touching it gets an mmalloc error */
static void *freed_probe;
static void child_usable(void *arg) {
  (void)arg;
  size_t n = F(malloc_usable_size)(opaque_ptr(freed_probe));
  printf("usable %zu\n", n);
}
static bool is_freed(void *p) {
  static child_t c;
  freed_probe = p;
  child_run(&c, child_usable, NULL);
  bool ok = child_aborted(&c) && strncmp(c.err, "mmalloc: ", 9) == 0;
  if (!ok) child_describe(&c, "malloc_usable_size of a freed block");
  return ok;
}

/* ---- no headers ------------------------------------------------------------ */
typedef struct spacing_s {
  size_t size;
  int count, off_step; /* blocks, and consecutive pairs not `size` apart */
} spacing_t;

static void *spacing_thread(void *arg) {
  spacing_t *s = arg;
  enum { N = 256 };
  char *p[N];
  for (int i = 0; i < N; i++) p[i] = F(malloc)(s->size);
  s->count = N;
  s->off_step = 0;
  for (int i = 1; i < N; i++) {
    intptr_t d = p[i] - p[i - 1];
    if (d != (intptr_t)s->size && d != -(intptr_t)s->size) s->off_step++;
  }
  for (int i = 0; i < N; i++) F(free)(p[i]);
  return NULL;
}

static void test_no_headers(void) {
  static const size_t sizes[] = {16, 32, 48, 128, 256, 1024};
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    spacing_t s = {sizes[k], 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, spacing_thread, &s);
    pthread_join(t, NULL);
    /* A new page may start every 4 KiB of blocks: allow one break for each. */
    int allowed = (int)(s.count * sizes[k] / PAGE) + 1;
    if (s.off_step > allowed)
      fprintf(stderr, "  malloc(%zu) x %d in a fresh thread: %d consecutive pairs not %zu apart\n",
              sizes[k], s.count, s.off_step, sizes[k]);
    CHECK(API " no header: successive malloc(n) are n bytes apart", s.off_step <= allowed);
  }
}

/* ---- size classes ---------------------------------------------------------- */
static void test_size_classes(void) {
  size_t last_class = 0;
  int nclasses = 0, bad_class = 0, bad_bound = 0, bad_align = 0;
  for (size_t n = 1; n <= 32 * KiB; n++) {
    void *p = F(malloc)(n);
    REQUIRE(API " malloc(small) != NULL", p != NULL);
    size_t u = usable(p);
    if (u != spec_class(n) && bad_class++ < 5)
      fprintf(stderr, "  malloc(%zu): usable %zu, promised class %zu\n", n, u, spec_class(n));
    if ((u < n || (double)u >= 1.25 * (double)n + 16) && bad_bound++ < 5)
      fprintf(stderr, "  malloc(%zu): usable %zu outside [n, 1.25n+16)\n", n, u);
    if (n >= 16 && !is_aligned(p, 16)) bad_align++;
    if (u != last_class) {
      last_class = u;
      nclasses++;
    }
    ((volatile char *)p)[n - 1] = 1;
    ((volatile char *)p)[0] = 1;
    F(free)(p);
  }
  CHECK(API " small usable size is the promised class", bad_class == 0);
  CHECK(API " small usable size in [n, 1.25n+16)", bad_bound == 0);
  CHECK(API " malloc(n >= 16) is 16-byte aligned", bad_align == 0);
  /* 8 classes of 16 B to 128 B, then 4 per power of two up to 1 KiB and 5
   * up to 32 KiB. */
  CHECK(API " 45 small size classes up to 32 KiB", nclasses == 8 + 4 * 3 + 5 * 5);
  /* realloc growing a block takes the quarters: 2,100 B is 2,304 (an
   * eighth above 2 KiB) from malloc, 2,560 from a growing realloc */
  void *a = F(malloc)(2100), *g = F(malloc)(1500);
  REQUIRE(API " malloc(2100), malloc(1500)", a && g);
  g = F(realloc)(g, 2100);
  REQUIRE(API " realloc to 2100", g != NULL);
  CHECK(API " malloc(2100) is the class an eighth above 2 KiB", usable(a) == 2304);
  CHECK(API " realloc growing to 2100 takes a quarter class", usable(g) == 2560);
  F(free)(a);
  F(free)(g);
  CHECK(API " largest small class is 32 KiB", last_class == 32 * KiB);
}

static void test_large_sizes(void) {
  static const size_t sizes[] = {32 * KiB + 1, 40000,      64 * KiB,     100 * KiB,
                                 MiB + 1,      8 * MiB - 1, 31 * MiB + 7, 33 * MiB,
                                 40 * MiB};
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    size_t n = sizes[k];
    void *p = F(malloc)(n);
    REQUIRE(API " malloc(large) != NULL", p != NULL);
    size_t u = usable(p);
    if (((uintptr_t)p + u) % PAGE || u < n) fprintf(stderr, "  malloc(%zu) = %p: usable %zu\n", n, p, u);
    CHECK(API " a large block's usable size ends on a page boundary", ((uintptr_t)p + u) % PAGE == 0);
    CHECK(API " large usable size >= requested", u >= n);
    CHECK(API " large usable size < 2n + 1 page", u < 2 * n + PAGE);
    CHECK(API " large block 16-byte aligned", is_aligned(p, 16));
    CHECK(API " large block writable over its usable size", touch_all(p, u));
    F(free)(p);
  }
  /* Colours (MMALLOC_CACHE_COLOUR): 64 blocks of 256 KiB in a row start at
   * 64 different cache-line offsets into a page (their usable sizes end on
   * a page boundary: above); with the colours off (secure mode turns them
   * off), every one on a page boundary. */
  enum { NC = 64 };
  void *c[NC];
  uint64_t seen = 0;
  int on_page = 0;
  for (int i = 0; i < NC; i++) {
    c[i] = F(malloc)(256 * KiB);
    REQUIRE(API " malloc(256 KiB) != NULL", c[i] != NULL);
    uintptr_t off = (uintptr_t)c[i] % PAGE;
    seen |= (uint64_t)1 << (off / 64 % 64);
    on_page += off == 0;
  }
  if (mm_option_get("cache_colour") == 1)
    CHECK(API " 64 large blocks in a row take 64 cache-line offsets", seen == ~(uint64_t)0);
  else
    CHECK(API " without colours every large block starts on a page", on_page == NC);
  for (int i = 0; i < NC; i++) F(free)(c[i]);
}

/* ---- malloc / free basics --------------------------------------------------- */
static void test_basics(void) {
  void *z1 = F(malloc)(opaque_size(0)), *z2 = F(malloc)(opaque_size(0));
  CHECK(API " malloc(0) != NULL", z1 != NULL && z2 != NULL);
  CHECK(API " malloc(0) gives distinct pointers", z1 != z2);
  CHECK(API " malloc(0) 16-aligned", is_aligned(z1, 16));
  F(free)(z1);
  F(free)(z2);
  char *one = F(malloc)(opaque_size(1));
  CHECK(API " malloc(1) != NULL", one != NULL);
  CHECK(API " malloc(1) usable >= 1", one && usable(one) >= 1);
  if (one) one[0] = 'x';
  F(free)(one);
  F(free)(NULL);
  CHECK(API " malloc_usable_size(NULL) == 0", F(malloc_usable_size)(NULL) == 0);

  /* Many live blocks of mixed sizes never overlap (each keeps its bytes). */
  enum { N = 3000 };
  static unsigned char *blk[N];
  static size_t len[N];
  uint64_t s = 12345;
  for (int i = 0; i < N; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    int kind = (int)(s >> 60);
    len[i] = kind < 12 ? 1 + (s >> 33) % 1024 : kind < 15 ? 1 + (s >> 33) % (32 * KiB)
                                                           : 32 * KiB + (s >> 33) % (2 * MiB);
    blk[i] = F(malloc)(len[i]);
    REQUIRE(API " mixed malloc != NULL", blk[i] != NULL);
    pattern_fill(blk[i], len[i], (unsigned)i);
  }
  int bad = 0;
  for (int i = 0; i < N; i++) bad += pattern_check(blk[i], len[i], (unsigned)i) != (size_t)-1;
  CHECK(API " 3000 live mixed blocks keep their bytes", bad == 0);
  for (int i = 0; i < N; i += 2) F(free)(blk[i]);
  bad = 0;
  for (int i = 1; i < N; i += 2) bad += pattern_check(blk[i], len[i], (unsigned)i) != (size_t)-1;
  CHECK(API " blocks keep their bytes when neighbours are freed", bad == 0);
  for (int i = 1; i < N; i += 2) F(free)(blk[i]);
}

/* ---- calloc ------------------------------------------------------------------ */
static bool all_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i]) return false;
  return true;
}

static void test_calloc(void) {
  void *a = F(calloc)(opaque_size(0), 8), *b = F(calloc)(8, opaque_size(0));
  CHECK(API " calloc(0, n) != NULL", a != NULL);
  CHECK(API " calloc(n, 0) != NULL", b != NULL);
  F(free)(a);
  F(free)(b);
  /* Reused memory is zeroed: fill blocks with 0xFF, free, calloc the same size. */
  static const size_t sizes[] = {24, 1000, 20000, 64 * KiB, MiB, 40 * MiB};
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    size_t n = sizes[k];
    int count = n <= 20000 ? 32 : n <= MiB ? 4 : 1;
    void *blk[32];
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i < count; i++) {
        blk[i] = F(malloc)(n);
        REQUIRE(API " malloc for calloc reuse", blk[i] != NULL);
        memset(blk[i], 0xFF, usable(blk[i]));
      }
      for (int i = 0; i < count; i++) F(free)(blk[i]);
      int dirty = 0;
      for (int i = 0; i < count; i++) {
        /* alternate the two ways of asking for n bytes */
        blk[i] = (i + round) % 2 ? F(calloc)(1, n) : F(calloc)(n / 8, 8);
        size_t want = (i + round) % 2 ? n : n / 8 * 8;
        REQUIRE(API " calloc != NULL", blk[i] != NULL);
        if (!all_zero(blk[i], want)) dirty++;
      }
      if (dirty) fprintf(stderr, "  calloc(%zu) round %d: %d blocks not zero\n", n, round, dirty);
      CHECK(API " calloc zeroes reused memory", dirty == 0);
      for (int i = 0; i < count; i++) F(free)(blk[i]);
    }
  }
}

/* ---- realloc / reallocarray ---------------------------------------------------- */
static void test_realloc(void) {
  char *p = F(realloc)(NULL, 100);
  CHECK(API " realloc(NULL, n) allocates", p != NULL && usable(p) >= 100);
  if (p) memset(p, 1, 100);
  /* small -> small -> large -> huge -> bigger huge -> large -> small -> ... */
  static const size_t steps[] = {100,      3000,     100 * KiB, 40 * MiB,  50 * MiB,
                                 10 * MiB, 200 * KiB, 50,        5000,      MiB,
                                 33 * MiB, 16,       32 * KiB,  32 * KiB + 1, 1};
  size_t cur = 100;
  pattern_fill(p, cur, 7);
  for (size_t k = 1; k < sizeof(steps) / sizeof(steps[0]); k++) {
    size_t n = steps[k];
    char *q = F(realloc)(p, n);
    REQUIRE(API " realloc != NULL", q != NULL);
    size_t keep = cur < n ? cur : n;
    size_t bad = pattern_check(q, keep, 7);
    if (bad != (size_t)-1) fprintf(stderr, "  realloc %zu -> %zu: byte %zu differs\n", cur, n, bad);
    CHECK(API " realloc keeps the contents", bad == (size_t)-1);
    CHECK(API " realloc usable >= requested", usable(q) >= n);
    CHECK(API " realloc result writable", touch_all(q, usable(q)));
    pattern_fill(q, n, 7);
    p = q;
    cur = n;
  }
  /* same size, and growth byte by byte across the small classes */
  char *q = F(realloc)(p, cur);
  CHECK(API " realloc to the same size keeps the contents", q && pattern_check(q, cur, 7) == (size_t)-1);
  p = q;
  for (size_t n = 2; n <= 4 * KiB; n += 1 + n / 16) {
    q = F(realloc)(p, n);
    REQUIRE(API " realloc (grow by steps) != NULL", q != NULL);
    if (pattern_check(q, cur, 7) != (size_t)-1) {
      CHECK(API " realloc grow by steps keeps the contents", 0);
      break;
    }
    pattern_fill(q, n, 7);
    p = q;
    cur = n;
  }
  /* realloc(p, 0) frees p and returns NULL (glibc), small and large */
  static const size_t zero_sizes[] = {24, 100 * KiB, 40 * MiB};
  for (size_t k = 0; k < 3; k++) {
    char *r = F(malloc)(zero_sizes[k]);
    REQUIRE(API " malloc for realloc(p, 0)", r != NULL);
    errno = 0;
    char *z = F(realloc)(r, opaque_size(0));
    CHECK(API " realloc(p, 0) returns NULL", z == NULL);
    CHECK(API " realloc(p, 0) frees p", z == NULL && is_freed(r));
    if (z) F(free)(z);
  }
  F(free)(p);

  /* realloc of an aligned block keeps its contents */
  void *al = F(aligned_alloc)(4096, 100);
  REQUIRE(API " aligned_alloc for realloc", al != NULL);
  pattern_fill(al, 100, 3);
  char *al2 = F(realloc)(al, 100 * KiB);
  CHECK(API " realloc of an aligned block keeps the contents",
        al2 && pattern_check(al2, 100, 3) == (size_t)-1);
  F(free)(al2);

  /* reallocarray */
  int *arr = F(reallocarray)(NULL, 10, sizeof(int));
  CHECK(API " reallocarray(NULL, n, m) allocates", arr != NULL && usable(arr) >= 10 * sizeof(int));
  if (arr)
    for (int i = 0; i < 10; i++) arr[i] = i * i;
  int *arr2 = F(reallocarray)(arr, 100000, sizeof(int));
  bool same = arr2 != NULL;
  for (int i = 0; same && i < 10; i++) same = arr2[i] == i * i;
  CHECK(API " reallocarray grows and keeps the contents", same);
  if (arr2) {
    errno = 0;
    int *z = F(reallocarray)(arr2, opaque_size(0), sizeof(int));
    CHECK(API " reallocarray(p, 0, m) returns NULL like realloc(p, 0)", z == NULL);
    CHECK(API " reallocarray(p, 0, m) frees p", z == NULL && is_freed(arr2));
  }
}

/* Blocks made by threads that have exited: realloc (grow and shrink) keeps
 * their bytes, free takes them back, calloc then hands out zeroed memory. */
#define XN 1500
static unsigned char *xblk[XN];
static size_t xlen[XN];
static void *maker_thread(void *arg) {
  int base = (int)(intptr_t)arg;
  for (int i = base; i < base + XN / 3; i++) {
    xlen[i] = 1 + (size_t)(i * 7919) % (i % 10 == 0 ? 300000 : 3000);
    xblk[i] = F(malloc)(xlen[i]);
    if (xblk[i]) pattern_fill(xblk[i], xlen[i], (unsigned)i);
  }
  return NULL;
}

static void test_other_threads_blocks(void) {
  pthread_t t[3];
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, maker_thread, (void *)(intptr_t)(i * XN / 3));
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  int bad = 0;
  for (int i = 0; i < XN; i++) {
    REQUIRE(API " malloc in a thread", xblk[i] != NULL);
    size_t n = i % 3 == 0 ? xlen[i] / 2 + 1 : xlen[i] * 3;
    unsigned char *q = F(realloc)(xblk[i], n);
    REQUIRE(API " realloc of another thread's block", q != NULL);
    size_t keep = xlen[i] < n ? xlen[i] : n;
    bad += pattern_check(q, keep, (unsigned)i) != (size_t)-1;
    xblk[i] = q;
  }
  CHECK(API " realloc of blocks from exited threads keeps their bytes", bad == 0);
  for (int i = 0; i < XN; i += 2) {
    F(free)(xblk[i]);
    xblk[i] = F(calloc)(1, 1000);
  }
  bad = 0;
  for (int i = 0; i < XN; i += 2) bad += !all_zero(xblk[i], 1000);
  CHECK(API " calloc after freeing exited threads' blocks gives zeroed memory", bad == 0);
  for (int i = 0; i < XN; i++) F(free)(xblk[i]);
}

/* Blocks of a thread that is still running: malloc_usable_size and realloc
 * called by another thread give the answers they give for the caller's own
 * blocks (the promised class size; the bytes kept), and after the threads
 * swap roles the maker frees what the other reallocated. */
#define LN 200
static unsigned char *lblk[LN];
static size_t llen[LN];
static pthread_barrier_t lbar;
static void *live_maker_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < LN; i++) {
    llen[i] = 1 + (size_t)(i * 7919) % (i % 10 == 0 ? 32 * KiB : 1000);
    lblk[i] = F(malloc)(llen[i]);
    if (lblk[i]) pattern_fill(lblk[i], llen[i], (unsigned)i);
  }
  pthread_barrier_wait(&lbar); /* the other thread checks and reallocs */
  pthread_barrier_wait(&lbar);
  for (int i = 0; i < LN; i++) F(free)(lblk[i]);
  return NULL;
}

static void test_live_threads_blocks(void) {
  pthread_t t;
  pthread_barrier_init(&lbar, NULL, 2);
  pthread_create(&t, NULL, live_maker_thread, NULL);
  pthread_barrier_wait(&lbar);
  int bad_usable = 0, bad_bytes = 0;
  for (int i = 0; i < LN; i++) {
    REQUIRE(API " malloc in a live thread", lblk[i] != NULL);
    size_t u = usable(lblk[i]);
    if (u != spec_class(llen[i]) && bad_usable++ < 5)
      fprintf(stderr, "  a live thread's malloc(%zu): usable %zu, promised class %zu\n", llen[i], u,
              spec_class(llen[i]));
  }
  for (int i = 0; i < LN; i++) {
    size_t n = i % 2 ? llen[i] / 2 + 1 : llen[i] + 24;
    unsigned char *q = F(realloc)(lblk[i], n);
    REQUIRE(API " realloc of a live thread's block", q != NULL);
    bad_bytes += pattern_check(q, llen[i] < n ? llen[i] : n, (unsigned)i) != (size_t)-1;
    lblk[i] = q;
  }
  pthread_barrier_wait(&lbar);
  pthread_join(t, NULL);
  pthread_barrier_destroy(&lbar);
  CHECK(API " malloc_usable_size of a live thread's block is the promised class", bad_usable == 0);
  CHECK(API " realloc of a live thread's blocks keeps their bytes", bad_bytes == 0);
}

/* ---- aligned allocation ---------------------------------------------------------- */
typedef enum { VIA_POSIX, VIA_ALIGNED_ALLOC, VIA_MEMALIGN } via_t;
static const char *via_name[] = {"posix_memalign", "aligned_alloc", "memalign"};

static void *aligned_via(via_t via, size_t align, size_t size) {
  void *p = NULL;
  switch (via) {
  case VIA_POSIX:
    if (F(posix_memalign)(&p, align, size) != 0) p = NULL;
    return p;
  case VIA_ALIGNED_ALLOC:
    return F(aligned_alloc)(align, size);
  case VIA_MEMALIGN:
    return F(memalign)(align, size);
  }
  return NULL;
}

static void test_aligned_sweep(void) {
  size_t aligns[24];
  int na = 0;
  for (size_t a = 8; a <= 4 * MiB; a *= 2) aligns[na++] = a;
  aligns[na++] = 16 * MiB;
  aligns[na++] = 64 * MiB;
  int failures = 0;
  for (int via = 0; via < 3; via++) {
    for (int i = 0; i < na; i++) {
      size_t a = aligns[i];
      size_t sizes[] = {0, 1, a - 1, a, a + 1, 100 * KiB, 40 * MiB};
      for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        void *p = aligned_via((via_t)via, a, n);
        bool ok = p != NULL && is_aligned(p, a) && usable(p) >= n && touch_all(p, usable(p));
        if (!ok && failures++ < 10)
          fprintf(stderr, "  %s%s(align %zu, size %zu) = %p (usable %zu)\n", API, via_name[via], a,
                  n, p, p ? usable(p) : 0);
        F(free)(p);
      }
    }
  }
  CHECK(API " aligned allocations: aligned, usable >= size, writable, freeable", failures == 0);

  /* Many live blocks of each small size and alignment at once, so that
   * blocks deep inside pages are checked, not only a page's first. */
  enum { LIVE = 300 };
  static void *live[LIVE];
  int bad = 0;
  for (int via = 0; via < 3; via++) {
    for (size_t a = 32; a <= 4096; a *= 2) {
      for (size_t n = 1; n <= 5000; n += n < 200 ? 13 : 397) {
        for (int i = 0; i < LIVE; i++) {
          live[i] = aligned_via((via_t)via, a, n);
          if ((!live[i] || !is_aligned(live[i], a) || usable(live[i]) < n) && bad++ < 10)
            fprintf(stderr, "  %s%s(align %zu, size %zu), block %d: %p\n", API, via_name[via], a, n,
                    i, live[i]);
        }
        for (int i = 0; i < LIVE; i++) F(free)(live[i]);
      }
    }
  }
  CHECK(API " many live aligned small blocks: each aligned, usable >= size", bad == 0);

  /* Alignments of 1, 2, 4 are powers of two: aligned_alloc and memalign accept them. */
  for (size_t a = 1; a <= 4; a *= 2) {
    void *p = F(aligned_alloc)(a, 10), *q = F(memalign)(a, 10);
    CHECK(API " aligned_alloc(1|2|4, n) != NULL", p != NULL);
    CHECK(API " memalign(1|2|4, n) != NULL", q != NULL);
    F(free)(p);
    F(free)(q);
  }
}

/* Alignments of the slot size (128 MiB) and beyond: each case in a child,
 * since a block the allocator does not recognise aborts the process. */
typedef struct big_align_s {
  via_t via;
  size_t align, size;
} big_align_t;

static void big_align_child(void *arg) {
  const big_align_t *b = arg;
  void *p = aligned_via(b->via, b->align, b->size);
  printf("%p\n", p);
  fflush(stdout);
  if (!p || !is_aligned(p, b->align)) _exit(3);
  size_t u = usable(p);
  if (u < b->size || !touch_all(p, u)) _exit(4);
  F(free)(p);
}

static void test_aligned_beyond_slot(void) {
  static child_t c;
  int failures = 0;
  for (int via = 0; via < 3; via++)
    for (size_t a = (size_t)128 << 20; a <= (size_t)256 << 20; a *= 2) {
      const size_t sizes[] = {1, 100 * KiB, 40 * MiB};
      for (size_t k = 0; k < 3; k++) {
        big_align_t b = {(via_t)via, a, sizes[k]};
        child_run(&c, big_align_child, &b);
        if (!child_exited_ok(&c) && failures++ < 6) {
          fprintf(stderr, "  %s%s(align %zu MiB, size %zu) = %.*s", API, via_name[via], a >> 20,
                  sizes[k], (int)c.out_len, c.out);
          child_describe(&c, "alignment >= 128 MiB");
        }
      }
    }
  CHECK(API " alignments of 128 and 256 MiB: aligned, usable, writable, freeable", failures == 0);
}

/* realloc of aligned blocks (small, large, huge; alignments to 16 MiB)
 * keeps their bytes. */
static void test_aligned_realloc(void) {
  static const size_t aligns[] = {64, 4096, MiB, 16 * MiB};
  static const size_t sizes[] = {100, 40000, MiB, 40 * MiB};
  static const size_t targets[] = {10, 50000, 5 * MiB, 50 * MiB};
  int bad = 0;
  for (size_t a = 0; a < 4; a++)
    for (size_t i = 0; i < 4; i++)
      for (size_t j = 0; j < 4; j++) {
        unsigned char *p = F(aligned_alloc)(aligns[a], sizes[i]);
        REQUIRE(API " aligned_alloc for realloc", p != NULL);
        pattern_fill(p, sizes[i], (unsigned)(a * 16 + i));
        unsigned char *q = F(realloc)(p, targets[j]);
        REQUIRE(API " realloc of an aligned block", q != NULL);
        size_t keep = sizes[i] < targets[j] ? sizes[i] : targets[j];
        if (pattern_check(q, keep, (unsigned)(a * 16 + i)) != (size_t)-1 || usable(q) < targets[j]) {
          if (bad++ < 5)
            fprintf(stderr, "  aligned_alloc(%zu, %zu) then realloc to %zu: bytes or size lost\n",
                    aligns[a], sizes[i], targets[j]);
        }
        F(free)(q);
      }
  CHECK(API " realloc of aligned blocks keeps their bytes", bad == 0);
}

static void test_aligned_invalid(void) {
  static const size_t bad_posix[] = {0, 1, 2, 4, 3, 24, 48, 1000, 4097, SIZE_MAX,
                                     ((size_t)1 << 63) | 1};
  for (size_t k = 0; k < sizeof(bad_posix) / sizeof(bad_posix[0]); k++) {
    void *sentinel = (void *)(uintptr_t)0x5e47;
    void *p = sentinel;
    int rc = F(posix_memalign)(&p, opaque_size(bad_posix[k]), 64);
    if (rc != EINVAL || p != sentinel)
      fprintf(stderr, "  posix_memalign(align %zu): rc %d, out %p\n", bad_posix[k], rc, p);
    CHECK(API " posix_memalign(bad alignment) == EINVAL", rc == EINVAL);
    CHECK(API " posix_memalign(bad alignment) leaves *out untouched", p == sentinel);
  }
  static const size_t bad_aligned[] = {0, 3, 24, 48, 1000, 4097, SIZE_MAX};
  for (size_t k = 0; k < sizeof(bad_aligned) / sizeof(bad_aligned[0]); k++) {
    errno = 0;
    void *p = F(aligned_alloc)(opaque_size(bad_aligned[k]), 64);
    if (p || errno != EINVAL)
      fprintf(stderr, "  aligned_alloc(align %zu): %p errno %d\n", bad_aligned[k], p, errno);
    CHECK(API " aligned_alloc(non-power-of-two) == NULL", p == NULL);
    CHECK(API " aligned_alloc(non-power-of-two) sets EINVAL", errno == EINVAL);
    F(free)(p);
  }
  /* A power of two too large to satisfy: ENOMEM, not a crash. */
  void *sentinel = (void *)(uintptr_t)0x5e47, *p = sentinel;
  int rc = F(posix_memalign)(&p, opaque_size((size_t)1 << 62), 1);
  CHECK(API " posix_memalign(2^62) == ENOMEM", rc == ENOMEM);
  CHECK(API " posix_memalign(2^62) leaves *out untouched", p == sentinel);
  errno = 0;
  void *q = F(aligned_alloc)(opaque_size((size_t)1 << 62), 1);
  CHECK(API " aligned_alloc(2^62) == NULL, ENOMEM", q == NULL && errno == ENOMEM);

  /* memalign follows glibc: non-powers of two round up. */
  static const struct { size_t align, size, want; } ma[] = {
      {24, 100, 32}, {3, 100, 4}, {48, 1, 64}, {1000, 100, 1024}, {5000, 10, 8192},
      {100000, 100 * KiB, 128 * KiB}, {3 * MiB, 1, 4 * MiB}};
  for (size_t k = 0; k < sizeof(ma) / sizeof(ma[0]); k++) {
    void *m = F(memalign)(opaque_size(ma[k].align), ma[k].size);
    if (!m || !is_aligned(m, ma[k].want))
      fprintf(stderr, "  memalign(%zu, %zu) = %p, want %zu-aligned\n", ma[k].align, ma[k].size, m,
              ma[k].want);
    CHECK(API " memalign(non-power-of-two) rounds the alignment up", m && is_aligned(m, ma[k].want));
    CHECK(API " memalign result usable >= size", m && usable(m) >= ma[k].size);
    F(free)(m);
  }
  void *m0 = F(memalign)(opaque_size(0), 10);
  CHECK(API " memalign(0, n) != NULL", m0 != NULL);
  F(free)(m0);
  errno = 0;
  void *mbig = F(memalign)(opaque_size(((size_t)1 << 63) + 1), 1);
  CHECK(API " memalign(alignment > SIZE_MAX/2+1) == NULL, EINVAL", mbig == NULL && errno == EINVAL);
}

static void test_valloc_pvalloc(void) {
  static const size_t sizes[] = {0, 1, 4095, 4096, 4097, 100 * KiB, 40 * MiB};
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    size_t n = sizes[k];
    void *v = F(valloc)(n);
    CHECK(API " valloc != NULL", v != NULL);
    CHECK(API " valloc page-aligned", is_aligned(v, PAGE));
    CHECK(API " valloc usable >= size", v && usable(v) >= n);
    CHECK(API " valloc writable", v && touch_all(v, usable(v)));
    F(free)(v);
    void *pv = F(pvalloc)(n);
    size_t want = n ? (n + PAGE - 1) / PAGE * PAGE : PAGE;
    if (!pv || usable(pv) < want) fprintf(stderr, "  pvalloc(%zu) = %p\n", n, pv);
    CHECK(API " pvalloc != NULL", pv != NULL);
    CHECK(API " pvalloc page-aligned", is_aligned(pv, PAGE));
    CHECK(API " pvalloc usable >= size rounded up to a page", pv && usable(pv) >= want);
    CHECK(API " pvalloc writable over the rounded size", pv && touch_all(pv, usable(pv)));
    F(free)(pv);
  }
}

/* A request too big for any block gets NULL and ENOMEM whatever this
 * thread has freed: here one-datablock large blocks (memalign(64 KiB, 1)),
 * which a thread's stash of medium blocks could keep.  The datablock count
 * of a size near SIZE_MAX once wrapped round to 1 (the stash asked for
 * that size then, and malloc(SIZE_MAX) returned such a block: found by
 * the fuzzer). */
static void test_too_big_after_aligned(void) {
  int got = 0, errnos = 0;
  for (int round = 0; round < 8; round++) {
    for (int k = 0; k < 3; k++) {
      errno = 0;
      void *q = F(malloc)(opaque_size(SIZE_MAX - (size_t)k));
      got += q != NULL;
      errnos += errno != ENOMEM;
    }
    void *a = F(memalign)(opaque_size(64 * KiB), 1), *b = F(memalign)(opaque_size(64 * KiB), 1);
    F(free)(a);
    F(free)(b);
  }
  CHECK(API " malloc(SIZE_MAX - k) == NULL after freed aligned blocks", got == 0);
  CHECK(API " malloc(SIZE_MAX - k) sets ENOMEM after freed aligned blocks", errnos == 0);
}

/* An aligned request of a medium size a thread keeps freed blocks of (its
 * stash: 100,000 bytes asked for and freed again and again, which have
 * 2,400 bytes of slack, so colours) gets the alignment: a stashed block,
 * which starts at its colour, takes one that fits it. */
static void test_aligned_after_medium_frees(void) {
  enum { SIZE = 100000 };
  int misaligned = 0, coloured = 0;
  for (int round = 0; round < 12; round++) {
    void *m[3];
    for (int k = 0; k < 3; k++) m[k] = F(malloc)(opaque_size(SIZE));
    for (int k = 0; k < 3; k++) coloured += (uintptr_t)m[k] % PAGE != 0;
    for (int k = 0; k < 3; k++) F(free)(m[k]);
    size_t align = (size_t)128 << (round % 6); /* 128 B .. 4 KiB */
    void *a = NULL;
    if (F(posix_memalign)(&a, opaque_size(align), SIZE) != 0) a = NULL;
    misaligned += !a || !is_aligned(a, align);
    if (a) memset(a, 0x5c, SIZE);
    F(free)(a);
  }
  CHECK(API " posix_memalign of a medium size after frees of it is aligned", misaligned == 0);
  if (mm_option_get("cache_colour") == 1)
    CHECK(API " medium blocks with slack are coloured", coloured > 0);
}

int main(void) {
  test_no_headers(); /* first: fresh threads in a fresh process */
  test_basics();
  test_size_classes();
  test_large_sizes();
  test_calloc();
  test_realloc();
  test_other_threads_blocks();
  test_live_threads_blocks();
  test_aligned_sweep();
  test_aligned_beyond_slot();
  test_aligned_realloc();
  test_aligned_invalid();
  test_valloc_pvalloc();
  test_too_big_after_aligned();
  test_aligned_after_medium_frees();
  return check_summary(SUITE);
}
