/* heap.c — first-class heaps (mm_heap_*): objects of any size that live
 * apart from every other heap's and from malloc's, freed one by one or all
 * at once by mm_heap_destroy.
 *
 * Layer: pool (pool.h).
 *
 * A heap is made of pools (pool.c): one per size class of the small
 * objects (the classes of size_class.c, so that a heap wastes what malloc
 * wastes), created on the class's first use and named after the heap, and
 * for blocks above the small-object limit whole page blocks lent by the
 * local heaps, each a POOL extent whose owner is the heap's `large` pool_t
 * (a pool with no objects and no lists: only its name and heap are read).
 * Every object of a heap thus lies in a page block whose owner names the
 * heap, which is how mm_heap_free checks a pointer, and mm_heap_destroy
 * gives back the heap's page blocks, not its objects: its cost follows the
 * pages it holds.
 *
 * Invariants (the heap's lock held): cls[c] is NULL or a pool of object
 * size mm_size_classes[c].size whose heap is this one; the large list holds
 * exactly the POOL extents whose owner is &large, nlarge of them, their
 * datablocks adding up to large_bytes.
 *
 * Locking: heaps_lock (MM_RANK_HEAP_LIST) over the list of heaps; a heap's
 * spin lock (MM_RANK_HEAP) over cls[] creation and the large list; below
 * them the pool locks and the local heaps.
 *
 * Contract: mm_heap_destroy runs while no other thread uses the heap; at
 * MM_DEBUG >= 1 a call still running on the heap when it is destroyed is
 * caught (one line, abort).
 */
#include <errno.h>
#include <string.h>

#include "pool_parts.h"

typedef struct heap_s {
  pool_t large;       /* owner of the large blocks (no objects, no lists) */
  mm_spin_t lock;
  _Atomic(pool_t *) cls[MM_CLASSES];
  extent_list_t large_blocks;
  uint64_t nlarge, large_bytes;
  _Atomic(uint32_t) xbusy; /* MM_DEBUG >= 1: calls in flight on the heap */
  uint32_t serial;
  struct heap_s *next, *prev; /* every heap (heaps_lock) */
} heap_t;

static mm_mutex_t heaps_lock = {MM_MUTEX_FREE,
                                {"heap list", MM_RANK_HEAP_LIST, 0, 0}};
static heap_t *heaps;
static uint32_t heaps_serial;

static inline heap_t *heap_of(struct mm_heap_s *pub) { return (heap_t *)(void *)pub; }

const char *heap_name(const struct heap_s *heap) { return heap->large.name; }

const char *pool_block_heap_name(const extent_t *e) {
  const pool_t *owner = (const pool_t *)pool_of_block(e);
  return owner && owner->heap ? heap_name(owner->heap) : NULL;
}

static MM_COLD MM_NORETURN void heap_fail(const char *call, const heap_t *h, const char *what,
                                          const void *p) {
  os_fatal("mmalloc: %s(): heap \"%s\": %s %p\n", call, heap_name(h), what, p);
}

static MM_COLD MM_NORETURN void null_heap(const char *call) {
  os_fatal("mmalloc: %s(): NULL heap\n", call);
}

/* MM_DEBUG >= 1: count the calls in flight, so that a destroy that races
 * one is caught. */
static inline void busy_enter(heap_t *h) {
  if (MM_DEBUG >= 1) atomic_fetch_add_relaxed(&h->xbusy, 1);
}
static inline void busy_leave(heap_t *h) {
  if (MM_DEBUG >= 1) atomic_fetch_sub_relaxed(&h->xbusy, 1);
}

/* ---- create and destroy --------------------------------------------------------------- */

struct mm_heap_s *heap_new(const char *name) {
  heap_t *h = pool_meta_alloc(sizeof(heap_t));
  if (!h) return NULL;
  const char *n = name ? name : "heap";
  size_t len = strnlen(n, sizeof(h->large.name) - 1);
  memcpy(h->large.name, n, len);
  h->large.name[len] = 0;
  h->large.heap = h;
  mutex_lock(&heaps_lock);
  h->serial = ++heaps_serial;
  spin_init(&h->lock, "heap", MM_RANK_HEAP, h->serial);
  spin_init(&h->large.lock, "heap's large blocks", MM_RANK_POOL, 0); /* never taken */
  h->next = heaps;
  if (heaps) heaps->prev = h;
  heaps = h;
  mutex_unlock(&heaps_lock);
  return (struct mm_heap_s *)(void *)h;
}

void heap_destroy(struct mm_heap_s *pub) {
  if (!pub) null_heap("mm_heap_destroy");
  heap_t *h = heap_of(pub);
  if (MM_DEBUG >= 1 && atomic_load_relaxed(&h->xbusy) != 0)
    heap_fail("mm_heap_destroy", h, "destroyed while another thread allocates or frees in it:",
              (void *)h);
  mutex_lock(&heaps_lock);
  if (h->prev) h->prev->next = h->next; else heaps = h->next;
  if (h->next) h->next->prev = h->prev;
  mutex_unlock(&heaps_lock);
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    pool_t *pl = atomic_load_relaxed(&h->cls[c]);
    if (pl) pool_destroy_by(&pl->pub, MM_GAVE_HEAP_DESTROY);
  }
  extent_t *e;
  while ((e = h->large_blocks.first) != NULL) {
    extent_list_remove(&h->large_blocks, e);
    pool_give_back(e, MM_GAVE_HEAP_DESTROY);
  }
  pool_meta_free(h);
}

/* ---- allocation ------------------------------------------------------------------------ */

/* The pool of class c, created on first use. */
static pool_t *class_pool(heap_t *h, unsigned c) {
  pool_t *pl = atomic_load_acquire(&h->cls[c]);
  if (likely(pl)) return pl;
  spin_lock(&h->lock);
  pl = atomic_load_relaxed(&h->cls[c]);
  if (!pl) {
    pl = pool_new(mm_size_classes[c].size, 16, heap_name(h), h);
    if (pl) atomic_store_release(&h->cls[c], pl);
  }
  spin_unlock(&h->lock);
  return pl; /* NULL: errno ENOMEM */
}

/* The pool's inline allocation, inside the library. */
static inline void *class_alloc(pool_t *pl) {
  mm_pool_cache_t *c = &pl->pub.cache[mm_pool_thread_];
  uintptr_t *o = c->free;
  if (likely(o != NULL)) {
    c->free = (void *)o[0];
    c->count--;
    o[1] = 0;
    return o;
  }
  return pool_alloc_any(pl);
}

static void *large_alloc(heap_t *h, size_t size) {
  if (size > MM_PAGE_BLOCK_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  size_t n = (size + MM_DATABLOCK_SIZE - 1) >> MM_DATABLOCK_SHIFT;
  extent_t *e = local_heap_take_page_block(pool_local_heap(), n, 1, 0, pool_claim_block, &h->large);
  if (!e) {
    errno = ENOMEM;
    return NULL;
  }
  spin_lock(&h->lock);
  extent_list_push_back(&h->large_blocks, e);
  h->nlarge++;
  h->large_bytes += extent_usable(e);
  spin_unlock(&h->lock);
  return (void *)e->node.start;
}

static void *alloc_class_or_large(heap_t *h, unsigned c, size_t size) {
  if (c < MM_CLASSES) {
    pool_t *pl = class_pool(h, c);
    return pl ? class_alloc(pl) : NULL;
  }
  return large_alloc(h, size);
}

void *heap_malloc(struct mm_heap_s *pub, size_t size) {
  if (!pub) null_heap("mm_heap_malloc");
  heap_t *h = heap_of(pub);
  busy_enter(h);
  unsigned c = size <= MM_DIRECT_MAX  ? mm_direct_class[(size + 15) >> 4]
               : size <= MM_SMALL_MAX ? size_class_of_medium(size)
                                      : MM_CLASSES;
  void *p = alloc_class_or_large(h, c, size);
  busy_leave(h);
  return p;
}

void *heap_calloc(struct mm_heap_s *pub, size_t count, size_t size) {
  if (!pub) null_heap("mm_heap_calloc");
  size_t total;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  void *p = heap_malloc(pub, total);
  if (p) memset(p, 0, total);
  return p;
}

void *heap_aligned(struct mm_heap_s *pub, size_t align, size_t size) {
  if (!pub) null_heap("mm_heap_aligned");
  if (!align || (align & (align - 1)) || align > MM_DATABLOCK_SIZE) {
    errno = EINVAL;
    return NULL;
  }
  if (align <= 16) return heap_malloc(pub, size);
  heap_t *h = heap_of(pub);
  busy_enter(h);
  /* a class whose size align divides: its objects are aligned (pool.h) */
  void *p = alloc_class_or_large(h, size_class_aligned(size ? size : 1, align), size);
  busy_leave(h);
  return p;
}

/* ---- free, size, realloc --------------------------------------------------------------- */

/* The owner of p, an object of h, checked; its block in *out; or abort. */
static pool_t *owner_of(heap_t *h, const void *p, const char *call, extent_t **out) {
  extent_t *e = pool_block_at(p);
  if (!e) heap_fail(call, h, "invalid pointer (not an object of a heap: from malloc?)", p);
  if (e->flags & MM_EXTENT_QUARANTINED)
    heap_fail(call, h, "invalid pointer (freed, or destroyed: its memory was given back)", p);
  pool_t *owner = (pool_t *)pool_of_block(e);
  if (!owner) heap_fail(call, h, "invalid pointer (in a page block)", p);
  if (owner->heap != h) {
    if (owner->heap)
      os_fatal("mmalloc: %s(): heap \"%s\": invalid pointer (an object of heap \"%s\") %p\n",
               call, heap_name(h), heap_name(owner->heap), p);
    os_fatal("mmalloc: %s(): heap \"%s\": invalid pointer (an object of pool \"%s\") %p\n", call,
             heap_name(h), owner->name, p);
  }
  if (owner == &h->large && (uintptr_t)p != e->node.start)
    heap_fail(call, h, "invalid pointer (inside a block)", p);
  *out = e;
  return owner;
}

void heap_free(struct mm_heap_s *pub, void *p) {
  if (!pub) os_fatal("mmalloc: mm_heap_free(): NULL heap (freeing %p)\n", p);
  if (!p) return;
  heap_t *h = heap_of(pub);
  /* The common case, from line 0 of the block's descriptor alone (as the
   * inline mm_pool_free): an object of one of this heap's size-class
   * pools, at a carved object boundary, not free, and room on the calling
   * thread's list.  Everything else (large blocks, errors, full lists, the
   * checked modes) below. */
  busy_enter(h);
  uintptr_t a = (uintptr_t)p;
  if (likely(slot_table_entry(a) == MM_SLOT_HEAP)) {
    extent_t *e = slot_extent_of(slot_of_address(a), a);
    uintptr_t w = atomic_load_relaxed(&e->xowner_tid);
    pool_t *pl = (pool_t *)(w & ~MM_OWNER_POOL);
    uint64_t off = a - e->page_start;
    if ((w & MM_OWNER_POOL) && e->pool_heap == (void *)h && pl != &h->large &&
        pool_offset_carved(e, off) && page_offset_at_block(e, off)) {
      uintptr_t *o = p;
      mm_pool_cache_t *c = &pl->pub.cache[mm_pool_thread_];
      if (likely(o[1] != (a ^ pl->pub.key) && c->count < c->limit)) {
        o[0] = (uintptr_t)c->free;
        o[1] = a ^ pl->pub.key;
        c->free = o;
        c->count++;
        busy_leave(h);
        return;
      }
    }
  }
  extent_t *e;
  pool_t *owner = owner_of(h, p, "mm_heap_free", &e);
  if (owner == &h->large) {
    spin_lock(&h->lock);
    extent_list_remove(&h->large_blocks, e);
    h->nlarge--;
    h->large_bytes -= extent_usable(e);
    spin_unlock(&h->lock);
    pool_give_back(e, MM_GAVE_HEAP_FREE);
  } else {
    pool_free_checked(owner, p, "mm_heap_free");
  }
  busy_leave(h);
}

size_t heap_usable_size(struct mm_heap_s *pub, const void *p) {
  if (!pub) null_heap("mm_heap_usable_size");
  if (!p) return 0;
  heap_t *h = heap_of(pub);
  extent_t *e;
  pool_t *owner = owner_of(h, p, "mm_heap_usable_size", &e);
  if (owner == &h->large) return extent_usable(e);
  pool_check_free(owner, p, "mm_heap_usable_size"); /* at a boundary, not free */
  return owner->size;
}

void *heap_realloc(struct mm_heap_s *pub, void *p, size_t size) {
  if (!pub) null_heap("mm_heap_realloc");
  if (!p) return heap_malloc(pub, size);
  if (size == 0) { /* as realloc(p, 0): p freed, NULL returned */
    heap_free(pub, p);
    return NULL;
  }
  heap_t *h = heap_of(pub);
  extent_t *e;
  pool_t *owner = owner_of(h, p, "mm_heap_realloc", &e);
  size_t old = owner == &h->large ? extent_usable(e) : owner->size;
  if (owner != &h->large) pool_check_free(owner, p, "mm_heap_realloc");
  /* it fits and would not fit a class half its size: keep it */
  if (size <= old && (size > old / 2 || old <= 16)) return p;
  void *q = heap_malloc(pub, size);
  if (!q) return NULL; /* p untouched */
  memcpy(q, p, size < old ? size : old);
  heap_free(pub, p);
  return q;
}

/* ---- statistics ----------------------------------------------------------------------- */

int heap_stats(struct mm_heap_s *pub, mm_heap_stats_t *out) {
  if (!pub || !out) return EINVAL;
  heap_t *h = heap_of(pub);
  memset(out, 0, sizeof(*out));
  for (unsigned c = 0; c < MM_CLASSES; c++) {
    pool_t *pl = atomic_load_acquire(&h->cls[c]);
    mm_pool_stats_t s;
    if (!pl || pool_stats(&pl->pub, &s)) continue;
    out->blocks += s.blocks;
    out->bytes += s.bytes;
    out->live_objects += s.objects - s.free_objects;
    out->live_bytes += (s.objects - s.free_objects) * s.object_size;
  }
  spin_lock(&h->lock);
  out->blocks += h->nlarge;
  out->bytes += h->large_bytes;
  out->live_objects += h->nlarge;
  out->live_bytes += h->large_bytes;
  spin_unlock(&h->lock);
  return 0;
}

void heap_foreach(void (*visit)(const char *, const mm_heap_stats_t *, void *), void *arg) {
  mutex_lock(&heaps_lock);
  for (heap_t *h = heaps; h; h = h->next) {
    mm_heap_stats_t s;
    heap_stats((struct mm_heap_s *)(void *)h, &s);
    visit(heap_name(h), &s, arg);
  }
  mutex_unlock(&heaps_lock);
}

/* ---- fork ----------------------------------------------------------------------------- */

void heap_fork_prepare(void) {
  mutex_lock_ordered(&heaps_lock);
  heap_t *last = heaps;
  while (last && last->next) last = last->next;
  for (heap_t *h = last; h; h = h->prev) spin_lock_ordered(&h->lock);
}

void heap_fork_parent(void) {
  for (heap_t *h = heaps; h; h = h->next) spin_unlock(&h->lock);
  mutex_unlock(&heaps_lock);
}

void heap_fork_child(void) {
  for (heap_t *h = heaps; h; h = h->next) spin_reset(&h->lock);
  mutex_reinit(&heaps_lock);
}
