/* mutants.c — the mm_ calls with one deliberate bug each, compiled only into
 * fuzz_mutants (-DMMFUZZ_MUTANTS), never into the allocator: the
 * fuzz_mutant_* ctests run the corpus with MMFUZZ_MUTANT=<name> and pass
 * only if the fuzz target reports a failure, which shows that its checks
 * can fail and that the corpus reaches each kind of bug.
 *
 *   calloc-dirty        calloc of more than 32 KiB leaves its last byte set
 *   realloc-move-corrupts  a realloc that moves the block damages its first byte
 *   usable-lies         malloc_usable_size says half for blocks above 64 KiB
 *   memalign-unaligned  memalign ignores alignments above 4 KiB
 *   wrong-errno         malloc of a size above PTRDIFF_MAX sets EINVAL
 *   overlap             every fourth malloc of up to 16 bytes returns the
 *                       last such block again, if it was not freed
 *   failed-realloc-shrinks  realloc to a size above PTRDIFF_MAX shrinks the
 *                       block to half its usable size before failing
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "mmalloc.h"

static size_t usable(void *p) { return mm_malloc_usable_size(p); }

static void *calloc_dirty(size_t count, size_t size) {
  unsigned char *p = mm_calloc(count, size);
  if (p && count * size > ((size_t)32 << 10)) p[count * size - 1] = 0x5a;
  return p;
}

static void *realloc_move_corrupts(void *p, size_t size) {
  unsigned char *q = mm_realloc(p, size);
  if (p && q && q != p) q[0] ^= 1;
  return q;
}

static size_t usable_lies(void *p) {
  size_t u = mm_malloc_usable_size(p);
  return u > ((size_t)64 << 10) ? u / 2 : u;
}

static void *memalign_unaligned(size_t align, size_t size) {
  return align > 4096 ? mm_malloc(size) : mm_memalign(align, size);
}

static void *malloc_wrong_errno(size_t size) {
  void *p = mm_malloc(size);
  if (!p && size > PTRDIFF_MAX) errno = EINVAL;
  return p;
}

static _Atomic(void *) last_tiny;
static atomic_uint tiny_calls;

static void *malloc_overlap(size_t size) {
  void *last = atomic_load(&last_tiny);
  if (size <= 16 && last && atomic_fetch_add(&tiny_calls, 1) % 4 == 3) return last;
  void *p = mm_malloc(size);
  if (size <= 16) atomic_store(&last_tiny, p);
  return p;
}

static void free_overlap(void *p) {
  void *expected = p;
  atomic_compare_exchange_strong(&last_tiny, &expected, NULL);
  mm_free(p);
}

static void *realloc_failed_shrinks(void *p, size_t size) {
  if (p && size > PTRDIFF_MAX) {
    void *q = mm_realloc(p, mm_malloc_usable_size(p) / 2 + 1);
    if (q != p) return q; /* it moved: a "success" where ENOMEM was due */
    errno = ENOMEM;
    return NULL;
  }
  return mm_realloc(p, size);
}

static alloc_api_t mutant = {
    .name = "mmalloc (mutant)", .malloc_fn = mm_malloc, .calloc_fn = mm_calloc,
    .realloc_fn = mm_realloc, .reallocarray_fn = mm_reallocarray, .free_fn = mm_free,
    .posix_memalign_fn = mm_posix_memalign, .aligned_alloc_fn = mm_aligned_alloc,
    .memalign_fn = mm_memalign, .valloc_fn = mm_valloc, .pvalloc_fn = mm_pvalloc,
    .usable_size_fn = usable, .collect_fn = mm_collect};

const alloc_api_t *mutant_api(const char *name) {
  if (!strcmp(name, "calloc-dirty")) mutant.calloc_fn = calloc_dirty;
  else if (!strcmp(name, "realloc-move-corrupts")) mutant.realloc_fn = realloc_move_corrupts;
  else if (!strcmp(name, "usable-lies")) mutant.usable_size_fn = usable_lies;
  else if (!strcmp(name, "memalign-unaligned")) mutant.memalign_fn = memalign_unaligned;
  else if (!strcmp(name, "wrong-errno")) mutant.malloc_fn = malloc_wrong_errno;
  else if (!strcmp(name, "overlap")) {
    mutant.malloc_fn = malloc_overlap;
    mutant.free_fn = free_overlap;
  } else if (!strcmp(name, "failed-realloc-shrinks")) mutant.realloc_fn = realloc_failed_shrinks;
  else return NULL;
  mutant.name = name;
  return &mutant;
}
