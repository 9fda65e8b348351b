/* fuzz.h — what the fuzzer's files share: the allocator interface the fuzz
 * target drives (one instance per allocator under test: mmalloc's mm_ calls,
 * glibc's in the differential mode, a broken mm_ in the mutant build) and
 * the libFuzzer entry point that driver.c calls.
 */
#ifndef MMFUZZ_H
#define MMFUZZ_H

#include <stddef.h>
#include <stdint.h>

/* One allocator's malloc family.  The calls go through these pointers, so
 * that the compiler cannot use what it knows about malloc (the attributes
 * of include/mmalloc.h) to fold or drop a call the fuzzer makes on purpose. */
typedef struct alloc_api_s {
  const char *name;
  void *(*malloc_fn)(size_t size);
  void *(*calloc_fn)(size_t count, size_t size);
  void *(*realloc_fn)(void *p, size_t size);
  void *(*reallocarray_fn)(void *p, size_t count, size_t size);
  void (*free_fn)(void *p);
  int (*posix_memalign_fn)(void **out, size_t align, size_t size);
  void *(*aligned_alloc_fn)(size_t align, size_t size);
  void *(*memalign_fn)(size_t align, size_t size);
  void *(*valloc_fn)(size_t size);
  void *(*pvalloc_fn)(size_t size);
  size_t (*usable_size_fn)(void *p);
  void (*collect_fn)(void); /* mm_collect(); glibc: malloc_trim(0) */
} alloc_api_t;

/* fuzz_ops.c: run one input (a program of allocator calls); aborts on the
 * first violation, returns 0 otherwise. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fuzz_ops.c: the step being run, in words ("" between inputs); for a
 * signal handler, which may read but not format it. */
const char *mmfuzz_step(void);

#ifdef MMFUZZ_MUTANTS
/* mutants.c: the mm_ calls with one deliberate bug, by name; NULL for an
 * unknown name. */
const alloc_api_t *mutant_api(const char *name);
#endif

#endif
