/* mmalloc.h — the public API of mmalloc, and nothing else.
 *
 * mmalloc replaces the whole malloc family when it is linked or preloaded
 * (LD_PRELOAD=libmmalloc.so); the mm_-prefixed calls below are the same
 * allocator under names that never clash with the C library's, plus the
 * calls that have no standard name (statistics, options, collection).
 *
 * Errors follow the C library: impossible sizes and exhausted memory give
 * NULL with errno == ENOMEM; bad alignments give EINVAL.  Freeing a pointer
 * mmalloc never handed out, or one already freed, prints one line naming
 * the call and the pointer on stderr and aborts.
 */
#ifndef MMALLOC_H
#define MMALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header (CMakeLists.txt, the pkg-config file, the Rust
 * crates and CHANGELOG.md carry the same number; a test keeps them equal),
 * and MM_VERSION as one number, major * 10000 + minor * 100 + patch. */
#define MM_VERSION_MAJOR 0
#define MM_VERSION_MINOR 1
#define MM_VERSION_PATCH 0
#define MM_VERSION (MM_VERSION_MAJOR * 10000 + MM_VERSION_MINOR * 100 + MM_VERSION_PATCH)

#if defined(__GNUC__)
#define MM_MALLOC_ATTR __attribute__((malloc, warn_unused_result))
#define MM_ALLOC_SIZE(...) __attribute__((alloc_size(__VA_ARGS__)))
#else
#define MM_MALLOC_ATTR
#define MM_ALLOC_SIZE(...)
#endif

/* ---- the malloc family, mm_-prefixed ------------------------------------ */
void *mm_malloc(size_t size) MM_MALLOC_ATTR MM_ALLOC_SIZE(1);
void *mm_calloc(size_t count, size_t size) MM_MALLOC_ATTR MM_ALLOC_SIZE(1, 2);
void *mm_realloc(void *p, size_t size) MM_ALLOC_SIZE(2);
void *mm_reallocarray(void *p, size_t count, size_t size) MM_ALLOC_SIZE(2, 3);
void mm_free(void *p);
int mm_posix_memalign(void **out, size_t alignment, size_t size);
void *mm_aligned_alloc(size_t alignment, size_t size) MM_MALLOC_ATTR MM_ALLOC_SIZE(2);
void *mm_memalign(size_t alignment, size_t size) MM_MALLOC_ATTR MM_ALLOC_SIZE(2);
void *mm_valloc(size_t size) MM_MALLOC_ATTR MM_ALLOC_SIZE(1);
void *mm_pvalloc(size_t size) MM_MALLOC_ATTR;
size_t mm_malloc_usable_size(const void *p);

/* ---- memory back to the OS ---------------------------------------------- */
/* Collect the calling thread's pending remote frees, return its empty pages
 * to their local heaps, and give every free extent of every local heap back
 * to the OS now (ignoring the purge delay). */
void mm_collect(void);

/* ---- statistics ----------------------------------------------------------- */
/* Print statistics to stderr (what MMALLOC_STATS=1 prints at exit). */
void mm_stats_print(void);
/* Write statistics as one JSON object into buf (at most size bytes, always
 * NUL-terminated when size > 0).  Returns the length the whole object needs,
 * excluding the NUL, as snprintf does. */
size_t mm_stats_json(char *buf, size_t size);

/* ---- version --------------------------------------------------------------- */
/* MM_VERSION of the library actually linked or preloaded (which may differ
 * from the header a program was compiled with). */
int mm_version(void);

/* ---- options -------------------------------------------------------------- */
/* Options by name, as in the environment without the MMALLOC_ prefix and
 * case-insensitive: "verbose", "stats", "heaps", "hugepages",
 * "purge_delay_ms", "secure".  Returns 0, EINVAL for an unknown name or a
 * value out of range, or EBUSY for "heaps" and "secure", which are fixed at
 * start-up (set them in the environment: MMALLOC_HEAPS, MMALLOC_SECURE). */
int mm_option_set(const char *name, long value);
/* The value in force, or -1 for an unknown name. */
long mm_option_get(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* MMALLOC_H */
