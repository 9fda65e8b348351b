/* fuzz_ops.c — the mmalloc fuzz target: an input is a small program of
 * allocator calls on a table of 64 handles ("slots"), run against the mm_
 * API of include/mmalloc.h and checked after every step.  libFuzzer calls
 * LLVMFuzzerTestOneInput (build-fuzz/fuzz_ops); driver.c calls it without
 * libFuzzer (fuzz_driver).  test/fuzz/README.md gives the input format byte
 * by byte; in short, an input is a sequence of operations:
 *
 *    op byte % 19      operands            what
 *     0 malloc          slot size           a new block in the slot (a live
 *     1 calloc          slot size elem        occupant is freed first)
 *     2 realloc         slot size           grow, shrink, from NULL, to 0
 *     3 reallocarray    slot size elem
 *     4 free            slot                free(NULL) when the slot is empty
 *     5 posix_memalign  slot align size
 *     6 aligned_alloc   slot align size
 *     7 memalign        slot align size
 *     8 valloc          slot size
 *     9 pvalloc         slot size
 *    10 usable          slot                malloc_usable_size; the object
 *                                             then fills all of it (<= 8 MiB more)
 *    11 on-helper       op(0..10) operands  that op, done by the helper thread
 *    12 new-helper      -                   the helper thread exits (its pages
 *                                             are abandoned), a new one starts
 *    13 collect         who                 mm_collect() on main or helper
 *    14 burst           count size mode     1..256 blocks allocated by one
 *                                             thread and freed by one
 *    15 free-all        who                 free every slot (main/helper/both)
 *    16 purge-delay     value               mm_option_set("purge_delay_ms", ..)
 *    17 pool            obj how             mmalloc's object pools (2 per input):
 *                                             alloc, free, release, statistics
 *    18 heap            obj how [align] [size]  a heap: malloc, calloc, realloc,
 *                                             aligned, free, destroy, usable, stats
 *
 * A size is 1 to 4 bytes: tiny (0..63), small (64 B..33 KiB), large (32 KiB
 * ..4 MiB), or special: a size-class or block-kind boundary (+-128 B), huge
 * (16..80 MiB) or impossible (SIZE_MAX, PTRDIFF_MAX+1, 2^50, ...).  An
 * alignment is one byte: a power of two up to 256 MiB, or an odd one (0, 3,
 * 24, 4097, 2^31, 2^47, 2^63, 2^62+1, SIZE_MAX, ...).  "elem" turns a size
 * into count x elem (or count 0, or an overflowing pair).  Reading past the
 * end gives zeros.  The helper is a persistent thread that runs one call at
 * a time for the main thread: frees of main's blocks are remote frees, and
 * its blocks are later freed by main (after it exited: abandoned pages).
 * Bounds: at most 256 MiB live (a request that would pass it is skipped),
 * 512 MiB allocated in blocks of 1 MiB and more, and 8 alignments above 1 GiB
 * per input.
 *
 * Checked after every step, for every live object: its bytes still carry
 * the pattern written when it was allocated (derived from its slot and
 * generation; objects up to 16 KiB are checked whole, bigger ones at head,
 * tail and the start of a rotating sample of pages every step and whole
 * before they are freed or reallocated; objects above 1 MiB carry the
 * pattern only on their first and last 64 KiB and the first 64 bytes of
 * every page, so every page is written and checked at a fraction of the
 * cost; MMFUZZ_FULL_CHECK=1 writes and checks every byte every step);
 * its usable size is at least the size asked for and has not changed; its
 * alignment (16, the page, or the one asked for); no two objects overlap.
 * At each call: calloc memory is zero before it is filled; realloc keeps
 * min(old, new) bytes; impossible sizes and count x size overflow give NULL
 * with ENOMEM and leave a realloc'd block intact (bytes and usable size);
 * bad alignments give EINVAL, memalign rounds them up (the top-level
 * README.md's table of each call, test/robust/errors.c); posix_memalign
 * leaves *out alone when it fails; realloc(p, 0) frees p and returns NULL;
 * malloc_usable_size(NULL) is 0.  A violation prints one "mmfuzz: FAIL"
 * line and aborts, so that libFuzzer records a crash.  Everything is freed
 * at the end of an input.
 *
 * Differential mode (MMFUZZ_DIFFERENTIAL=1 in the environment, or
 * fuzz_driver --diff): every call is made on glibc's allocator as well, on
 * the same thread, and what a program can observe is compared: NULL or not,
 * errno, posix_memalign's result, and the contents (both sides carry the
 * same pattern and are checked as above; objects are also compared with each
 * other, up to 16 KiB).  glibc is reached through dlopen(LIBC_SO,
 * RTLD_NOLOAD) and dlsym on that handle, which finds libc's own definitions
 * whatever else defines malloc in the process (ASan's interceptors in the
 * libFuzzer build, libmmalloc.so if it is preloaded); each is checked to
 * come from libc.so with dladdr.  The target is linked with the allocator's
 * objects minus override.c, so mmalloc never takes the plain names here.
 * glibc's reallocarray calls realloc through the PLT (ASan's under ASan),
 * so the glibc side does its overflow check itself and calls glibc's realloc,
 * as glibc does.  Not failures (the standard or the documented behaviour
 * leaves them open): addresses; exact usable sizes; aligned_alloc with an
 * alignment that is not a power of two (mmalloc: EINVAL; glibc 2.36 rounds
 * it up as memalign does); memalign with a non-power-of-two alignment above
 * 2^62 (EINVAL or ENOMEM); alignments of 2^31 and more below 2^47 (they cost
 * only address space: either may succeed; glibc's answer depends on
 * overcommit).  realloc(p, 0) does not differ: both free p and return NULL.
 *
 * Environment: MMFUZZ_DIFFERENTIAL=1, MMFUZZ_FULL_CHECK=1, MMFUZZ_TRACE=1
 * (print each step as it starts), and in the mutant build (mutants.c)
 * MMFUZZ_MUTANT=name.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <gnu/lib-names.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "mmalloc.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define NSLOTS 64
#define LIVE_CAP (256 * MiB)      /* requested bytes live at once, per allocator */
#define INPUT_BUDGET (512 * MiB)  /* bytes allocated per input in big requests */
#define BIG_REQUEST MiB
#define BIG_ALIGN ((size_t)1 << 30) /* alignments above it cost address space */
#define BIG_ALIGNS_MAX 8
#define FULL_CHECK_MAX (16 * KiB) /* bigger objects are sampled between steps */
#define SAMPLE_PAGES 16
#define DENSE_MAX MiB            /* bigger objects carry a sparse pattern: */
#define EDGE (64 * KiB)          /* their first and last 64 KiB, */
#define PAGE_SAMPLE 64           /* and the first 64 bytes of every page */
#define MIN_ALIGN _Alignof(max_align_t)
#define EXTEND_MAX (8 * MiB) /* op usable: the most an object grows into its slack */
#define BURST_MAX 256
#define BURST_BYTES (16 * MiB)
#define MAX_OPS 8192
#define SENTINEL ((void *)(uintptr_t)0xabcdef0)

/* The loops over object bytes: no coverage callbacks in them (under
 * libFuzzer they took 60% of the time and say nothing about the allocator). */
#if defined(__clang__)
#define BYTE_LOOP __attribute__((no_sanitize("coverage")))
#else
#define BYTE_LOOP
#endif

enum side_e { SIDE_MM, SIDE_LIBC, SIDES };

/* The slot calls; their numbers are also the op codes 0..10. */
typedef enum call_kind_e {
  CALL_MALLOC, CALL_CALLOC, CALL_REALLOC, CALL_REALLOCARRAY, CALL_FREE,
  CALL_POSIX_MEMALIGN, CALL_ALIGNED_ALLOC, CALL_MEMALIGN, CALL_VALLOC,
  CALL_PVALLOC, CALL_USABLE, CALL_KINDS
} call_kind_t;

enum op_e {
  OP_ON_HELPER = CALL_KINDS, OP_NEW_HELPER, OP_COLLECT, OP_BURST, OP_FREE_ALL,
  OP_PURGE_DELAY, OP_POOL, OP_HEAP, OP_COUNT
};

static const char *const call_names[CALL_KINDS] = {
    "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size"};

typedef struct call_s {
  call_kind_t kind;
  unsigned slot;
  size_t size;  /* calloc, reallocarray: the element size */
  size_t count; /* calloc, reallocarray: the element count */
  size_t align;
} call_t;

/* What one allocator answered to one call. */
typedef struct result_s {
  void *p;
  int err;          /* errno after the call; posix_memalign: its result */
  bool out_touched; /* posix_memalign changed *out */
  size_t usable;    /* CALL_USABLE */
} result_t;

/* What the documented behaviour says a call must give. */
typedef enum expect_e {
  EXPECT_BLOCK,   /* a block */
  EXPECT_ENOMEM,  /* NULL and ENOMEM (an input block left intact) */
  EXPECT_EINVAL,  /* NULL and EINVAL */
  EXPECT_FAIL,    /* NULL with ENOMEM or EINVAL */
  EXPECT_MAYBE,   /* a block, or NULL with ENOMEM */
  EXPECT_ANY,     /* a block, or NULL with ENOMEM or EINVAL */
  EXPECT_FREED,   /* realloc(p, 0): p freed, NULL returned */
  EXPECT_NOTHING  /* free, malloc_usable_size */
} expect_t;

static const char *const expect_names[] = {
    "a block", "NULL with ENOMEM", "NULL with EINVAL", "NULL with ENOMEM or EINVAL",
    "a block or NULL with ENOMEM", "a block or NULL with ENOMEM/EINVAL",
    "NULL (the block freed)", "nothing"};

/* One allocator's view of a slot's object. */
typedef struct object_s {
  unsigned char *p;
  size_t len;    /* bytes carrying the pattern: the request, or all usable */
  size_t usable; /* malloc_usable_size when allocated */
  size_t align;  /* the alignment the call promised */
} object_t;

typedef struct slot_s {
  object_t side[SIDES];
  size_t req;    /* bytes requested (what the live cap counts) */
  uint64_t seed; /* pattern seed, from (slot, generation) */
  bool live;
} slot_t;

/* Set once, from the environment. */
static struct {
  int nsides;
  const alloc_api_t *api[SIDES];
  bool trace, full_check;
  size_t page;
  long purge_default;
} cfg;

/* The state of the input being run; cleared at its end. */
static struct {
  slot_t slots[NSLOTS];
  size_t live_req;  /* requested bytes live */
  size_t allocated; /* bytes allocated by big requests so far */
  unsigned big_aligns;
  uint32_t generation;
  unsigned step;
  bool purge_changed;
  char what[192]; /* the step being run, for messages */
} st;

/* ---- failures ----------------------------------------------------------- */

static __attribute__((noreturn, format(printf, 2, 3))) void fail(int side, const char *fmt,
                                                                  ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "mmfuzz: FAIL at step %u (%s) [%s]: ", st.step, st.what,
          side < 0 ? "mmalloc vs glibc" : cfg.api[side]->name);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fprintf(stderr, "mmfuzz: run the input again with MMFUZZ_TRACE=1 to see every step\n");
  abort();
}

/* ---- the allocators ----------------------------------------------------- */

static size_t mm_usable(void *p) { return mm_malloc_usable_size(p); }

static const alloc_api_t mm_api = {
    .name = "mmalloc", .malloc_fn = mm_malloc, .calloc_fn = mm_calloc,
    .realloc_fn = mm_realloc, .reallocarray_fn = mm_reallocarray, .free_fn = mm_free,
    .posix_memalign_fn = mm_posix_memalign, .aligned_alloc_fn = mm_aligned_alloc,
    .memalign_fn = mm_memalign, .valloc_fn = mm_valloc, .pvalloc_fn = mm_pvalloc,
    .usable_size_fn = mm_usable, .collect_fn = mm_collect};

static void *(*libc_realloc)(void *, size_t);
static int (*libc_malloc_trim)(size_t);

/* glibc's reallocarray is this, but calls realloc through the PLT. */
static void *libc_reallocarray(void *p, size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return libc_realloc(p, total);
}

static void libc_collect(void) { libc_malloc_trim(0); }

static alloc_api_t libc_api = {.name = "glibc", .reallocarray_fn = libc_reallocarray,
                               .collect_fn = libc_collect};

/* name as libc.so defines it, never an interposed definition. */
static void *libc_symbol(void *libc, const char *name) {
  void *f = dlsym(libc, name);
  Dl_info info = {0};
  if (!f || !dladdr(f, &info) || !info.dli_fname || !strstr(info.dli_fname, "libc.so")) {
    fprintf(stderr, "mmfuzz: cannot reach glibc's %s (%s)\n", name,
            f && info.dli_fname ? info.dli_fname : "not found");
    abort();
  }
  return f;
}

static void libc_api_init(void) {
  void *libc = dlopen(LIBC_SO, RTLD_NOW | RTLD_NOLOAD);
  if (!libc) {
    fprintf(stderr, "mmfuzz: dlopen(%s): %s\n", LIBC_SO, dlerror());
    abort();
  }
  libc_api.malloc_fn = (void *(*)(size_t))libc_symbol(libc, "malloc");
  libc_api.calloc_fn = (void *(*)(size_t, size_t))libc_symbol(libc, "calloc");
  libc_realloc = (void *(*)(void *, size_t))libc_symbol(libc, "realloc");
  libc_api.realloc_fn = libc_realloc;
  libc_api.free_fn = (void (*)(void *))libc_symbol(libc, "free");
  libc_api.posix_memalign_fn =
      (int (*)(void **, size_t, size_t))libc_symbol(libc, "posix_memalign");
  libc_api.aligned_alloc_fn = (void *(*)(size_t, size_t))libc_symbol(libc, "aligned_alloc");
  libc_api.memalign_fn = (void *(*)(size_t, size_t))libc_symbol(libc, "memalign");
  libc_api.valloc_fn = (void *(*)(size_t))libc_symbol(libc, "valloc");
  libc_api.pvalloc_fn = (void *(*)(size_t))libc_symbol(libc, "pvalloc");
  libc_api.usable_size_fn = (size_t(*)(void *))libc_symbol(libc, "malloc_usable_size");
  libc_malloc_trim = (int (*)(size_t))libc_symbol(libc, "malloc_trim");
}

/* ---- the pattern -------------------------------------------------------- */

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Word k of an object with this seed: seed + k * odd.  Two objects never
 * carry the same word at the same place, nor one object the same word at
 * two places; and word k + 1 is word k plus a constant, which makes the
 * loops below one add per word. */
#define PATTERN_STEP 0x9e3779b97f4a7c15ull

static uint64_t pattern_word(uint64_t seed, size_t k) { return seed + k * PATTERN_STEP; }

static BYTE_LOOP unsigned char pattern_byte(uint64_t seed, size_t i) {
  uint64_t w = pattern_word(seed, i / 8);
  unsigned char b[8];
  memcpy(b, &w, 8);
  return b[i % 8];
}

static BYTE_LOOP void pattern_fill(unsigned char *p, size_t from, size_t to, uint64_t seed) {
  size_t i = from;
  for (; i < to && i % 8; i++) p[i] = pattern_byte(seed, i);
  uint64_t w = pattern_word(seed, i / 8);
  for (; i + 8 <= to; i += 8, w += PATTERN_STEP) memcpy(p + i, &w, 8);
  for (; i < to; i++) p[i] = pattern_byte(seed, i);
}

static BYTE_LOOP size_t mismatch_bytes(const unsigned char *p, size_t from, size_t to,
                                       uint64_t seed) {
  for (size_t i = from; i < to; i++)
    if (p[i] != pattern_byte(seed, i)) return i;
  return SIZE_MAX;
}

/* The offset of the first byte in [from, to) off the pattern, or SIZE_MAX.
 * Whole words are compared 32 at a time, bytes only where a chunk differs. */
static BYTE_LOOP size_t pattern_mismatch(const unsigned char *p, size_t from, size_t to,
                                         uint64_t seed) {
  size_t i = (from + 7) / 8 * 8;
  if (i >= to) return mismatch_bytes(p, from, to, seed);
  size_t bad = mismatch_bytes(p, from, i, seed);
  if (bad != SIZE_MAX) return bad;
  uint64_t w = pattern_word(seed, i / 8);
  for (; i + 256 <= to; i += 256, w += 32 * PATTERN_STEP) {
    uint64_t diff = 0, e = w;
    for (size_t k = 0; k < 32; k++, e += PATTERN_STEP) {
      uint64_t x;
      memcpy(&x, p + i + 8 * k, 8);
      diff |= x ^ e;
    }
    if (diff) return mismatch_bytes(p, i, i + 256, seed);
  }
  return mismatch_bytes(p, i, to, seed);
}

static BYTE_LOOP size_t first_nonzero(const unsigned char *p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    if (w) break;
  }
  for (; i < n; i++)
    if (p[i]) return i;
  return SIZE_MAX;
}

/* ---- where an object carries the pattern --------------------------------- */

static bool dense(size_t len) { return cfg.full_check || len <= DENSE_MAX; }

/* The first range of an object of len bytes carrying the pattern that ends
 * after offset at, from at on.  False past the end. */
static bool covered_next(size_t len, size_t at, size_t *from, size_t *to) {
  if (at >= len) return false;
  *from = at;
  *to = len;
  if (dense(len) || at >= len - EDGE) return true;
  if (at < EDGE) {
    *to = EDGE;
    return true;
  }
  size_t page = at / 4096 * 4096;
  if (at >= page + PAGE_SAMPLE) *from = page += 4096;
  if (page >= len - EDGE) {
    *from = len - EDGE;
    return true;
  }
  *to = page + PAGE_SAMPLE < len - EDGE ? page + PAGE_SAMPLE : len - EDGE;
  return true;
}

/* The pattern on the covered part of [from, to) of an object of len bytes. */
static void covered_fill(unsigned char *p, size_t len, size_t from, size_t to, uint64_t seed) {
  size_t a, b;
  for (size_t at = from; covered_next(len, at, &a, &b) && a < to; at = b)
    pattern_fill(p, a, b < to ? b : to, seed);
}

static size_t covered_mismatch(const unsigned char *p, size_t len, size_t from, size_t to,
                               uint64_t seed) {
  size_t a, b, bad = SIZE_MAX;
  for (size_t at = from; bad == SIZE_MAX && covered_next(len, at, &a, &b) && a < to; at = b)
    bad = pattern_mismatch(p, a, b < to ? b : to, seed);
  return bad;
}

static uint64_t next_seed(unsigned tag) {
  return mix64((uint64_t)tag << 32 | ++st.generation);
}

/* ---- decoding ------------------------------------------------------------ */

static bool is_pow2(size_t x) { return x && !(x & (x - 1)); }

typedef struct reader_s {
  const uint8_t *data;
  size_t size, pos;
} reader_t;

static uint8_t read_u8(reader_t *r) { return r->pos < r->size ? r->data[r->pos++] : 0; }

static uint32_t read_u16(reader_t *r) {
  uint32_t lo = read_u8(r);
  return lo | (uint32_t)read_u8(r) << 8;
}

static uint32_t read_u24(reader_t *r) {
  uint32_t lo = read_u16(r);
  return lo | (uint32_t)read_u8(r) << 16;
}

/* Keep these tables in step with make_corpus.py. */
static const size_t boundary_sizes[20] = {
    0, 1, 16, 17, 64, 65, 128, 1024, 1025, 4096, 4097, 8192, 32 * KiB, 32 * KiB + 1,
    64 * KiB, 1 * MiB, 2 * MiB, 33030144 /* 31.5 MiB: huge blocks from here */,
    32 * MiB, 64 * MiB};
static const size_t impossible_sizes[8] = {
    SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4095, (size_t)PTRDIFF_MAX + 1, PTRDIFF_MAX,
    (size_t)1 << 62, (size_t)1 << 56, (size_t)1 << 50};
static const size_t odd_alignments[18] = {
    0, 2, 3, 4, 12, 24, 48, 1000, 4097, 12288, (size_t)1 << 31, (size_t)1 << 33,
    (size_t)1 << 47, (size_t)1 << 62, (size_t)1 << 63, ((size_t)1 << 62) + 1,
    (size_t)1 << 63 | 1, SIZE_MAX};
static const size_t array_elems[9] = {1, 2, 3, 8, 16, 24, 100, 4096, 65536};
static const size_t overflow_pairs[8][2] = {
    {SIZE_MAX / 2, 3}, {(size_t)1 << 32, (size_t)1 << 32}, {SIZE_MAX, SIZE_MAX},
    {2, SIZE_MAX / 2 + 1}, {SIZE_MAX, 2}, {(size_t)1 << 33, (size_t)1 << 31},
    {65537, (size_t)1 << 48}, {(size_t)1 << 25, (size_t)1 << 25} /* 2^50, no overflow */};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* 32 KiB .. 32 KiB + 4 MiB, about evenly spread over the powers of two. */
static size_t read_large(reader_t *r) {
  uint32_t v = read_u24(r);
  return 32 * KiB + (((size_t)(v & 0x1fffff) << (v >> 21)) >> 6);
}

static size_t read_special(reader_t *r, unsigned k) {
  if (k < 20) return boundary_sizes[k];
  if (k < 40) {
    size_t b = boundary_sizes[k - 20];
    int d = (int)read_u8(r) - 128;
    if (d < 0) return (size_t)-d > b ? 0 : b - (size_t)-d;
    return b + (size_t)d;
  }
  if (k < 44) return 16 * MiB + (size_t)read_u16(r) * KiB;
  return impossible_sizes[(k - 44) % COUNT(impossible_sizes)];
}

static size_t read_size(reader_t *r) {
  uint8_t s = read_u8(r);
  switch (s >> 6) {
  case 0: return s & 63;
  case 1: return 64 + read_u16(r) % (33 * KiB - 64 + 1);
  case 2: return read_large(r);
  default: return read_special(r, s & 63);
  }
}

static size_t read_align(reader_t *r) {
  uint8_t a = read_u8(r);
  if (a < 128) return (size_t)1 << (a % 13);
  if (a < 192) return (size_t)1 << (13 + a % 16);
  return odd_alignments[a % COUNT(odd_alignments)];
}

/* A size, then how to split it into count x elem. */
static void read_array(reader_t *r, call_t *c) {
  size_t total = read_size(r);
  uint8_t e = read_u8(r);
  if (e >= 0xf0) {
    c->count = overflow_pairs[e % COUNT(overflow_pairs)][0];
    c->size = overflow_pairs[e % COUNT(overflow_pairs)][1];
  } else if (e % 10 == 9) {
    c->count = 0;
    c->size = total;
  } else {
    c->size = array_elems[e % 10];
    c->count = total / c->size + (total % c->size != 0);
  }
}

static call_t read_call(reader_t *r, call_kind_t kind) {
  call_t c = {.kind = kind, .slot = read_u8(r) % NSLOTS};
  switch (kind) {
  case CALL_CALLOC: case CALL_REALLOCARRAY: read_array(r, &c); break;
  case CALL_POSIX_MEMALIGN: case CALL_ALIGNED_ALLOC: case CALL_MEMALIGN:
    c.align = read_align(r);
    c.size = read_size(r);
    break;
  case CALL_FREE: case CALL_USABLE: break;
  default: c.size = read_size(r); break;
  }
  return c;
}

/* ---- what a call must give ------------------------------------------------ */

/* No machine has that much: every size the decoder calls impossible is at
 * least 2^50, every other at most 80 MiB. */
static bool impossible(size_t n) { return n >= (size_t)1 << 47; }

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* memalign's alignment: rounded up to a power of two (kept when it cannot be). */
static size_t memalign_rounded(size_t align) {
  if (is_pow2(align) || align > (size_t)1 << 62) return align;
  size_t a = 1;
  while (a < align) a <<= 1;
  return a;
}

/* The bytes a call asks for; false when count x size or pvalloc's rounding
 * overflows. */
static bool request_of(const call_t *c, size_t *bytes) {
  switch (c->kind) {
  case CALL_CALLOC: case CALL_REALLOCARRAY:
    return !__builtin_mul_overflow(c->count, c->size, bytes);
  case CALL_PVALLOC:
    if (c->size > SIZE_MAX - (cfg.page - 1)) return false;
    *bytes = round_up(c->size, cfg.page);
    return true;
  case CALL_FREE: case CALL_USABLE: *bytes = 0; return true;
  default: *bytes = c->size; return true;
  }
}

static expect_t expect_aligned(size_t align, size_t bytes) {
  if (impossible(bytes) || align >= (size_t)1 << 47) return EXPECT_ENOMEM;
  return align > BIG_ALIGN ? EXPECT_MAYBE : EXPECT_BLOCK;
}

static expect_t expect_of(const call_t *c, bool live) {
  size_t bytes;
  bool fits = request_of(c, &bytes);
  switch (c->kind) {
  case CALL_FREE: case CALL_USABLE: return EXPECT_NOTHING;
  case CALL_REALLOC: case CALL_REALLOCARRAY:
    if (!fits || impossible(bytes)) return EXPECT_ENOMEM;
    return live && bytes == 0 ? EXPECT_FREED : EXPECT_BLOCK;
  case CALL_POSIX_MEMALIGN:
    if (!is_pow2(c->align) || c->align % sizeof(void *)) return EXPECT_EINVAL;
    return expect_aligned(c->align, bytes);
  case CALL_ALIGNED_ALLOC:
    if (!is_pow2(c->align)) return EXPECT_EINVAL;
    return expect_aligned(c->align, bytes);
  case CALL_MEMALIGN:
    if (!is_pow2(c->align) && c->align > (size_t)1 << 62) return EXPECT_FAIL;
    return expect_aligned(memalign_rounded(c->align), bytes);
  case CALL_VALLOC: case CALL_PVALLOC:
    return fits ? expect_aligned(cfg.page, bytes) : EXPECT_ENOMEM;
  default: /* malloc, calloc */
    return fits && !impossible(bytes) ? EXPECT_BLOCK : EXPECT_ENOMEM;
  }
}

/* glibc 2.36's aligned_alloc takes any alignment up to 2^63 (it rounds it
 * up); mmalloc's wants a power of two, as C17 allows. */
static expect_t libc_expect(const call_t *c, expect_t ex) {
  if (c->kind == CALL_ALIGNED_ALLOC && !is_pow2(c->align)) return EXPECT_ANY;
  return ex;
}

static bool difference_allowed(const call_t *c, expect_t ex) {
  return ex == EXPECT_MAYBE || ex == EXPECT_FAIL ||
         (c->kind == CALL_ALIGNED_ALLOC && !is_pow2(c->align));
}

static size_t promised_align(const call_t *c) {
  size_t a = MIN_ALIGN;
  switch (c->kind) {
  case CALL_POSIX_MEMALIGN: case CALL_ALIGNED_ALLOC: case CALL_MEMALIGN: {
    size_t m = memalign_rounded(c->align);
    return is_pow2(m) && m > a ? m : a;
  }
  case CALL_VALLOC: case CALL_PVALLOC: return cfg.page;
  default: return a;
  }
}

/* ---- the helper thread ---------------------------------------------------- */

typedef void (*task_fn)(void *arg);

static struct {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  task_fn fn;
  void *arg;
  bool busy, quit, running;
} helper = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static void *helper_main(void *unused) {
  (void)unused;
  pthread_mutex_lock(&helper.lock);
  for (;;) {
    while (!helper.busy && !helper.quit) pthread_cond_wait(&helper.wake, &helper.lock);
    if (!helper.busy) break;
    pthread_mutex_unlock(&helper.lock);
    helper.fn(helper.arg);
    pthread_mutex_lock(&helper.lock);
    helper.busy = false;
    pthread_cond_broadcast(&helper.wake);
  }
  pthread_mutex_unlock(&helper.lock);
  return NULL;
}

static void helper_start(void) {
  helper.quit = false;
  int rc = pthread_create(&helper.thread, NULL, helper_main, NULL);
  if (rc) {
    fprintf(stderr, "mmfuzz: pthread_create: %s\n", strerror(rc));
    abort();
  }
  helper.running = true;
}

/* The helper exits (mmalloc abandons its pages) and a new one starts. */
static void helper_restart(void) {
  if (helper.running) {
    pthread_mutex_lock(&helper.lock);
    helper.quit = true;
    pthread_cond_broadcast(&helper.wake);
    pthread_mutex_unlock(&helper.lock);
    pthread_join(helper.thread, NULL);
    helper.running = false;
  }
  helper_start();
}

/* Run fn(arg) on the helper thread and wait for it. */
static void helper_run(task_fn fn, void *arg) {
  if (!helper.running) helper_start();
  pthread_mutex_lock(&helper.lock);
  helper.fn = fn;
  helper.arg = arg;
  helper.busy = true;
  pthread_cond_broadcast(&helper.wake);
  while (helper.busy) pthread_cond_wait(&helper.wake, &helper.lock);
  pthread_mutex_unlock(&helper.lock);
}

static void run_on(bool on_helper, task_fn fn, void *arg) {
  if (on_helper) helper_run(fn, arg);
  else fn(arg);
}

/* ---- making the calls ------------------------------------------------------- */

typedef struct job_s {
  call_t call;
  void *old[SIDES]; /* the slot's block: realloc, free, usable */
  result_t res[SIDES];
} job_t;

static result_t side_call(const alloc_api_t *a, const call_t *c, void *old) {
  result_t r = {0};
  void *out = SENTINEL;
  errno = 0;
  switch (c->kind) {
  case CALL_MALLOC: r.p = a->malloc_fn(c->size); break;
  case CALL_CALLOC: r.p = a->calloc_fn(c->count, c->size); break;
  case CALL_REALLOC: r.p = a->realloc_fn(old, c->size); break;
  case CALL_REALLOCARRAY: r.p = a->reallocarray_fn(old, c->count, c->size); break;
  case CALL_FREE: a->free_fn(old); break;
  case CALL_POSIX_MEMALIGN: {
    int rc = a->posix_memalign_fn(&out, c->align, c->size);
    r.out_touched = out != SENTINEL;
    r.p = rc == 0 ? out : NULL;
    errno = rc;
    break;
  }
  case CALL_ALIGNED_ALLOC: r.p = a->aligned_alloc_fn(c->align, c->size); break;
  case CALL_MEMALIGN: r.p = a->memalign_fn(c->align, c->size); break;
  case CALL_VALLOC: r.p = a->valloc_fn(c->size); break;
  case CALL_PVALLOC: r.p = a->pvalloc_fn(c->size); break;
  case CALL_USABLE: r.usable = a->usable_size_fn(old); break;
  default: break;
  }
  r.err = errno;
  return r;
}

static void job_task(void *arg) {
  job_t *j = arg;
  for (int side = 0; side < cfg.nsides; side++)
    j->res[side] = side_call(cfg.api[side], &j->call, j->old[side]);
}

static void describe_call(const call_t *c, bool on_helper) {
  char args[80];
  switch (c->kind) {
  case CALL_CALLOC: case CALL_REALLOCARRAY:
    snprintf(args, sizeof args, "%zu, %zu", c->count, c->size);
    break;
  case CALL_POSIX_MEMALIGN: case CALL_ALIGNED_ALLOC: case CALL_MEMALIGN:
    snprintf(args, sizeof args, "%zu, %zu", c->align, c->size);
    break;
  case CALL_FREE: case CALL_USABLE: args[0] = 0; break;
  default: snprintf(args, sizeof args, "%zu", c->size); break;
  }
  snprintf(st.what, sizeof st.what, "%s(%s) on slot %u%s", call_names[c->kind], args, c->slot,
           on_helper ? " by the helper thread" : "");
}

static void trace_step(void) {
  if (cfg.trace) fprintf(stderr, "mmfuzz: step %u: %s\n", st.step, st.what);
}

/* ---- checking objects ------------------------------------------------------- */

/* The blocks of a burst (op 14), live between its allocation and its free. */
typedef struct burst_s {
  size_t n, size;
  bool zeroed, reverse, live;
  unsigned char *p[SIDES][BURST_MAX];
  size_t usable[SIDES][BURST_MAX];
  uint64_t seed;
} burst_t;

static burst_t burst;

/* The pattern is intact where the object carries it, within [from, to). */
static void check_range(int side, unsigned slot, size_t from, size_t to) {
  const slot_t *s = &st.slots[slot];
  const object_t *o = &s->side[side];
  size_t bad = covered_mismatch(o->p, o->len, from, to, s->seed);
  if (bad != SIZE_MAX)
    fail(side, "slot %u: byte %zu of %zu at %p is 0x%02x, expected 0x%02x (object corrupted)",
         slot, bad, o->len, (void *)o->p, o->p[bad], pattern_byte(s->seed, bad));
}

/* Head, tail and the start of a sample of pages that moves with the step. */
static void check_sampled(int side, unsigned slot) {
  const object_t *o = &st.slots[slot].side[side];
  size_t len = o->len, pages = len / 4096;
  check_range(side, slot, 0, 4096);
  check_range(side, slot, len - 4096, len);
  for (size_t k = 0; k < SAMPLE_PAGES; k++) {
    size_t from = ((size_t)st.step * SAMPLE_PAGES + k) * 40503u % pages * 4096;
    check_range(side, slot, from, from + PAGE_SAMPLE < len ? from + PAGE_SAMPLE : len);
  }
}

static void check_object(int side, unsigned slot, bool whole) {
  const object_t *o = &st.slots[slot].side[side];
  size_t u = cfg.api[side]->usable_size_fn(o->p);
  if (u != o->usable)
    fail(side, "slot %u: usable size of %p changed from %zu to %zu", slot, (void *)o->p,
         o->usable, u);
  if ((uintptr_t)o->p % o->align)
    fail(side, "slot %u: %p is not aligned to %zu", slot, (void *)o->p, o->align);
  if (whole || cfg.full_check || o->len <= FULL_CHECK_MAX) check_range(side, slot, 0, o->len);
  else check_sampled(side, slot);
}

typedef struct span_s {
  uintptr_t start, end;
  unsigned slot; /* NSLOTS + i: block i of the burst */
} span_t;

static span_t span_of(const void *p, size_t usable, unsigned slot) {
  return (span_t){(uintptr_t)p, (uintptr_t)p + (usable ? usable : 1), slot};
}

static int span_order(const void *a, const void *b) {
  const span_t *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

#define PH_OBJS 64 /* pool and heap objects (ops 17, 18) */
#define PH_BASE (NSLOTS + BURST_MAX)
static const char *span_kind(span_t a) {
  return a.slot < NSLOTS ? "slot" : a.slot < PH_BASE ? "burst block" : "pool/heap object";
}
static unsigned span_index(span_t a) {
  return a.slot < NSLOTS ? a.slot : a.slot < PH_BASE ? a.slot - NSLOTS : a.slot - PH_BASE;
}

static __attribute__((noreturn)) void fail_overlap(int side, span_t a, span_t b) {
  fail(side, "%s %u (%p+%zu) and %s %u (%p+%zu) overlap", span_kind(a), span_index(a),
       (void *)a.start, (size_t)(a.end - a.start), span_kind(b), span_index(b),
       (void *)b.start, (size_t)(b.end - b.start));
}

/* The objects of ops 17 and 18 (mmalloc's side only). */
typedef struct ph_obj_s {
  unsigned char *p;
  size_t len, usable;
  unsigned owner; /* 0, 1: pool; 2: the heap */
  uint64_t seed;
  bool live;
} ph_obj_t;

static struct {
  mm_pool_t *pool[2];
  size_t pool_size[2];
  mm_heap_t *heap;
  ph_obj_t obj[PH_OBJS];
} ph;

/* No two live objects (and burst blocks) share a byte of their usable sizes. */
static void check_no_overlap(int side) {
  span_t spans[NSLOTS + BURST_MAX + PH_OBJS];
  size_t n = 0;
  for (unsigned i = 0; side == SIDE_MM && i < PH_OBJS; i++)
    if (ph.obj[i].live) spans[n++] = span_of(ph.obj[i].p, ph.obj[i].usable, PH_BASE + i);
  for (unsigned i = 0; i < NSLOTS; i++) {
    const object_t *o = &st.slots[i].side[side];
    if (st.slots[i].live) spans[n++] = span_of(o->p, o->usable, i);
  }
  for (size_t i = 0; burst.live && i < burst.n; i++)
    spans[n++] = span_of(burst.p[side][i], burst.usable[side][i], NSLOTS + (unsigned)i);
  qsort(spans, n, sizeof spans[0], span_order);
  for (size_t k = 0; k + 1 < n; k++)
    if (spans[k].end > spans[k + 1].start) fail_overlap(side, spans[k], spans[k + 1]);
}

/* A block just handed out shares no byte with the live objects but self's:
 * checked before the pattern is written into it. */
static void check_disjoint(int side, unsigned self, const void *p, size_t usable) {
  span_t fresh = span_of(p, usable, self);
  for (unsigned i = 0; i < NSLOTS; i++) {
    const object_t *o = &st.slots[i].side[side];
    if (i == self || !st.slots[i].live) continue;
    span_t old = span_of(o->p, o->usable, i);
    if (fresh.start < old.end && old.start < fresh.end) fail_overlap(side, fresh, old);
  }
}

/* Differential: what a program reads from both allocators is the same. */
static void compare_contents(unsigned slot) {
  const object_t *a = &st.slots[slot].side[SIDE_MM], *b = &st.slots[slot].side[SIDE_LIBC];
  size_t n = a->len < b->len ? a->len : b->len;
  if (n > FULL_CHECK_MAX) n = FULL_CHECK_MAX;
  if (memcmp(a->p, b->p, n))
    fail(-1, "slot %u: contents differ in the first %zu bytes", slot, n);
}

static void ph_check(unsigned i);

static void check_all(void) {
  for (unsigned i = 0; i < PH_OBJS; i++)
    if (ph.obj[i].live) ph_check(i);
  for (int side = 0; side < cfg.nsides; side++) {
    for (unsigned i = 0; i < NSLOTS; i++)
      if (st.slots[i].live) check_object(side, i, false);
    check_no_overlap(side);
  }
  if (cfg.nsides < SIDES) return;
  for (unsigned i = 0; i < NSLOTS; i++)
    if (st.slots[i].live) compare_contents(i);
}

/* ---- judging a call's outcome ------------------------------------------------- */

/* Did this allocator answer as documented?  True when it returned a block. */
static bool judge(int side, const call_t *c, expect_t ex, const result_t *r) {
  if (ex == EXPECT_NOTHING) return false;
  if (c->kind == CALL_POSIX_MEMALIGN && !r->p && r->out_touched)
    fail(side, "posix_memalign failed (%d) but changed *out", r->err);
  if (c->kind == CALL_POSIX_MEMALIGN && r->p == SENTINEL)
    fail(side, "posix_memalign returned 0 but did not set *out");
  if (r->p) {
    if (ex == EXPECT_BLOCK || ex == EXPECT_MAYBE || ex == EXPECT_ANY) return true;
    fail(side, "returned %p, expected %s", r->p, expect_names[ex]);
  }
  switch (ex) {
  case EXPECT_FREED: return false;
  case EXPECT_ENOMEM: case EXPECT_MAYBE:
    if (r->err == ENOMEM) return false;
    break;
  case EXPECT_EINVAL:
    if (r->err == EINVAL) return false;
    break;
  case EXPECT_FAIL: case EXPECT_ANY:
    if (r->err == ENOMEM || r->err == EINVAL) return false;
    break;
  default: break;
  }
  fail(side, "returned NULL with errno %d (%s), expected %s", r->err, strerror(r->err),
       expect_names[ex]);
}

static void compare_sides(const call_t *c, expect_t ex, const result_t *res, const bool *got) {
  if (ex == EXPECT_NOTHING || difference_allowed(c, ex)) return;
  if (got[SIDE_MM] != got[SIDE_LIBC])
    fail(-1, "mmalloc returned %p, glibc %p", res[SIDE_MM].p, res[SIDE_LIBC].p);
  if (!got[SIDE_MM] && ex != EXPECT_FREED && res[SIDE_MM].err != res[SIDE_LIBC].err)
    fail(-1, "both NULL, but errno %d from mmalloc and %d from glibc", res[SIDE_MM].err,
         res[SIDE_LIBC].err);
}

/* A new block: the promises of the call, then the pattern. */
static void adopt_block(int side, slot_t *s, const call_t *c, void *p, size_t bytes) {
  object_t *o = &s->side[side];
  *o = (object_t){p, bytes, cfg.api[side]->usable_size_fn(p), promised_align(c)};
  if (o->usable < bytes)
    fail(side, "usable size %zu of %p is less than the %zu bytes asked for", o->usable, p, bytes);
  if ((uintptr_t)p % o->align) fail(side, "%p is not aligned to %zu", p, o->align);
  check_disjoint(side, c->slot, p, o->usable);
  if (c->kind == CALL_CALLOC) {
    size_t bad = first_nonzero(o->p, bytes);
    if (bad != SIZE_MAX)
      fail(side, "calloc memory not zero: byte %zu of %zu is 0x%02x", bad, bytes, o->p[bad]);
  }
  covered_fill(o->p, bytes, 0, bytes, s->seed);
}

/* A block only one allocator gave (an allowed difference): check, drop. */
static void discard_block(int side, void *p, size_t bytes) {
  size_t usable = cfg.api[side]->usable_size_fn(p);
  if (usable < bytes)
    fail(side, "usable size %zu of %p is less than the %zu bytes asked for", usable, p, bytes);
  if ((uintptr_t)p % MIN_ALIGN) fail(side, "%p is not aligned to %zu", p, (size_t)MIN_ALIGN);
  cfg.api[side]->free_fn(p);
}

static void settle_new(const job_t *j, size_t bytes, const bool *got) {
  slot_t *s = &st.slots[j->call.slot];
  bool any = false, all = true;
  for (int side = 0; side < cfg.nsides; side++) {
    any |= got[side];
    all &= got[side];
  }
  if (!any) return;
  if (!all) {
    for (int side = 0; side < cfg.nsides; side++)
      if (got[side]) discard_block(side, j->res[side].p, bytes);
    return;
  }
  s->seed = next_seed(j->call.slot);
  for (int side = 0; side < cfg.nsides; side++)
    adopt_block(side, s, &j->call, j->res[side].p, bytes);
  s->live = true;
  s->req = bytes;
  st.live_req += bytes;
  if (bytes >= BIG_REQUEST) st.allocated += bytes;
}

/* The object's pattern, good on [0, keep), now len bytes long.  A sparse
 * pattern covers other bytes at another length: all is written again. */
static void grow_pattern(object_t *o, size_t keep, size_t len, uint64_t seed) {
  bool both_dense = dense(o->len) && dense(len);
  o->len = len;
  covered_fill(o->p, len, both_dense ? keep : 0, len, seed);
}

/* realloc of a live slot that gave a block: the first min(old, new) bytes
 * came along. */
static void settle_moved(int side, unsigned slot, void *q, size_t bytes) {
  slot_t *s = &st.slots[slot];
  object_t *o = &s->side[side];
  size_t keep = o->len < bytes ? o->len : bytes, old_len = o->len;
  *o = (object_t){q, old_len, cfg.api[side]->usable_size_fn(q), MIN_ALIGN};
  check_disjoint(side, slot, q, o->usable);
  check_range(side, slot, 0, keep);
  if (o->usable < bytes)
    fail(side, "usable size %zu of %p is less than the %zu bytes asked for", o->usable, q, bytes);
  if ((uintptr_t)q % MIN_ALIGN) fail(side, "%p is not aligned to %zu", q, (size_t)MIN_ALIGN);
  grow_pattern(o, keep, bytes, s->seed);
}

/* A failed realloc left the block as it was. */
static void check_kept(int side, unsigned slot) {
  const object_t *o = &st.slots[slot].side[side];
  size_t u = cfg.api[side]->usable_size_fn(o->p);
  if (u != o->usable)
    fail(side, "failed realloc changed the usable size from %zu to %zu", o->usable, u);
  check_range(side, slot, 0, o->len);
}

static void settle_resize(const job_t *j, expect_t ex, size_t bytes) {
  unsigned slot = j->call.slot;
  slot_t *s = &st.slots[slot];
  for (int side = 0; side < cfg.nsides; side++) {
    if (ex == EXPECT_ENOMEM) check_kept(side, slot);
    else if (ex == EXPECT_BLOCK) settle_moved(side, slot, j->res[side].p, bytes);
  }
  if (ex == EXPECT_FREED) {
    st.live_req -= s->req;
    s->live = false;
  } else if (ex == EXPECT_BLOCK) {
    st.live_req = st.live_req - s->req + bytes;
    s->req = bytes;
    if (bytes >= BIG_REQUEST) st.allocated += bytes;
  }
}

/* malloc_usable_size: the same as when allocated (0 for NULL); the object
 * then carries the pattern over all of it, unless that is more than
 * EXTEND_MAX of slack (glibc's block at a 2^33 alignment has 6 GiB). */
static void settle_usable(const job_t *j) {
  slot_t *s = &st.slots[j->call.slot];
  for (int side = 0; side < cfg.nsides; side++) {
    object_t *o = &s->side[side];
    size_t want = s->live ? o->usable : 0;
    if (j->res[side].usable != want)
      fail(side, "malloc_usable_size gave %zu, %zu before", j->res[side].usable, want);
    if (!s->live || o->usable - o->len > EXTEND_MAX) continue;
    grow_pattern(o, o->len, o->usable, s->seed);
  }
}

static void settle(const job_t *j, expect_t ex, size_t bytes) {
  const call_t *c = &j->call;
  slot_t *s = &st.slots[c->slot];
  bool got[SIDES] = {false, false};
  for (int side = 0; side < cfg.nsides; side++)
    got[side] = judge(side, c, side == SIDE_MM ? ex : libc_expect(c, ex), &j->res[side]);
  if (cfg.nsides == SIDES) compare_sides(c, ex, j->res, got);
  if (c->kind == CALL_FREE) {
    if (s->live) st.live_req -= s->req;
    s->live = false;
  } else if (c->kind == CALL_USABLE) {
    settle_usable(j);
  } else if ((c->kind == CALL_REALLOC || c->kind == CALL_REALLOCARRAY) && s->live) {
    settle_resize(j, ex, bytes);
  } else {
    settle_new(j, bytes, got);
  }
}

/* ---- the operations -------------------------------------------------------------- */

static bool makes_new_block(call_kind_t kind) {
  return kind != CALL_REALLOC && kind != CALL_REALLOCARRAY && kind != CALL_FREE &&
         kind != CALL_USABLE;
}

/* Within the live cap and the input's budgets? */
static bool affordable(const call_t *c, expect_t ex, size_t bytes) {
  const slot_t *s = &st.slots[c->slot];
  if (ex != EXPECT_BLOCK && ex != EXPECT_MAYBE && ex != EXPECT_ANY) return true;
  if (st.live_req - (s->live ? s->req : 0) + bytes > LIVE_CAP) return false;
  if (bytes >= BIG_REQUEST && st.allocated + bytes > INPUT_BUDGET) return false;
  if (c->align > BIG_ALIGN && c->kind != CALL_VALLOC && c->kind != CALL_PVALLOC)
    return st.big_aligns++ < BIG_ALIGNS_MAX;
  return true;
}

static void slot_call(call_t c, bool on_helper) {
  slot_t *s = &st.slots[c.slot];
  if (makes_new_block(c.kind) && s->live)
    slot_call((call_t){.kind = CALL_FREE, .slot = c.slot}, on_helper);
  describe_call(&c, on_helper);
  trace_step();
  expect_t ex = expect_of(&c, s->live);
  size_t bytes = 0;
  request_of(&c, &bytes);
  if (!affordable(&c, ex, bytes)) {
    if (cfg.trace) fprintf(stderr, "mmfuzz:   skipped (over the input's memory bounds)\n");
    return;
  }
  job_t j = {.call = c};
  for (int side = 0; side < cfg.nsides; side++) {
    if (s->live && c.kind != CALL_USABLE) check_object(side, c.slot, true);
    j.old[side] = s->live ? s->side[side].p : NULL;
  }
  run_on(on_helper, job_task, &j);
  settle(&j, ex, bytes);
}

static void burst_alloc_task(void *arg) {
  burst_t *b = arg;
  for (int side = 0; side < cfg.nsides; side++)
    for (size_t i = 0; i < b->n; i++)
      b->p[side][i] = b->zeroed ? cfg.api[side]->calloc_fn(1, b->size)
                                : cfg.api[side]->malloc_fn(b->size);
}

static void burst_free_task(void *arg) {
  burst_t *b = arg;
  for (int side = 0; side < cfg.nsides; side++)
    for (size_t k = 0; k < b->n; k++)
      cfg.api[side]->free_fn(b->p[side][b->reverse ? b->n - 1 - k : k]);
}

/* The promises of malloc/calloc for block i; the pattern comes later. */
static void burst_adopt(int side, burst_t *b, size_t i) {
  unsigned char *p = b->p[side][i];
  if (!p) fail(side, "block %zu of the burst is NULL", i);
  size_t usable = b->usable[side][i] = cfg.api[side]->usable_size_fn(p);
  if (usable < b->size)
    fail(side, "block %zu of the burst: usable size %zu < %zu", i, usable, b->size);
  if ((uintptr_t)p % MIN_ALIGN) fail(side, "block %zu of the burst: %p misaligned", i, (void *)p);
  if (b->zeroed && first_nonzero(p, b->size) != SIZE_MAX)
    fail(side, "block %zu of the burst: calloc memory not zero", i);
}

static void burst_check(int side, const burst_t *b, size_t i) {
  size_t bad = pattern_mismatch(b->p[side][i], 0, b->size, b->seed + i);
  if (bad != SIZE_MAX)
    fail(side, "block %zu of the burst (%p, %zu bytes) corrupted at byte %zu", i,
         (void *)b->p[side][i], b->size, bad);
}

/* count size mode: mode bit 0: the helper allocates, bit 1: the helper
 * frees, bit 2: calloc, bit 3: freed in reverse order. */
static void op_burst(reader_t *r) {
  burst_t *b = &burst;
  size_t n = 1 + (size_t)read_u8(r), size = read_size(r);
  uint8_t mode = read_u8(r);
  if (size > BURST_BYTES) size &= 1023;
  if (size && n * size > BURST_BYTES) n = BURST_BYTES / size;
  if (n * size >= BIG_REQUEST && st.allocated + n * size > INPUT_BUDGET) n = 1;
  if (n * size >= BIG_REQUEST) st.allocated += n * size;
  *b = (burst_t){.n = n, .size = size, .zeroed = mode & 4, .reverse = mode & 8};
  b->seed = next_seed(0xb0b0);
  snprintf(st.what, sizeof st.what, "burst of %zu %s(%zu) by the %s thread, freed by the %s",
           n, b->zeroed ? "calloc" : "malloc", size, mode & 1 ? "helper" : "main",
           mode & 2 ? "helper" : "main");
  trace_step();
  run_on(mode & 1, burst_alloc_task, b);
  for (int side = 0; side < cfg.nsides; side++)
    for (size_t i = 0; i < n; i++) burst_adopt(side, b, i);
  b->live = true;
  for (int side = 0; side < cfg.nsides; side++) {
    check_no_overlap(side);
    for (size_t i = 0; i < n; i++) pattern_fill(b->p[side][i], 0, b->size, b->seed + i);
  }
  check_all();
  for (int side = 0; side < cfg.nsides; side++)
    for (size_t i = 0; i < n; i++) burst_check(side, b, i);
  b->live = false;
  run_on(mode & 2, burst_free_task, b);
}

static void collect_task(void *arg) {
  (void)arg;
  for (int side = 0; side < cfg.nsides; side++) cfg.api[side]->collect_fn();
}

static void op_collect(reader_t *r) {
  bool on_helper = read_u8(r) & 1;
  snprintf(st.what, sizeof st.what, "mm_collect() on the %s thread", on_helper ? "helper" : "main");
  trace_step();
  run_on(on_helper, collect_task, NULL);
}

/* who: 0 the main thread, 1 the helper, 2 odd slots by the helper. */
static void op_free_all(reader_t *r) {
  unsigned who = read_u8(r) % 3;
  for (unsigned i = 0; i < NSLOTS; i++)
    if (st.slots[i].live)
      slot_call((call_t){.kind = CALL_FREE, .slot = i}, who == 1 || (who == 2 && i % 2));
}

static void op_purge_delay(reader_t *r) {
  static const long delays[] = {0, 1, 10, 100};
  long v = delays[read_u8(r) % COUNT(delays)];
  snprintf(st.what, sizeof st.what, "mm_option_set(\"purge_delay_ms\", %ld)", v);
  trace_step();
  int rc = mm_option_set("purge_delay_ms", v);
  if (rc || mm_option_get("purge_delay_ms") != v)
    fail(SIDE_MM, "mm_option_set gave %d, the option reads %ld", rc,
         mm_option_get("purge_delay_ms"));
  st.purge_changed = true;
}

static void op_new_helper(void) {
  snprintf(st.what, sizeof st.what, "the helper thread exits, a new one starts");
  trace_step();
  helper_restart();
}

/* ---- ops 17 and 18: mmalloc's object pools and a heap ------------------------------
 * On mmalloc's side only (glibc has neither).  Each input has two pools,
 * made on first use with an object size from `how` (bits 4-6: 16, 24, 56,
 * 100, 256, 1000, 4096 or 32768 bytes), and one heap; their objects live
 * in a table of PH_OBJS, carry a pattern like the slots' and are checked
 * after every step, and no two of them (nor a slot or a burst block) share
 * a byte.  Bit 3 of `how`: the helper thread makes the call. */

static const size_t ph_pool_sizes[8] = {16, 24, 56, 100, 256, 1000, 4096, 32768};

static void ph_check(unsigned i) {
  const ph_obj_t *o = &ph.obj[i];
  size_t head = o->len < FULL_CHECK_MAX ? o->len : FULL_CHECK_MAX;
  size_t bad = covered_mismatch(o->p, o->len, 0, head, o->seed);
  if (bad == SIZE_MAX && o->len > head) bad = covered_mismatch(o->p, o->len, o->len - 4096, o->len, o->seed);
  if (bad != SIZE_MAX)
    fail(SIDE_MM, "%s object %u: byte %zu of %zu at %p corrupted", o->owner < 2 ? "pool" : "heap",
         i, bad, o->len, (void *)o->p);
}

typedef struct ph_job_s {
  int what; /* 0 pool alloc, 1 free, 2 heap malloc, 3 calloc, 4 realloc, 5 aligned */
  unsigned owner;
  void *old, *res;
  size_t size, align;
  int err;
} ph_job_t;

static void ph_task(void *arg) {
  ph_job_t *j = arg;
  errno = 0;
  switch (j->what) {
  case 0: j->res = mm_pool_alloc(ph.pool[j->owner]); break;
  case 1:
    if (j->owner < 2) mm_pool_free(ph.pool[j->owner], j->old);
    else mm_heap_free(ph.heap, j->old);
    break;
  case 2: j->res = mm_heap_malloc(ph.heap, j->size); break;
  case 3: j->res = mm_heap_calloc(ph.heap, 1, j->size); break;
  case 4: j->res = mm_heap_realloc(ph.heap, j->old, j->size); break;
  default: j->res = mm_heap_aligned(ph.heap, j->align, j->size); break;
  }
  j->err = errno;
}

static void ph_drop(unsigned i) {
  ph_obj_t *o = &ph.obj[i];
  st.live_req -= o->len;
  o->live = false;
}

static void ph_free(unsigned i, bool on_helper) {
  ph_obj_t *o = &ph.obj[i];
  ph_check(i);
  ph_job_t j = {.what = 1, .owner = o->owner, .old = o->p};
  run_on(on_helper, ph_task, &j);
  ph_drop(i);
}

/* A new object in entry i: checked against the others, then patterned. */
static void ph_adopt(unsigned i, unsigned owner, void *p, size_t len, size_t usable,
                     size_t align) {
  ph_obj_t *o = &ph.obj[i];
  if (usable < len) fail(SIDE_MM, "%p: usable size %zu < %zu", p, usable, len);
  if ((uintptr_t)p % align) fail(SIDE_MM, "%p is not aligned to %zu", p, align);
  *o = (ph_obj_t){p, len, usable, owner, next_seed(0x9009 + i), true};
  st.live_req += len;
  check_no_overlap(SIDE_MM);
  covered_fill(o->p, len, 0, len, o->seed);
}

static unsigned ph_live_of(unsigned owner) {
  unsigned n = 0;
  for (unsigned i = 0; i < PH_OBJS; i++) n += ph.obj[i].live && ph.obj[i].owner == owner;
  return n;
}

static void op_pool(reader_t *r) {
  unsigned i = read_u8(r) % PH_OBJS, how = read_u8(r), k = (how >> 2) & 1;
  bool on_helper = how & 8;
  if (!ph.pool[k]) {
    mm_pool_options_t o = {.object_size = ph_pool_sizes[(how >> 4) & 7], .name = k ? "fuzz 1" : "fuzz 0"};
    ph.pool[k] = mm_pool_create(&o);
    if (!ph.pool[k]) fail(SIDE_MM, "mm_pool_create(%zu) failed: errno %d", o.object_size, errno);
    mm_pool_stats_t s;
    mm_pool_stats(ph.pool[k], &s);
    ph.pool_size[k] = s.object_size;
  }
  snprintf(st.what, sizeof st.what, "pool %u: %s, object %u%s", k,
           (const char *[]){"alloc", "free", "release", "stats"}[how & 3], i,
           on_helper ? " by the helper thread" : "");
  trace_step();
  switch (how & 3) {
  case 0: {
    if (ph.obj[i].live) ph_free(i, on_helper);
    if (st.live_req + ph.pool_size[k] > LIVE_CAP) return;
    ph_job_t j = {.what = 0, .owner = k};
    run_on(on_helper, ph_task, &j);
    if (!j.res) fail(SIDE_MM, "mm_pool_alloc returned NULL (errno %d)", j.err);
    size_t sz = ph.pool_size[k];
    ph_adopt(i, k, j.res, sz, sz, sz % 16 ? 8 : 16);
    break;
  }
  case 1:
    if (ph.obj[i].live) ph_free(i, on_helper);
    break;
  case 2: {
    for (unsigned e = 0; e < PH_OBJS; e++)
      if (ph.obj[e].live && ph.obj[e].owner == k) {
        ph_check(e);
        ph_drop(e);
      }
    mm_pool_release(ph.pool[k]);
    mm_pool_stats_t s;
    mm_pool_stats(ph.pool[k], &s);
    if (s.objects || s.blocks) fail(SIDE_MM, "after mm_pool_release: %zu objects in %zu blocks", s.objects, s.blocks);
    break;
  }
  default: {
    mm_pool_stats_t s;
    if (mm_pool_stats(ph.pool[k], &s)) fail(SIDE_MM, "mm_pool_stats failed");
    if (s.objects - s.free_objects != ph_live_of(k))
      fail(SIDE_MM, "pool %u: %zu live objects, the model has %u", k, s.objects - s.free_objects,
           ph_live_of(k));
    break;
  }
  }
}

/* how % 8: 0 malloc, 1 calloc, 2 realloc, 3 aligned, 4 free, 5 destroy,
 * 6 usable, 7 stats; then for 0-3 an alignment (3) and a size. */
static void op_heap(reader_t *r) {
  unsigned i = read_u8(r) % PH_OBJS, how = read_u8(r), what = how % 8;
  bool on_helper = how & 8;
  size_t align = what == 3 ? read_align(r) : 16, size = what < 4 ? read_size(r) : 0;
  if (!ph.heap && !(ph.heap = mm_heap_new("fuzz"))) fail(SIDE_MM, "mm_heap_new failed");
  static const char *const names[] = {"malloc", "calloc", "realloc", "aligned", "free",
                                      "destroy", "usable", "stats"};
  snprintf(st.what, sizeof st.what, "heap: %s(%zu, %zu), object %u%s", names[what], align, size,
           i, on_helper ? " by the helper thread" : "");
  trace_step();
  ph_obj_t *o = &ph.obj[i];
  bool mine = o->live && o->owner == 2;
  switch (what) {
  case 0: case 1: case 2: case 3: {
    bool big = size > ((size_t)64 << 20), bad_align = !is_pow2(align) || align > 4096;
    if (!big && size > ((size_t)4 << 20)) size &= ((size_t)4 << 20) - 1; /* keep it cheap */
    if (!big && st.live_req - (what == 2 && mine ? o->len : 0) + size > LIVE_CAP) return;
    if (what != 2 && o->live) ph_free(i, on_helper);
    if (what == 2 && o->live && !mine) ph_free(i, on_helper);
    mine = o->live;
    ph_job_t j = {.what = 2 + (int)what, .old = mine ? o->p : NULL, .size = size, .align = align};
    if (mine) ph_check(i);
    run_on(on_helper, ph_task, &j);
    if (what == 3 && bad_align) {
      if (j.res || j.err != EINVAL) fail(SIDE_MM, "mm_heap_aligned(%zu): %p errno %d, expected EINVAL", align, j.res, j.err);
      return;
    }
    if (big) {
      if (j.res || j.err != ENOMEM) fail(SIDE_MM, "heap %s(%zu): %p errno %d, expected ENOMEM", names[what], size, j.res, j.err);
      if (mine) ph_check(i); /* a failed realloc left it as it was */
      return;
    }
    if (what == 2 && mine && size == 0) {
      if (j.res) fail(SIDE_MM, "mm_heap_realloc(p, 0) returned %p", j.res);
      ph_drop(i);
      return;
    }
    if (!j.res) fail(SIDE_MM, "heap %s(%zu) returned NULL (errno %d)", names[what], size, j.err);
    if (what == 1 && first_nonzero(j.res, size) != SIZE_MAX) fail(SIDE_MM, "mm_heap_calloc memory not zero");
    size_t usable = mm_heap_usable_size(ph.heap, j.res);
    if (what == 2 && mine) { /* the first min(old, new) bytes came along */
      size_t keep = o->len < size ? o->len : size, seed = o->seed;
      size_t bad = covered_mismatch(j.res, keep, 0, keep < FULL_CHECK_MAX ? keep : FULL_CHECK_MAX, seed);
      if (bad != SIZE_MAX) fail(SIDE_MM, "mm_heap_realloc lost byte %zu", bad);
      ph_drop(i);
    }
    ph_adopt(i, 2, j.res, size, usable, what == 3 ? align : 16);
    break;
  }
  case 4:
    if (mine) ph_free(i, on_helper);
    break;
  case 5:
    for (unsigned e = 0; e < PH_OBJS; e++)
      if (ph.obj[e].live && ph.obj[e].owner == 2) {
        ph_check(e);
        ph_drop(e);
      }
    mm_heap_destroy(ph.heap);
    ph.heap = NULL;
    break;
  case 6:
    if (mine && mm_heap_usable_size(ph.heap, o->p) != o->usable)
      fail(SIDE_MM, "heap object %u: usable size changed from %zu", i, o->usable);
    break;
  default: {
    mm_heap_stats_t s;
    if (mm_heap_stats(ph.heap, &s)) fail(SIDE_MM, "mm_heap_stats failed");
    if (s.live_objects != ph_live_of(2))
      fail(SIDE_MM, "heap: %zu live objects, the model has %u", s.live_objects, ph_live_of(2));
    break;
  }
  }
}

static void ph_end(void) {
  for (unsigned i = 0; i < PH_OBJS; i++)
    if (ph.obj[i].live) ph_free(i, false);
  for (int k = 0; k < 2; k++)
    if (ph.pool[k]) mm_pool_destroy(ph.pool[k]);
  if (ph.heap) mm_heap_destroy(ph.heap);
  memset(&ph, 0, sizeof ph);
}

static void run_op(reader_t *r) {
  unsigned op = read_u8(r) % OP_COUNT;
  if (op < CALL_KINDS) {
    slot_call(read_call(r, (call_kind_t)op), false);
    return;
  }
  switch (op) {
  case OP_ON_HELPER: slot_call(read_call(r, (call_kind_t)(read_u8(r) % CALL_KINDS)), true); break;
  case OP_NEW_HELPER: op_new_helper(); break;
  case OP_COLLECT: op_collect(r); break;
  case OP_BURST: op_burst(r); break;
  case OP_FREE_ALL: op_free_all(r); break;
  case OP_PURGE_DELAY: op_purge_delay(r); break;
  case OP_POOL: op_pool(r); break;
  case OP_HEAP: op_heap(r); break;
  default: break;
  }
}

/* ---- inputs ----------------------------------------------------------------------- */

static bool env_flag(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

static void fuzz_init(void) {
  cfg.page = (size_t)sysconf(_SC_PAGESIZE);
  cfg.trace = env_flag("MMFUZZ_TRACE");
  cfg.full_check = env_flag("MMFUZZ_FULL_CHECK");
  cfg.api[SIDE_MM] = &mm_api;
  cfg.nsides = 1;
#ifdef MMFUZZ_MUTANTS
  const char *mutant = getenv("MMFUZZ_MUTANT");
  if (mutant && !(cfg.api[SIDE_MM] = mutant_api(mutant))) {
    fprintf(stderr, "mmfuzz: unknown MMFUZZ_MUTANT %s\n", mutant);
    exit(2);
  }
#endif
  if (env_flag("MMFUZZ_DIFFERENTIAL")) {
    libc_api_init();
    cfg.api[SIDE_LIBC] = &libc_api;
    cfg.nsides = SIDES;
  }
  cfg.purge_default = mm_option_get("purge_delay_ms");
  fprintf(stderr, "mmfuzz: %s%s%s\n", cfg.api[SIDE_MM]->name,
          cfg.nsides == SIDES ? " against glibc (differential)" : "",
          cfg.full_check ? ", every byte checked every step" : "");
}

/* Free what is left (checking it), put the option back, forget the input. */
static void input_end(void) {
  ph_end();
  for (unsigned i = 0; i < NSLOTS; i++)
    if (st.slots[i].live) slot_call((call_t){.kind = CALL_FREE, .slot = i}, false);
  if (st.purge_changed && mm_option_set("purge_delay_ms", cfg.purge_default))
    fail(SIDE_MM, "cannot restore purge_delay_ms");
  memset(&st, 0, sizeof st);
}

const char *mmfuzz_step(void) { return st.what; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static bool ready;
  if (!ready) {
    fuzz_init();
    ready = true;
  }
  reader_t r = {data, size, 0};
  for (unsigned ops = 0; r.pos < r.size && ops < MAX_OPS; ops++) {
    st.step++;
    run_op(&r);
    check_all();
  }
  st.step++;
  input_end();
  return 0;
}
