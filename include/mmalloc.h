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
/* The memory picture in numbers, the "total" of mm_stats_json (its fields
 * are the JSON's *_bytes of the same names; docs/statistics.md): what a
 * monitor samples.  Reading it walks the pages of every local heap, each
 * under its own lock, so it costs as much as mm_stats_json without the
 * formatting: call it when a monitor samples, not per allocation.  The C
 * library's mallinfo2, mallinfo, malloc_stats and malloc_info answer from
 * the same numbers when mmalloc replaces them. */
typedef struct mm_memory_s {
  size_t live;          /* blocks handed out and not yet freed */
  size_t resident;      /* mmalloc's memory that may be resident: live + the three below */
  size_t free_resident; /* freed memory not yet given back to the OS */
  size_t page_slack;    /* free blocks inside pages of small objects */
  size_t metadata;      /* slot headers, extent maps, page descriptors */
  size_t huge_live;     /* of live: huge blocks, each in a mapping of its own */
  size_t returned;      /* given back to the OS since start-up */
  size_t reserved;      /* address space reserved for the heaps */
  size_t committed;     /* of it, made read-write */
} mm_memory_t;
void mm_memory(mm_memory_t *out);

/* ---- version --------------------------------------------------------------- */
/* MM_VERSION of the library actually linked or preloaded (which may differ
 * from the header a program was compiled with). */
int mm_version(void);

/* ---- options -------------------------------------------------------------- */
/* Options by name, as in the environment without the MMALLOC_ prefix and
 * case-insensitive: "verbose", "stats", "heaps", "hugepages",
 * "purge_delay_ms", "purge_thread_mib", "secure", "zero_on_free",
 * "cache_colour".  Returns 0, EINVAL for an unknown name or a value out of
 * range, or EBUSY for "heaps", "secure", "zero_on_free" and "cache_colour",
 * which are fixed at start-up (set them in the environment: MMALLOC_HEAPS,
 * MMALLOC_SECURE, ...). */
int mm_option_set(const char *name, long value);
/* The value in force, or -1 for an unknown name. */
long mm_option_get(const char *name);

/* ---- object pools ------------------------------------------------------------
 * A pool hands out objects of one size and alignment, with no header, from
 * page blocks of mmalloc's own page manager (the local heaps), and drops
 * them all at once: mm_pool_release (every object; the pool stays usable)
 * or mm_pool_destroy.  mm_pool_alloc and mm_pool_free are inline: a pop or
 * a push on the calling thread's own free list of the pool, no lock, no
 * atomic instruction, no call.  Any thread may free any object of the pool
 * (it joins the freeing thread's list; a thread whose list reaches its
 * limit hands the whole list to the pool's shared depot, and a thread whose
 * list is empty takes one back: a few stores under a short lock, no walk).
 * Every pointer mm_pool_free gets is checked as free() checks
 * one (an object of this pool, at an object boundary, not already free),
 * from mmalloc's page map, a few loads with no call; anything else prints
 * one line naming the call, the pool and the pointer, and aborts.  free()
 * and realloc() reject a pool object the same way.
 *
 * Limits: object_size 1 .. 32768 bytes (objects are at least 16 bytes, a
 * multiple of 8 and of the alignment, and aligned to the largest power of
 * two that divides their size); alignment 0 (8) or a power of two up to
 * 4096.  Anything
 * else: mm_pool_create returns NULL with errno EINVAL.  No memory:
 * mm_pool_alloc returns NULL with errno ENOMEM and the pool stays usable.
 * A thread's own free list exists for the first MM_POOL_THREADS - 1 threads
 * alive at once that use pools; further threads take the locked slow path.
 *
 * Contract: mm_pool_release and mm_pool_destroy run while no other thread
 * uses the pool (the objects of other threads' lists are dropped too). */
typedef struct mm_pool_options_s {
  size_t object_size;
  size_t alignment; /* 0: 8 (see above) */
  const char *name; /* statistics and error messages (copied, 31 bytes kept); NULL: "pool" */
  size_t reserve;   /* objects carved at creation, ready for the first allocations */
} mm_pool_options_t;

typedef struct mm_pool_s mm_pool_t;

typedef struct mm_pool_stats_s {
  size_t object_size;   /* bytes per object, after rounding */
  size_t blocks;        /* page blocks the pool holds */
  size_t bytes;         /* bytes of those page blocks */
  size_t objects;       /* objects carved from them */
  size_t free_objects;  /* of which free (in the depot and the threads' lists) */
  size_t slow_calls;    /* calls the inline paths handed to the library */
} mm_pool_stats_t;

mm_pool_t *mm_pool_create(const mm_pool_options_t *options);
void mm_pool_release(mm_pool_t *pool);
void mm_pool_destroy(mm_pool_t *pool);
/* 0, or EINVAL for a NULL pool or out.  Exact when no thread uses the pool. */
int mm_pool_stats(const mm_pool_t *pool, mm_pool_stats_t *out);
static inline void *mm_pool_alloc(mm_pool_t *pool);
static inline void mm_pool_free(mm_pool_t *pool, void *p);
/* mm_pool_free without the page-map check (the caller vouches that p is an
 * object of this pool, handed out and not freed since): a double free is
 * still caught, a pointer from elsewhere is not.  For the hottest loops,
 * once a program is known good; about 25 instructions fewer. */
static inline void mm_pool_free_unchecked(mm_pool_t *pool, void *p);

/* ---- first-class heaps ------------------------------------------------------
 * A heap holds objects of any size apart from every other heap's and from
 * malloc's (its own page blocks), and mm_heap_destroy frees them all at
 * once, in time proportional to the heap's page blocks, not its objects.
 * Small objects (up to 32 KiB) come from one pool per size class (the size
 * classes of malloc, so a heap wastes what malloc wastes); larger ones are
 * page blocks of their own, up to 64 MiB (above: NULL, ENOMEM).  Any
 * thread may allocate and free in any heap.  Every pointer mm_heap_free,
 * mm_heap_realloc and mm_heap_usable_size get is checked (an object of
 * this heap, at its start, not free); free() and realloc() reject heap
 * objects with the usual one-line error.  mm_heap_aligned takes a power of
 * two up to 4096 (else NULL, EINVAL); mm_heap_realloc(heap, p, 0) frees p
 * and returns NULL, as realloc does here.  Contract: mm_heap_destroy runs
 * while no other thread uses the heap (the debug build, MM_DEBUG >= 1,
 * catches a call still running on it). */
typedef struct mm_heap_s mm_heap_t;
typedef struct mm_heap_stats_s {
  size_t blocks;       /* page blocks the heap holds */
  size_t bytes;        /* their bytes */
  size_t live_objects; /* objects allocated and not freed */
  size_t live_bytes;   /* their bytes (rounded to the size class, or to 4 KiB) */
} mm_heap_stats_t;

mm_heap_t *mm_heap_new(const char *name); /* name copied, 31 bytes kept; NULL: "heap" */
void *mm_heap_malloc(mm_heap_t *heap, size_t size) MM_MALLOC_ATTR MM_ALLOC_SIZE(2);
void *mm_heap_calloc(mm_heap_t *heap, size_t count, size_t size) MM_MALLOC_ATTR MM_ALLOC_SIZE(2, 3);
void *mm_heap_realloc(mm_heap_t *heap, void *p, size_t size) MM_ALLOC_SIZE(3);
void *mm_heap_aligned(mm_heap_t *heap, size_t alignment, size_t size) MM_MALLOC_ATTR MM_ALLOC_SIZE(3);
void mm_heap_free(mm_heap_t *heap, void *p);
size_t mm_heap_usable_size(mm_heap_t *heap, const void *p);
void mm_heap_destroy(mm_heap_t *heap);
/* 0, or EINVAL for a NULL heap or out. */
int mm_heap_stats(mm_heap_t *heap, mm_heap_stats_t *out);

/* ---- page blocks ------------------------------------------------------------
 * Page blocks straight from the page manager, for programs that run their
 * own pools: size rounded up to 4 KiB, at most 64 MiB (else NULL, EINVAL),
 * 4 KiB aligned, not zeroed (a fresh one is).  mm_page_block_free takes
 * exactly what mm_page_block_alloc returned (anything else: one line and
 * abort); the block goes back to the page manager, where pages of small
 * objects and other pools reuse it while it is still resident. */
void *mm_page_block_alloc(size_t size) MM_MALLOC_ATTR MM_ALLOC_SIZE(1);
void mm_page_block_free(void *p);

/* ---- what the inline pool calls read (not API: may change with the soname) --
 * The page map: pool->slot_kinds[a >> 27] is 1 when address a lies in a
 * slot of the local heaps (a pointer in the pool, not an exported table: a
 * program's copy of a library's table would be a stale copy); the slot (a rounded down to 128 MiB) starts with
 * a map of uint32 offsets, at +4096, one per 4 KiB of the slot, from the
 * slot to the descriptor of what covers it; a pool's page block has this
 * line at the start of its descriptor.  The library checks these numbers
 * against its own when it is compiled. */
#define MM_POOL_THREADS 256
#define MM_POOL_SLOT_SHIFT_ 27
#define MM_POOL_SLOTS_ ((unsigned long)1 << (48 - MM_POOL_SLOT_SHIFT_))
#define MM_POOL_MAP_OFFSET_ 4096ul
#define MM_POOL_OWNER_TAG_ 4ul
typedef struct mm_pool_block_line_ {
  void *reserved_[2];
  unsigned long owner;     /* (unsigned long)pool | MM_POOL_OWNER_TAG_ */
  unsigned long start;     /* the first object */
  unsigned long long limit; /* bytes carved from start */
  unsigned long long magic; /* ceil(2^64 / object size) */
} mm_pool_block_line_;
typedef struct mm_pool_cache_s { /* one thread's free list: one cache line */
  void *free;          /* objects, linked through their first word */
  unsigned long count; /* objects on it */
  unsigned long limit; /* a free that finds count == limit takes the slow path */
  unsigned long reserved_[5];
} mm_pool_cache_t;
struct mm_pool_s {
  unsigned long key;       /* a free object's second word is its address ^ key */
  mm_pool_cache_t *cache;  /* cache[mm_pool_thread_]: the calling thread's */
  const unsigned char *slot_kinds; /* the page map's table of slots */
};
extern __thread unsigned mm_pool_thread_ __attribute__((tls_model("initial-exec")));
void *mm_pool_alloc_slow_(mm_pool_t *pool);
void mm_pool_free_slow_(mm_pool_t *pool, void *p);

/* Push p (not free: its canary checked) on the calling thread's list c. */
static inline int mm_pool_push_(mm_pool_t *pool, mm_pool_cache_t *c, void *p) {
  unsigned long a = (unsigned long)p, *o = (unsigned long *)p;
  if (__builtin_expect(o[1] == (a ^ pool->key) || c->count >= c->limit, 0)) return 0;
  o[0] = (unsigned long)c->free;
  o[1] = a ^ pool->key;
  c->free = p;
  c->count++;
  return 1;
}

static inline void *mm_pool_alloc(mm_pool_t *pool) {
  if (__builtin_expect(pool != 0, 1)) {
    mm_pool_cache_t *c = &pool->cache[mm_pool_thread_];
    void **o = (void **)c->free;
    if (__builtin_expect(o != 0, 1)) {
      c->free = o[0];
      c->count--;
      o[1] = 0; /* only a free sets the canary */
      return o;
    }
  }
  return mm_pool_alloc_slow_(pool);
}

static inline void mm_pool_free(mm_pool_t *pool, void *p) {
  unsigned long a = (unsigned long)p, i = a >> MM_POOL_SLOT_SHIFT_;
  if (__builtin_expect(pool != 0 && i < MM_POOL_SLOTS_ &&
                           __atomic_load_n(&pool->slot_kinds[i], __ATOMIC_RELAXED) == 1,
                       1)) {
    unsigned long slot = a & ~(((unsigned long)1 << MM_POOL_SLOT_SHIFT_) - 1);
    unsigned off32 = ((const unsigned *)(slot + MM_POOL_MAP_OFFSET_))
        [(a >> 12) & ((1ul << (MM_POOL_SLOT_SHIFT_ - 12)) - 1)];
    const mm_pool_block_line_ *b = (const mm_pool_block_line_ *)(slot + off32);
    unsigned long long off = a - b->start;
    if (__builtin_expect(
            __atomic_load_n(&b->owner, __ATOMIC_RELAXED) == ((unsigned long)pool | MM_POOL_OWNER_TAG_) &&
                off < __atomic_load_n(&b->limit, __ATOMIC_RELAXED) && off * b->magic < b->magic &&
                mm_pool_push_(pool, &pool->cache[mm_pool_thread_], p),
            1))
      return;
  }
  mm_pool_free_slow_(pool, p);
}

static inline void mm_pool_free_unchecked(mm_pool_t *pool, void *p) {
  if (__builtin_expect(pool != 0 && p != 0 &&
                           mm_pool_push_(pool, &pool->cache[mm_pool_thread_], p), 1))
    return;
  mm_pool_free_slow_(pool, p);
}

#ifdef __cplusplus
}
#endif

#endif /* MMALLOC_H */
