/* override.c — the standard names: the malloc family and C++ operator
 * new/delete, so that mmalloc replaces the C library's allocator when it is
 * preloaded (LD_PRELOAD), linked dynamically or linked statically.
 *
 * Layer: api.  malloc and free inline the fast paths themselves; the rest
 * call the mm_ functions.  Every entry point is overridden, including
 * pvalloc, malloc_usable_size and glibc's own __libc_ names, so no pointer
 * of ours ever reaches glibc's allocator, and glibc's introspection
 * (mallinfo2, malloc_stats, ...) answers for mmalloc.
 *
 * The C++ operators are defined here in C under their Itanium ABI names so
 * that C programs do not load libstdc++; on failure operator new calls the
 * installed new_handler and throws std::bad_alloc through weak references to
 * libstdc++, which any program that calls operator new has loaded.  (This
 * file is compiled with -fexceptions so the exception can unwind through.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "mmalloc.h"
#include "thread_heap.h"

MM_EXPORT void *malloc(size_t size) { return thread_heap_malloc_fast(size); }
MM_EXPORT void free(void *p) { thread_heap_free_fast(p, "free"); }
MM_EXPORT void cfree(void *p) { thread_heap_free_fast(p, "free"); }
/* C23's sized frees (glibc 2.43 has them: a program built against it calls
 * them, and glibc's would free our block): the pointer is checked as
 * free() checks it; the size and alignment are hints mmalloc does not need,
 * as for C++'s sized delete. */
MM_EXPORT void free_sized(void *p, size_t size) {
  (void)size;
  thread_heap_free_fast(p, "free_sized");
}
MM_EXPORT void free_aligned_sized(void *p, size_t align, size_t size) {
  (void)align, (void)size;
  thread_heap_free_fast(p, "free_aligned_sized");
}
MM_EXPORT void *calloc(size_t n, size_t size) { return mm_calloc(n, size); }
MM_EXPORT void *realloc(void *p, size_t size) { return mm_realloc(p, size); }
MM_EXPORT void *reallocarray(void *p, size_t n, size_t size) {
  return mm_reallocarray(p, n, size);
}
MM_EXPORT int posix_memalign(void **out, size_t align, size_t size) {
  return mm_posix_memalign(out, align, size);
}
MM_EXPORT void *aligned_alloc(size_t align, size_t size) {
  return mm_aligned_alloc(align, size);
}
MM_EXPORT void *memalign(size_t align, size_t size) { return mm_memalign(align, size); }
MM_EXPORT void *valloc(size_t size) { return mm_valloc(size); }
MM_EXPORT void *pvalloc(size_t size) { return mm_pvalloc(size); }
MM_EXPORT size_t malloc_usable_size(void *p) { return mm_malloc_usable_size(p); }
#if defined(__GLIBC__)
/* glibc's own names of the same calls, which some programs and libraries
 * call directly: a block one of them hands out is freed by free(), and the
 * other way round, so they must be mmalloc's too. */
MM_EXPORT void *__libc_malloc(size_t size) { return thread_heap_malloc_fast(size); }
MM_EXPORT void __libc_free(void *p) { thread_heap_free_fast(p, "free"); }
MM_EXPORT void *__libc_calloc(size_t n, size_t size) { return mm_calloc(n, size); }
MM_EXPORT void *__libc_realloc(void *p, size_t size) { return mm_realloc(p, size); }
MM_EXPORT void *__libc_memalign(size_t align, size_t size) { return mm_memalign(align, size); }
MM_EXPORT void *__libc_valloc(size_t size) { return mm_valloc(size); }
MM_EXPORT void *__libc_pvalloc(size_t size) { return mm_pvalloc(size); }
#endif

/* glibc's malloc_trim(pad) gives free memory back; so do we (pad ignored). */
MM_EXPORT int malloc_trim(size_t pad) {
  (void)pad;
  mm_collect();
  return 1;
}

#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
/* ---- glibc's introspection, answered by mmalloc --------------------------------
 * Every public name of glibc's malloc is defined here, so that a program
 * linked statically with libmmalloc.a that calls one of these does not also
 * pull in glibc's malloc (whose malloc and free would then clash with ours
 * at link time), and so that mallinfo2 and malloc_stats describe the
 * allocator that holds the memory.  The numbers are mm_memory's. */

/* glibc's fields from mm_memory: the heap (arena) is all of mmalloc's
 * resident memory but huge blocks, which glibc would have mapped on their
 * own (hblkhd); in use (uordblks) and free (fordblks) divide the heap.
 * glibc's counts of chunks and fast bins have no counterpart: 0. */
static void mallinfo_fill(size_t *arena, size_t *hblkhd, size_t *uordblks, size_t *fordblks) {
  mm_memory_t m;
  mm_memory(&m);
  *arena = m.resident - m.huge_live;
  *hblkhd = m.huge_live;
  *uordblks = m.live - m.huge_live;
  *fordblks = *arena - *uordblks;
}

MM_EXPORT struct mallinfo2 mallinfo2(void) {
  struct mallinfo2 mi = {0};
  mallinfo_fill(&mi.arena, &mi.hblkhd, &mi.uordblks, &mi.fordblks);
  return mi;
}

/* The int fields of the older call, capped at INT_MAX (glibc wraps). */
MM_EXPORT struct mallinfo mallinfo(void) {
  size_t arena, hblkhd, uordblks, fordblks;
  mallinfo_fill(&arena, &hblkhd, &uordblks, &fordblks);
  struct mallinfo mi = {0};
  mi.arena = arena > INT_MAX ? INT_MAX : (int)arena;
  mi.hblkhd = hblkhd > INT_MAX ? INT_MAX : (int)hblkhd;
  mi.uordblks = uordblks > INT_MAX ? INT_MAX : (int)uordblks;
  mi.fordblks = fordblks > INT_MAX ? INT_MAX : (int)fordblks;
  return mi;
}

/* mmalloc's table (mm_stats_print), on stderr as glibc's is. */
MM_EXPORT void malloc_stats(void) { mm_stats_print(); }

/* The memory picture as XML, in glibc's outline (options must be 0). */
MM_EXPORT int malloc_info(int options, FILE *fp) {
  if (options != 0 || !fp) {
    errno = EINVAL;
    return -1;
  }
  mm_memory_t m;
  mm_memory(&m);
  fprintf(fp,
          "<malloc version=\"mmalloc-%d\">\n"
          "<total type=\"live\" size=\"%zu\"/>\n"
          "<total type=\"free-resident\" size=\"%zu\"/>\n"
          "<total type=\"page-slack\" size=\"%zu\"/>\n"
          "<total type=\"metadata\" size=\"%zu\"/>\n"
          "<total type=\"huge\" size=\"%zu\"/>\n"
          "<system type=\"current\" size=\"%zu\"/>\n"
          "<system type=\"returned\" size=\"%zu\"/>\n"
          "<aspace type=\"total\" size=\"%zu\"/>\n"
          "<aspace type=\"mprotect\" size=\"%zu\"/>\n"
          "</malloc>\n",
          MM_VERSION, m.live, m.free_resident, m.page_slack, m.metadata, m.huge_live, m.resident,
          m.returned, m.reserved, m.committed);
  return ferror(fp) ? -1 : 0;
}

/* glibc's tunables (M_MXFAST .. M_ARENA_MAX) name parts mmalloc does not
 * have: each is accepted and ignored, with glibc's answer: 1, but 0 for a
 * fast-bin size out of glibc's range (glibc answers 1 for a parameter it
 * does not know, too).  mmalloc's own options: mm_option_set, MMALLOC_*. */
MM_EXPORT int mallopt(int param, int value) {
  if (param == M_MXFAST) return value >= 0 && (size_t)value <= 80 * sizeof(size_t) / 4;
  return 1;
}
#endif

/* ---- C++ ------------------------------------------------------------------ */

typedef void (*new_handler_t)(void);
extern new_handler_t _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

static MM_COLD void *new_failed(size_t size, size_t align, bool nothrow) {
  for (;;) {
    new_handler_t h = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : NULL;
    if (!h) break;
    h(); /* may throw, or free memory */
    void *p = align > 16 ? mm_aligned_alloc(align, size) : mm_malloc(size);
    if (p) return p;
  }
  if (nothrow) return NULL;
  if (_ZSt17__throw_bad_allocv) _ZSt17__throw_bad_allocv();
  os_fatal("mmalloc: operator new(%zu): out of memory\n", size);
}

MM_INLINE void *cxx_new(size_t size) {
  void *p = thread_heap_malloc_fast(size);
  return likely(p != NULL) ? p : new_failed(size, 0, false);
}
MM_INLINE void *cxx_new_nothrow(size_t size) {
  void *p = thread_heap_malloc_fast(size);
  return likely(p != NULL) ? p : new_failed(size, 0, true);
}
static void *cxx_new_aligned(size_t size, size_t align, bool nothrow) {
  void *p = (align && !(align & (align - 1))) ? mm_aligned_alloc(align, size) : NULL;
  return p ? p : new_failed(size, align, nothrow);
}

/* operator new(size_t), new[](size_t), and their nothrow forms */
MM_EXPORT void *_Znwm(size_t n) { return cxx_new(n); }
MM_EXPORT void *_Znam(size_t n) { return cxx_new(n); }
MM_EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *t) { (void)t; return cxx_new_nothrow(n); }
MM_EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *t) { (void)t; return cxx_new_nothrow(n); }
/* aligned (std::align_val_t) */
MM_EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t a) { return cxx_new_aligned(n, a, false); }
MM_EXPORT void *_ZnamSt11align_val_t(size_t n, size_t a) { return cxx_new_aligned(n, a, false); }
MM_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *t) {
  (void)t;
  return cxx_new_aligned(n, a, true);
}
MM_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *t) {
  (void)t;
  return cxx_new_aligned(n, a, true);
}
/* operator delete: plain, sized, nothrow, aligned, sized+aligned */
MM_EXPORT void _ZdlPv(void *p) { thread_heap_free_fast(p, "operator delete"); }
MM_EXPORT void _ZdaPv(void *p) { thread_heap_free_fast(p, "operator delete[]"); }
MM_EXPORT void _ZdlPvm(void *p, size_t n) { (void)n; thread_heap_free_fast(p, "operator delete"); }
MM_EXPORT void _ZdaPvm(void *p, size_t n) { (void)n; thread_heap_free_fast(p, "operator delete[]"); }
MM_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *t) {
  (void)t;
  thread_heap_free_fast(p, "operator delete");
}
MM_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *t) {
  (void)t;
  thread_heap_free_fast(p, "operator delete[]");
}
MM_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t a) { (void)a; thread_heap_free_fast(p, "operator delete"); }
MM_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t a) { (void)a; thread_heap_free_fast(p, "operator delete[]"); }
MM_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) {
  (void)n; (void)a;
  thread_heap_free_fast(p, "operator delete");
}
MM_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) {
  (void)n; (void)a;
  thread_heap_free_fast(p, "operator delete[]");
}
MM_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *t) {
  (void)a; (void)t;
  thread_heap_free_fast(p, "operator delete");
}
MM_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *t) {
  (void)a; (void)t;
  thread_heap_free_fast(p, "operator delete[]");
}
