/* pool.h — object pools (mm_pool_*) and raw page blocks (mm_page_block_*):
 * what the rest of the allocator needs to know of them (pool.c).
 *
 * Layer: pool (above the page layer; below the thread heaps, which it does
 * not know: the api wraps each call so that the process and the calling
 * thread are set up first).
 *
 * A pool's memory is page blocks taken from the local heaps' page manager
 * (local_heap_take_page_block, as a thread heap takes one for a page: its
 * size class's page block, 2 MiB aligned blocks advised huge once the pool
 * is big) and
 * turned into extents of kind POOL: objects of one size from the block's
 * start, carved in batches, no header anywhere.  Line 0 of a POOL extent's
 * descriptor is laid out like a PAGE's where the inline mm_pool_free reads
 * it (include/mmalloc.h: mm_pool_block_line_):
 *   xowner_tid  (uintptr_t)pool | MM_OWNER_POOL; a raw page block: the tag
 *               alone.  No thread id has that bit, so the malloc free fast
 *               path always misses on it and free() reports the pointer;
 *   page_start  the first object (== node.start);
 *   xlimit      bytes carved so far (written under the pool's lock);
 *   magic       ceil(2^64 / object size): the divisibility test of page.h;
 *   block_size  the object size;
 *   xowner      NULL (a pool is not a thread heap);
 *   pool_heap   the heap (heap.c) whose pool this is, or NULL;
 *   next/prev   the pool's list of its blocks (the pool's lock).
 * A block comes back to the page manager whole (mm_pool_release,
 * mm_pool_destroy, mm_page_block_free): into the page cache, where a
 * thread heap or another pool takes it while it is still resident; in
 * secure mode first through the release quarantine (pool_give_back).
 */
#ifndef MM_POOL_H
#define MM_POOL_H

#include "local_heap.h"
#include "mmalloc.h"
#include "page.h"

MM_HIDDEN_BEGIN

#define MM_OWNER_POOL ((uintptr_t)4)
_Static_assert(MM_OWNER_POOL == MM_POOL_OWNER_TAG_, "the inline pool free's owner tag");
_Static_assert((MM_OWNER_POOL & (MM_OWNER_FULL | MM_OWNER_SLOW)) == 0, "a tag of its own");
/* A raw page block (mm_page_block_alloc) is the largest a pool's page
 * block may be, too. */
#define MM_PAGE_BLOCK_MAX ((size_t)64 << 20)

/* The pool (NULL for a raw page block) whose extent e is; e->kind == POOL. */
MM_INLINE struct mm_pool_s *pool_of_block(const extent_t *e) {
  return (struct mm_pool_s *)(atomic_load_relaxed(&e->xowner_tid) & ~MM_OWNER_POOL);
}
/* The pool's name, for messages (its lock not needed: const). */
const char *pool_name(const struct mm_pool_s *pool);

/* The calls behind the public ones (the api has set up the process and
 * the calling thread first). */
struct mm_pool_s *pool_create(const mm_pool_options_t *options);
void *pool_alloc_slow(struct mm_pool_s *pool);
void pool_free_slow(struct mm_pool_s *pool, void *p);
void pool_release(struct mm_pool_s *pool);
void pool_destroy(struct mm_pool_s *pool);
int pool_stats(const struct mm_pool_s *pool, mm_pool_stats_t *out);
void *page_block_alloc(size_t size);
void page_block_free(void *p);

/* A POOL block given back by the call named (for the message of a write
 * after it): to the page manager, or in secure mode through the release
 * quarantine (pool.c), which checks it for writes before it goes. */
enum {
  MM_GAVE_POOL_RELEASE,
  MM_GAVE_POOL_DESTROY,
  MM_GAVE_HEAP_DESTROY,
  MM_GAVE_HEAP_FREE,
  MM_GAVE_PAGE_BLOCK_FREE,
  MM_GAVE_COUNT
};
void pool_give_back(extent_t *e, unsigned by);
/* pool_destroy, its blocks given back as by says (a heap's destroy). */
void pool_destroy_by(struct mm_pool_s *pool, unsigned by);
/* Exit (secure mode): the blocks still held are checked; skipped when
 * another thread holds the pools' lock. */
void pool_quarantine_exit(void);
/* The blocks held and their usable bytes (statistics). */
void pool_quarantine_stats(uint64_t *blocks, uint64_t *bytes);

/* ---- heap.c: first-class heaps (mm_heap_*), made of pools ---- */
struct heap_s;
const char *heap_name(const struct heap_s *heap);
struct mm_heap_s *heap_new(const char *name);
void *heap_malloc(struct mm_heap_s *heap, size_t size);
void *heap_calloc(struct mm_heap_s *heap, size_t count, size_t size);
void *heap_realloc(struct mm_heap_s *heap, void *p, size_t size);
void *heap_aligned(struct mm_heap_s *heap, size_t align, size_t size);
void heap_free(struct mm_heap_s *heap, void *p);
size_t heap_usable_size(struct mm_heap_s *heap, const void *p);
void heap_destroy(struct mm_heap_s *heap);
int heap_stats(struct mm_heap_s *heap, mm_heap_stats_t *out);
void heap_fork_prepare(void); /* as the pools' (below), before them */
void heap_fork_parent(void);
void heap_fork_child(void);
/* visit(name, stats, arg) for every heap (statistics). */
void heap_foreach(void (*visit)(const char *name, const mm_heap_stats_t *s, void *arg), void *arg);
/* The heap whose object p is, or NULL: for free()'s message. */
const char *pool_block_heap_name(const extent_t *e);
/* The calling thread's local heap, where its pools and heaps take page
 * blocks (set by the api on the thread's first pool or heap call; NULL
 * until then). */
extern __thread local_heap_t *mm_pool_home;
MM_INLINE void pool_set_home(local_heap_t *h) { mm_pool_home = h; }
MM_INLINE bool pool_has_home(void) { return mm_pool_home != NULL; }

/* Thread exit: the thread's index goes back (its free lists stay in the
 * pools, for the next thread that gets the index). */
void pool_thread_exit(void);
/* fork: every pool lock taken (after the thread heaps', before the local
 * heaps'), then released, or reset in the child. */
void pool_fork_prepare(void);
void pool_fork_parent(void);
void pool_fork_child(void);
/* visit(pool, stats, arg) for every pool (statistics). */
void pool_foreach(void (*visit)(const struct mm_pool_s *pool, const mm_pool_stats_t *s, void *arg),
                  void *arg);
/* The pool's depot, blocks and counts (its lock taken here), and the
 * threads' lists: all of them (own == MM_POOL_THREADS: no thread may be in
 * a call on the pool, as at release and destroy), or only list own (the
 * caller's, in the middle of the pool's use: every other list changes
 * under the check, its thread's inline calls taking no lock). */
bool pool_is_valid(struct mm_pool_s *pool, unsigned own, char *why, size_t why_size);

MM_HIDDEN_END

#endif
