/* api.c — the mm_-prefixed public API (include/mmalloc.h).
 *
 * Layer: api.  Argument checking and errno live here; the allocation work is
 * the thread heap's.  mm_malloc and mm_free are the force-inlined fast paths
 * of thread_heap.h; override.c builds the standard names the same way.
 *
 * Error conventions (as glibc): sizes above PTRDIFF_MAX, multiplication
 * overflow and exhausted memory give NULL with errno ENOMEM and leave any
 * input block untouched; bad alignments give EINVAL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "mmalloc.h"
#include "pool.h"
#include "stats.h"
#include "thread_heap.h"

MM_EXPORT void *mm_malloc(size_t size) { return thread_heap_malloc_fast(size); }

MM_EXPORT void mm_free(void *p) { thread_heap_free_fast(p, "free"); }

MM_EXPORT void *mm_calloc(size_t count, size_t size) {
  size_t total;
  if (unlikely(__builtin_mul_overflow(count, size, &total))) {
    errno = ENOMEM;
    return NULL;
  }
  if (total > MM_SMALL_MAX) return thread_heap_malloc_aligned(total, 0, true);
  void *p = thread_heap_malloc_fast(total);
  if (likely(p != NULL)) memset(p, 0, total);
  return p;
}

MM_EXPORT void *mm_realloc(void *p, size_t size) { return thread_heap_realloc(p, size); }

MM_EXPORT void *mm_reallocarray(void *p, size_t count, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return thread_heap_realloc(p, total);
}

static bool is_power_of_two(size_t x) { return x && !(x & (x - 1)); }

/* All aligned allocation lands here once the alignment is known good. */
static void *aligned(size_t align, size_t size) {
  if (align <= 16) return thread_heap_malloc_fast(size);
  if (size > PTRDIFF_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  return thread_heap_malloc_aligned_fast(size, align);
}

MM_EXPORT int mm_posix_memalign(void **out, size_t align, size_t size) {
  if (!is_power_of_two(align) || align % sizeof(void *)) return EINVAL;
  int saved = errno;
  void *p = aligned(align, size);
  if (!p) {
    errno = saved;
    return ENOMEM;
  }
  *out = p;
  return 0;
}

MM_EXPORT void *mm_aligned_alloc(size_t align, size_t size) {
  if (!is_power_of_two(align)) {
    errno = EINVAL;
    return NULL;
  }
  return aligned(align, size);
}

/* glibc's memalign rounds an alignment that is not a power of two up to one;
 * we do the same so that programs written against it keep working. */
MM_EXPORT void *mm_memalign(size_t align, size_t size) {
  if (!is_power_of_two(align)) {
    if (align > ((size_t)1 << (sizeof(size_t) * 8 - 2))) {
      errno = EINVAL;
      return NULL;
    }
    size_t a = 1;
    while (a < align) a <<= 1;
    align = a;
  }
  return aligned(align, size);
}

MM_EXPORT void *mm_valloc(size_t size) { return aligned(MM_DATABLOCK_SIZE, size); }

MM_EXPORT void *mm_pvalloc(size_t size) {
  size_t rounded = (size + MM_DATABLOCK_SIZE - 1) & ~(MM_DATABLOCK_SIZE - 1);
  if (rounded < size) {
    errno = ENOMEM;
    return NULL;
  }
  return aligned(MM_DATABLOCK_SIZE, rounded ? rounded : MM_DATABLOCK_SIZE);
}

MM_EXPORT size_t mm_malloc_usable_size(const void *p) {
  return thread_heap_usable_size_fast(p, "malloc_usable_size");
}

MM_EXPORT void mm_collect(void) {
  thread_heap_process_init();
  thread_heap_collect();
}

MM_EXPORT void mm_stats_print(void) {
  thread_heap_process_init();
  stats_print(2);
}

MM_EXPORT int mm_version(void) { return MM_VERSION; }

MM_EXPORT int mm_option_set(const char *name, long value) {
  thread_heap_process_init();
  return options_set(name, value);
}

MM_EXPORT long mm_option_get(const char *name) {
  thread_heap_process_init();
  return options_get(name);
}

MM_EXPORT size_t mm_stats_json(char *buf, size_t size) {
  thread_heap_process_init();
  return stats_json(buf, size);
}

MM_EXPORT void mm_memory(mm_memory_t *out) {
  thread_heap_process_init();
  stats_memory(out);
}

/* ---- pools and page blocks (pool.c): the process and the calling thread
 * set up first, so that a thread with a pool index has its exit handled ---- */

/* A thread's first pool or heap call: its thread heap (and so its exit
 * handling, which gives its pool index back) and its local heap, where its
 * pools take their page blocks. */
static MM_NOINLINE void pool_thread_first(void) {
  thread_heap_t *th = thread_heap_current();
  if (th) pool_set_home(th->local);
}
MM_INLINE void pool_thread_setup(void) {
  if (unlikely(!pool_has_home())) pool_thread_first();
}

MM_EXPORT mm_pool_t *mm_pool_create(const mm_pool_options_t *options) {
  pool_thread_setup();
  return pool_create(options);
}

MM_EXPORT void *mm_pool_alloc_slow_(mm_pool_t *pool) {
  pool_thread_setup();
  return pool_alloc_slow(pool);
}

MM_EXPORT void mm_pool_free_slow_(mm_pool_t *pool, void *p) {
  pool_thread_setup();
  pool_free_slow(pool, p);
}

MM_EXPORT void mm_pool_release(mm_pool_t *pool) { pool_release(pool); }

MM_EXPORT void mm_pool_destroy(mm_pool_t *pool) { pool_destroy(pool); }

MM_EXPORT int mm_pool_stats(const mm_pool_t *pool, mm_pool_stats_t *out) {
  return pool_stats(pool, out);
}

MM_EXPORT void *mm_page_block_alloc(size_t size) {
  pool_thread_setup();
  return page_block_alloc(size);
}

MM_EXPORT mm_heap_t *mm_heap_new(const char *name) {
  pool_thread_setup();
  return heap_new(name);
}
MM_EXPORT void *mm_heap_malloc(mm_heap_t *heap, size_t size) {
  pool_thread_setup();
  return heap_malloc(heap, size);
}
MM_EXPORT void *mm_heap_calloc(mm_heap_t *heap, size_t count, size_t size) {
  pool_thread_setup();
  return heap_calloc(heap, count, size);
}
MM_EXPORT void *mm_heap_realloc(mm_heap_t *heap, void *p, size_t size) {
  pool_thread_setup();
  return heap_realloc(heap, p, size);
}
MM_EXPORT void *mm_heap_aligned(mm_heap_t *heap, size_t alignment, size_t size) {
  pool_thread_setup();
  return heap_aligned(heap, alignment, size);
}
MM_EXPORT void mm_heap_free(mm_heap_t *heap, void *p) {
  pool_thread_setup();
  heap_free(heap, p);
}
MM_EXPORT size_t mm_heap_usable_size(mm_heap_t *heap, const void *p) {
  return heap_usable_size(heap, p);
}
MM_EXPORT void mm_heap_destroy(mm_heap_t *heap) { heap_destroy(heap); }
MM_EXPORT int mm_heap_stats(mm_heap_t *heap, mm_heap_stats_t *out) { return heap_stats(heap, out); }

MM_EXPORT void mm_page_block_free(void *p) { page_block_free(p); }

/* Library constructor: initialise before main so that MMALLOC_VERBOSE
 * prints early; the first allocation would do it otherwise. */
__attribute__((constructor)) static void api_constructor(void) {
  thread_heap_process_init();
}

/* Exit: secure mode's check of the pools' released memory, and with
 * MMALLOC_STATS=1 the statistics as a table, with 2 as one line of JSON
 * (a destructor, not atexit, which may allocate; the JSON is formatted
 * into static memory). */
__attribute__((destructor)) static void api_destructor(void) {
  pool_quarantine_exit();
  if (options.stats == 1) stats_print(2);
  if (options.stats == 2) {
    static char json[1 << 17];
    size_t n = stats_json(json, sizeof(json) - 1);
    if (n < sizeof(json) - 1) {
      json[n++] = '\n';
      os_write_all(2, json, n);
    } else {
      os_message("mmalloc: MMALLOC_STATS=2: the statistics need %zu bytes; not printed\n", n);
    }
  }
}
