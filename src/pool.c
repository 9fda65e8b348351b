/* pool.c — object pools and raw page blocks: their slow paths, their page
 * blocks, release and destroy, the threads' indices, fork, statistics and
 * the checker (where given-back blocks go: pool_quarantine.c).  The fast paths are inline in include/mmalloc.h
 * (mm_pool_alloc, mm_pool_free); pool.h says how a pool's page block is
 * laid out.
 *
 * Layer: pool (pool.h).
 *
 * A pool is one allocation of the page manager (a LARGE block, zeroed):
 *   pool_t (the public struct mm_pool_s first), then MM_POOL_THREADS cache
 *   lines, cache[i] the free list of the thread whose index is i.
 * Index 0 is the threads without one (none was free, or a checked mode):
 * its list stays empty and its limit 0, so both inline calls miss on it and
 * such a thread works on the depot, under the pool's lock.
 *
 * Invariants (the pool's lock held, and no thread in an inline call on it;
 * pool_is_valid checks them, and in the middle of the pool's use only the
 * caller's list of the threads' lists):
 *   every object on the depot (a batch or the loose list) or a thread's
 *   list lies in a block of this pool, at an object boundary below its
 *   block's xlimit, carries its canary (address ^ key), and is on one list
 *   once; no batch is empty;
 *   depot_count is the number of objects in the batches and the loose
 *   list, each batch's count and each cache's count its list's length;
 *   cache[0] is empty with limit 0; every other limit is the pool's limit,
 *   or 0 in a checked mode;
 *   the blocks are the POOL extents whose owner word names this pool;
 *   carved == the sum of their xlimit / size, bytes the sum of their
 *   usable sizes, each block's capacity its usable size / size (2 MiB
 *   blocks once the pool is big: take_block); only the last block on the
 *   list may have room left to carve.
 * Objects handed out are the ones on no list: carved - free.
 *
 * Locking: a pool's spin lock (rank MM_RANK_POOL) over its depot, blocks
 * and carving; the list of pools and the index bitmap under pools_lock
 * (MM_RANK_POOL_LIST, below it); a local heap's lock (above both) for a
 * block taken or given back.
 */
#include <errno.h>
#include <string.h>

#include "pool_parts.h"

#if MM_VALGRIND
#include <valgrind/memcheck.h>
#endif

/* The layout the inline calls of include/mmalloc.h assume. */
_Static_assert(sizeof(mm_pool_cache_t) == MM_CACHE_LINE, "a thread's list: one line");
_Static_assert(MM_POOL_SLOT_SHIFT_ == MM_SLOT_SHIFT, "inline pool free: slot size");
_Static_assert(MM_POOL_SLOTS_ == MM_SLOT_TABLE_SIZE, "inline pool free: slot table");
_Static_assert(MM_POOL_MAP_OFFSET_ == MM_SLOT_MAP_OFFSET, "inline pool free: extent map");
_Static_assert(MM_DATABLOCK_SHIFT == 12, "inline pool free: datablock size");
_Static_assert(offsetof(mm_pool_block_line_, owner) == offsetof(extent_t, xowner_tid),
               "inline pool free: owner word");
_Static_assert(offsetof(mm_pool_block_line_, start) == offsetof(extent_t, page_start),
               "inline pool free: start");
_Static_assert(offsetof(mm_pool_block_line_, limit) == offsetof(extent_t, xlimit),
               "inline pool free: limit");
_Static_assert(offsetof(mm_pool_block_line_, magic) == offsetof(extent_t, magic),
               "inline pool free: magic");
_Static_assert(sizeof(mm_xslot_table[0]) == 1, "inline pool free: one byte per slot");
_Static_assert(MM_POOL_THREADS <= 4096 && MM_POOL_THREADS % 64 == 0, "index bitmap");

MM_EXPORT __thread unsigned mm_pool_thread_;
__thread local_heap_t *mm_pool_home;

static mm_mutex_t pools_lock = {MM_MUTEX_FREE,
                                  {"pool list", MM_RANK_POOL_LIST, 0, 0}};
static pool_t *pools;
static uint32_t pools_serial;
static uint64_t index_used[MM_POOL_THREADS / 64] = {1}; /* index 0: never handed out */
static __thread bool index_none;                        /* none was free for this thread */

static inline pool_t *pool_of(struct mm_pool_s *pub) { return (pool_t *)pub; }

const char *pool_name(const struct mm_pool_s *pool) { return ((const pool_t *)pool)->name; }

static MM_COLD MM_NORETURN void pool_fail(const char *call, const pool_t *pl, const char *what,
                                          const void *p) {
  if (pl) os_fatal("mmalloc: %s(): %s \"%s\": %s %p\n", call, pl->heap ? "heap" : "pool", pl->name,
                   what, p);
  os_fatal("mmalloc: %s(): %s %p\n", call, what, p);
}

/* ---- threads' indices ------------------------------------------------------------- */

/* The calling thread's index, taken on its first pool call (0: none free). */
static unsigned thread_index(void) {
  unsigned i = mm_pool_thread_;
  if (likely(i) || index_none) return i;
  mutex_lock(&pools_lock);
  for (unsigned w = 0; w < MM_POOL_THREADS / 64 && !i; w++) {
    if (~index_used[w]) {
      unsigned b = (unsigned)__builtin_ctzll(~index_used[w]);
      index_used[w] |= (uint64_t)1 << b;
      i = w * 64 + b;
    }
  }
  mutex_unlock(&pools_lock);
  if (!i) index_none = true;
  mm_pool_thread_ = i;
  return i;
}

void pool_thread_exit(void) {
  unsigned i = mm_pool_thread_;
  index_none = false;
  mm_pool_home = NULL;
  if (!i) return;
  mm_pool_thread_ = 0;
  mutex_lock(&pools_lock);
  index_used[i / 64] &= ~((uint64_t)1 << (i % 64));
  mutex_unlock(&pools_lock);
}

/* ---- page blocks -------------------------------------------------------------------- */

/* Under the lock of the block's home heap (local_heap_take_page_block). */
void pool_claim_block(extent_t *e, void *arg) {
  pool_t *pl = arg;
  e->kind = MM_EXTENT_POOL;
  e->free = NULL;
  /* line 0 names the heap too, so that mm_heap_free reads only this line */
  e->pool_heap = pl ? (void *)pl->heap : NULL;
  e->used = 0;
  e->page_start = e->node.start;
  e->block_size = pl ? pl->size : 0;
  e->magic = pl ? pl->magic : 0;
  e->capacity = pl && pl->size ? (uint32_t)(extent_usable(e) / pl->size) : 0; /* 0: a heap's own */
  e->reserved = 0;
  e->flags &= MM_EXTENT_GUARD;
  e->next = e->prev = NULL;
  atomic_store_relaxed(&e->xlimit, 0);
  atomic_store_relaxed(&e->xowner, NULL);
  atomic_store_relaxed(&e->xowner_tid, (uintptr_t)pl | MM_OWNER_POOL);
  local_heap_lend_locked(local_heap_of_extent(e), e);
#if MM_VALGRIND
  /* A cached page block was a page, whose free blocks memcheck was told
   * are no-access: the whole block is the pool's (or the caller's) now.
   * Pool objects are not reported to memcheck one by one. */
  VALGRIND_MAKE_MEM_UNDEFINED((void *)e->node.start, extent_usable(e));
#endif
}

extent_t *pool_block_at(const void *p) {
  uintptr_t a = (uintptr_t)p;
  if (slot_table_entry(a) != MM_SLOT_HEAP) return NULL;
  extent_t *e = region_extent_at(slot_of_address(a), a);
  return e && e->kind == MM_EXTENT_POOL ? e : NULL;
}

void *page_block_alloc(size_t size) {
  if (size == 0 || size > MM_PAGE_BLOCK_MAX) {
    errno = EINVAL;
    return NULL;
  }
  size_t n = (size + MM_DATABLOCK_SIZE - 1) >> MM_DATABLOCK_SHIFT;
  extent_t *e = local_heap_take_page_block(pool_local_heap(), n, 1, 0, pool_claim_block, NULL);
  if (!e) {
    errno = ENOMEM;
    return NULL;
  }
  return (void *)e->node.start;
}

void page_block_free(void *p) {
  if (!p) return;
  extent_t *e = pool_block_at(p);
  if (e && (e->flags & MM_EXTENT_QUARANTINED))
    pool_fail("mm_page_block_free", NULL, "invalid pointer (already freed)", p);
  if (!e || atomic_load_relaxed(&e->xowner_tid) != MM_OWNER_POOL || (uintptr_t)p != e->node.start)
    pool_fail("mm_page_block_free", NULL,
              e ? "invalid pointer (inside a page block, or an object of a pool)"
                : "invalid pointer (not a page block, or already freed)",
              p);
  pool_give_back(e, MM_GAVE_PAGE_BLOCK_FREE);
}

static void fill_free(const pool_t *pl, uintptr_t *o);

/* ---- carving ------------------------------------------------------------------------- */

/* The pool's next page block: its size class's page block, or once the
 * pool holds MM_POOL_HUGE_AFTER (huge pages not off), a 2 MiB block at a
 * 2 MiB boundary advised as a transparent huge page.  The pool's lock
 * held. */
static extent_t *take_block(pool_t *pl) {
  bool huge = option_live(&options.hugepages) != 0 && pl->bytes >= MM_POOL_HUGE_AFTER;
  size_t n = huge ? MM_POOL_HUGE_BLOCK >> MM_DATABLOCK_SHIFT : pl->ndatablocks;
  extent_t *e =
      local_heap_take_page_block(pool_local_heap(), n, huge ? n : 1, 0, pool_claim_block, pl);
  if (e && huge) {
    e->flags |= MM_EXTENT_THP;
    os_hugepages((void *)e->node.start, MM_POOL_HUGE_BLOCK, true, false);
  }
  return e;
}

/* Up to want objects carved from the pool's last block (a new one when it
 * is full), linked into a chain whose head is returned, each with its
 * canary; *got says how many.  NULL (errno ENOMEM): no block to be had.
 * The pool's lock held. */
static void *carve(pool_t *pl, uint32_t want, uint32_t *got) {
  extent_t *e = pl->blocks.last;
  uint64_t limit = e ? atomic_load_relaxed(&e->xlimit) : 0;
  if (!e || limit == (uint64_t)e->capacity * pl->size) {
    e = take_block(pl);
    if (!e) {
      errno = ENOMEM;
      *got = 0;
      return NULL;
    }
    extent_list_push_back(&pl->blocks, e);
    pl->nblocks++;
    pl->bytes += extent_usable(e);
    limit = 0;
  }
  uint32_t left = e->capacity - (uint32_t)(limit / pl->size);
  uint32_t n = want < left ? want : left;
  uintptr_t first = e->page_start + limit, key = pl->pub.key;
  for (uint32_t k = 0; k < n; k++) {
    uintptr_t *o = (uintptr_t *)(first + (uintptr_t)k * pl->size);
    o[0] = k + 1 < n ? (uintptr_t)o + pl->size : 0;
    o[1] = (uintptr_t)o ^ key;
    fill_free(pl, o); /* secure mode: fresh objects carry the fill too */
  }
  atomic_store_relaxed(&e->xlimit, limit + (uint64_t)n * pl->size);
  pl->carved += n;
  *got = n;
  return (void *)first;
}

/* ---- the checked modes (secure: fill on free, check on reuse) ----------------------- */

static void fill_free(const pool_t *pl, uintptr_t *o) {
  if (!options.secure) return;
  block_fill_range(o + 2, pl->size - 16); /* sizes: multiples of 8, 16 at least */
}

/* Secure mode: the object about to be handed out is a free object of pl
 * that nothing wrote into since it was freed (the link was followed only
 * into an object of pl: a forged link is caught here, never returned). */
static void check_unwritten(const pool_t *pl, const uintptr_t *o) {
  if (!options.secure) return;
  const char *call = pl->heap ? "mm_heap_malloc" : "mm_pool_alloc";
  extent_t *e = pool_block_at(o);
  uint64_t off = e ? (uintptr_t)o - e->page_start : 0;
  if (!e || pool_of_block(e) != &pl->pub || !page_offset_at_block(e, off) ||
      !pool_offset_carved(e, off))
    pool_fail(call, pl, "free list overwritten (a freed object's link written after the free):", o);
  if (o[1] != ((uintptr_t)o ^ pl->pub.key))
    os_fatal("mmalloc: %s(): %s \"%s\": object %p was written after it was freed (byte 8 "
             "changed)\n", call, pl->heap ? "heap" : "pool", pl->name, (const void *)o);
  size_t at = block_fill_changed(o + 2, pl->size - 16);
  if (at < pl->size - 16)
    os_fatal("mmalloc: %s(): %s \"%s\": object %p was written after it was freed (byte %zu "
             "changed)\n", call, pl->heap ? "heap" : "pool", pl->name, (const void *)o, 16 + at);
}

/* ---- the depot (the pool's lock held) ---------------------------------------------- */

/* Room for more batches: the slots doubled (a page block's worth first). */
static bool depot_grow(pool_t *pl) {
  size_t cap = pl->batch_cap ? 2 * (size_t)pl->batch_cap : MM_DATABLOCK_SIZE / sizeof(*pl->batch);
  if (cap > UINT32_MAX) return false;
  struct pool_batch_s *b = pool_meta_alloc(cap * sizeof(*b));
  if (!b) return false;
  if (pl->batch) {
    memcpy(b, pl->batch, pl->nbatches * sizeof(*b));
    pool_meta_free(pl->batch);
  }
  pl->batch = b;
  pl->batch_cap = (uint32_t)cap;
  return true;
}

/* A list of n objects into the depot: a batch, or the loose list when no
 * batch slot can be had (out of memory: then a walk to its tail). */
static void depot_put(pool_t *pl, void *head, uint64_t n) {
  mm_assert_internal(spin_held(&pl->lock) && head && n);
  if (pl->nbatches < pl->batch_cap || depot_grow(pl)) {
    pl->batch[pl->nbatches].head = head;
    pl->batch[pl->nbatches].count = n;
    pl->nbatches++;
  } else {
    uintptr_t *tail = head;
    while (tail[0]) tail = (uintptr_t *)tail[0];
    tail[0] = (uintptr_t)pl->loose;
    pl->loose = head;
  }
  pl->depot_count += n;
}

/* A list of objects from the depot for a thread whose list is empty: a
 * whole batch, or up to want loose ones; *got how many (0: none). */
static void *depot_take(pool_t *pl, uint64_t want, uint64_t *got) {
  mm_assert_internal(spin_held(&pl->lock));
  uintptr_t *chain = NULL;
  *got = 0;
  if (pl->loose) {
    chain = pl->loose;
    uintptr_t *tail = chain;
    for (*got = 1; *got < want && tail[0]; ++*got) tail = (uintptr_t *)tail[0];
    pl->loose = (void *)tail[0];
    tail[0] = 0;
  } else if (pl->nbatches) {
    if (want >= pl->batch[pl->nbatches - 1].count) {
      pl->nbatches--;
      chain = pl->batch[pl->nbatches].head;
      *got = pl->batch[pl->nbatches].count;
      if (options.secure && *got == 1 && chain[0]) /* as below */
        os_fatal("mmalloc: %s(): %s \"%s\": object %p was written after it was freed (byte "
                 "0 changed)\n", pl->heap ? "mm_heap_malloc" : "mm_pool_alloc",
                 pl->heap ? "heap" : "pool", pl->name, (void *)chain);
    } else { /* one object (a thread without a list) */
      struct pool_batch_s *b = &pl->batch[pl->nbatches - 1];
      chain = b->head;
      b->head = (void *)chain[0];
      if (--b->count == 0) {
        /* the batch's last object: its link was NULL (secure mode: a
         * write into it is caught here; a link is followed only into an
         * object checked before it is handed out) */
        if (options.secure && b->head)
          os_fatal("mmalloc: %s(): %s \"%s\": object %p was written after it was freed (byte "
                   "0 changed)\n", pl->heap ? "mm_heap_malloc" : "mm_pool_alloc",
                   pl->heap ? "heap" : "pool", pl->name, (void *)chain);
        pl->nbatches--;
      }
      chain[0] = 0;
      *got = 1;
    }
  }
  pl->depot_count -= *got;
  return chain;
}

/* ---- create, release, destroy ------------------------------------------------------------ */

void *pool_meta_alloc(size_t size) {
  void *p = local_heap_alloc_large(pool_local_heap(), size, MM_CACHE_LINE, true);
  if (!p) errno = ENOMEM;
  return p;
}

void pool_meta_free(void *p) {
  uintptr_t a = (uintptr_t)p;
  local_heap_free_large(region_extent_at(slot_of_address(a), a), false);
}

pool_t *pool_new(size_t size, size_t align, const char *name, struct heap_s *heap) {
  size = size < 16 ? 16 : size;
  align = align > 8 ? align : 8;
  size = (size + align - 1) & ~(align - 1); /* still <= MM_SMALL_MAX: align divides it */
  pool_t *pl = pool_meta_alloc(POOL_BYTES);
  if (!pl) return NULL;
  const size_class_t *sc = &mm_size_classes[size_class_of_slow(size)];
  pl->size = (uint32_t)size;
  pl->ndatablocks = sc->ndatablocks;
  pl->capacity = (uint32_t)(((size_t)sc->ndatablocks << MM_DATABLOCK_SHIFT) / size);
  pl->magic = UINT64_MAX / size + 1;
  pl->limit = pl->capacity < 16 ? 16 : (pl->capacity > 4096 ? 4096 : pl->capacity);
  pl->heap = heap;
  pl->pub.key = mm_canary_key;
  pl->pub.cache = (mm_pool_cache_t *)((char *)pl + CACHE_OFFSET);
  pl->pub.slot_kinds = (const unsigned char *)mm_xslot_table;
  for (unsigned i = 1; i < MM_POOL_THREADS; i++) pl->pub.cache[i].limit = mm_slow_only ? 0 : pl->limit;
  size_t len = strnlen(name, sizeof(pl->name) - 1);
  memcpy(pl->name, name, len);
  pl->name[len] = 0;
  mutex_lock(&pools_lock);
  pl->serial = ++pools_serial;
  spin_init(&pl->lock, "pool", MM_RANK_POOL, pl->serial);
  pl->next = pools;
  if (pools) pools->prev = pl;
  pools = pl;
  mutex_unlock(&pools_lock);
  return pl;
}

struct mm_pool_s *pool_create(const mm_pool_options_t *o) {
  if (!o || o->object_size == 0 || o->object_size > MM_SMALL_MAX ||
      (o->alignment & (o->alignment - 1)) || o->alignment > MM_DATABLOCK_SIZE) {
    errno = EINVAL;
    return NULL;
  }
  pool_t *pl = pool_new(o->object_size, o->alignment, o->name ? o->name : "pool", NULL);
  if (!pl) return NULL;
  /* the reserve: carved now, onto the depot */
  for (size_t want = o->reserve; want > 0;) {
    spin_lock(&pl->lock);
    uint32_t got;
    void *chain = carve(pl, want > pl->capacity ? pl->capacity : (uint32_t)want, &got);
    if (chain) depot_put(pl, chain, got);
    spin_unlock(&pl->lock);
    if (!chain) {
      pool_destroy(&pl->pub);
      errno = ENOMEM;
      return NULL;
    }
    want -= got;
  }
  return &pl->pub;
}

/* Every object of the pool dropped; its blocks moved to *blocks, for the
 * caller to give back once the lock is released.  The pool's lock held. */
static void drop_all(pool_t *pl, extent_list_t *blocks) {
  for (unsigned i = 0; i < MM_POOL_THREADS; i++) {
    pl->pub.cache[i].free = NULL;
    pl->pub.cache[i].count = 0;
  }
  pl->nbatches = 0;
  pl->loose = NULL;
  pl->depot_count = 0;
  extent_t *e;
  while ((e = pl->blocks.first) != NULL) {
    extent_list_remove(&pl->blocks, e);
    extent_list_push_back(blocks, e);
  }
  pl->nblocks = 0;
  pl->bytes = 0;
  pl->carved = 0;
}

static void null_pool(const char *call) { os_fatal("mmalloc: %s(): NULL pool\n", call); }

static void give_back_all(extent_list_t *blocks, unsigned by) {
  extent_t *e;
  while ((e = blocks->first) != NULL) {
    extent_list_remove(blocks, e);
    pool_give_back(e, by);
  }
}

void pool_release(struct mm_pool_s *pub) {
  if (!pub) null_pool("mm_pool_release");
  pool_t *pl = pool_of(pub);
  MM_CHECK(1, "pool", pool_is_valid(pub, MM_POOL_THREADS, MM_WHY));
  extent_list_t blocks = {NULL, NULL};
  spin_lock(&pl->lock);
  drop_all(pl, &blocks);
  spin_unlock(&pl->lock);
  give_back_all(&blocks, MM_GAVE_POOL_RELEASE);
}

void pool_destroy(struct mm_pool_s *pub) { pool_destroy_by(pub, MM_GAVE_POOL_DESTROY); }

void pool_destroy_by(struct mm_pool_s *pub, unsigned by) {
  if (!pub) null_pool("mm_pool_destroy");
  pool_t *pl = pool_of(pub);
  MM_CHECK(1, "pool", pool_is_valid(pub, MM_POOL_THREADS, MM_WHY));
  mutex_lock(&pools_lock);
  if (pl->prev) pl->prev->next = pl->next; else pools = pl->next;
  if (pl->next) pl->next->prev = pl->prev;
  mutex_unlock(&pools_lock);
  extent_list_t blocks = {NULL, NULL};
  spin_lock(&pl->lock);
  drop_all(pl, &blocks);
  spin_unlock(&pl->lock);
  give_back_all(&blocks, by);
  pl->pub.key = 0;
  pl->pub.cache = NULL; /* a late inline call faults at once, not later */
  if (pl->batch) pool_meta_free(pl->batch);
  pool_meta_free(pl);
}

/* ---- the slow paths -------------------------------------------------------------------- */

/* An object for a thread whose list is empty (or that has none): from the
 * depot (a whole batch), else carved (half a limit); the rest of what
 * came becomes the thread's list. */
void *pool_alloc_slow(struct mm_pool_s *pub) {
  if (!pub) null_pool("mm_pool_alloc");
  return pool_alloc_any(pool_of(pub));
}

void *pool_alloc_any(pool_t *pl) {
  struct mm_pool_s *pub = &pl->pub;
  uint64_t slow = atomic_fetch_add_relaxed(&pl->xslow, 1);
  unsigned i = mm_slow_only ? 0 : thread_index();
  if (unlikely(slow % 256 == 255)) MM_CHECK(3, "pool", pool_is_valid(pub, i, MM_WHY));
  mm_pool_cache_t *c = &pub->cache[i];
  if (c->free) { /* an index taken just now, with the list an exited thread left */
    uintptr_t *o = c->free;
    c->free = (void *)o[0];
    c->count--;
    check_unwritten(pl, o);
    o[1] = 0;
    return o;
  }
  uint32_t want = i ? pl->limit : 1;
  spin_lock(&pl->lock);
  uint64_t got = 0;
  uintptr_t *chain = depot_take(pl, want, &got);
  if (!chain) {
    uint32_t carved;
    chain = carve(pl, i ? pl->limit / 2 : 1, &carved);
    got = carved;
  }
  spin_unlock(&pl->lock);
  if (!chain) return NULL; /* errno ENOMEM: carve */
  if (got > 1) { /* the rest onto the thread's list (empty, or we would not be here) */
    c->free = (void *)chain[0];
    c->count = got - 1;
  }
  check_unwritten(pl, chain);
  chain[1] = 0;
  return chain;
}

void pool_check_free(const pool_t *pl, const void *p, const char *call) {
  extent_t *e = pool_block_at(p);
  if (!e) {
    uintptr_t a = (uintptr_t)p;
    pool_fail(call, pl,
              slot_table_entry(a) == MM_SLOT_NONE
                  ? "invalid pointer (not from a pool, or already released)"
                  : "invalid pointer (not an object of a pool: from malloc?)",
              p);
  }
  if (e->flags & MM_EXTENT_QUARANTINED)
    pool_fail(call, pl, "invalid pointer (released, or freed: its memory was given back)", p);
  struct mm_pool_s *owner = pool_of_block(e);
  if (owner != &pl->pub) {
    if (!owner) pool_fail(call, pl, "invalid pointer (inside a page block)", p);
    const pool_t *o = (const pool_t *)owner;
    if (o->heap)
      os_fatal("mmalloc: %s(): pool \"%s\": invalid pointer (an object of heap \"%s\") %p\n",
               call, pl->name, heap_name(o->heap), p);
    os_fatal("mmalloc: %s(): pool \"%s\": invalid pointer (an object of pool \"%s\") %p\n",
             call, pl->name, o->name, p);
  }
  uint64_t off = (uintptr_t)p - e->page_start;
  if (!page_offset_at_block(e, off)) pool_fail(call, pl, "invalid pointer (inside an object)", p);
  if (!pool_offset_carved(e, off)) pool_fail(call, pl, "invalid pointer (never allocated)", p);
  if (((const uintptr_t *)p)[1] == ((uintptr_t)p ^ pl->pub.key))
    pool_fail(call, pl, "double free of", p);
}

/* A free the inline call did not finish: a NULL pool or pointer, a
 * pointer that failed a check, a thread without a list, a full list. */
void pool_free_slow(struct mm_pool_s *pub, void *p) {
  if (!pub) os_fatal("mmalloc: mm_pool_free(): NULL pool (freeing %p)\n", p);
  if (!p) return;
  pool_t *pl = pool_of(pub);
  atomic_fetch_add_relaxed(&pl->xslow, 1);
  pool_free_checked(pl, p, "mm_pool_free");
}

void pool_free_checked(pool_t *pl, void *p, const char *call) {
  struct mm_pool_s *pub = &pl->pub;
  pool_check_free(pl, p, call);
  uintptr_t *o = p;
  unsigned i = mm_slow_only ? 0 : thread_index();
  mm_pool_cache_t *c = &pub->cache[i];
  fill_free(pl, o);
  o[1] = (uintptr_t)p ^ pub->key;
  if (i && c->count < c->limit) { /* the inline call had no list yet, or a heap's slow free */
    o[0] = (uintptr_t)c->free;
    c->free = o;
    c->count++;
    return;
  }
  /* The list is full: it goes to the depot whole, as a batch, and o starts
   * a new one (for a thread without a list, o alone goes). */
  o[0] = 0;
  if (i) {
    void *head = c->free;
    uint64_t n = c->count;
    c->free = o;
    c->count = 1;
    if (!n) return; /* limit 0: only in a checked mode, where i is 0 */
    spin_lock(&pl->lock);
    depot_put(pl, head, n);
    spin_unlock(&pl->lock);
    return;
  }
  spin_lock(&pl->lock);
  depot_put(pl, o, 1);
  spin_unlock(&pl->lock);
}

/* ---- statistics and the checker ----------------------------------------------------------- */

int pool_stats(const struct mm_pool_s *pub, mm_pool_stats_t *out) {
  if (!pub || !out) return EINVAL;
  pool_t *pl = (pool_t *)pub;
  spin_lock(&pl->lock);
  uint64_t free_objects = pl->depot_count;
  for (unsigned i = 0; i < MM_POOL_THREADS; i++)
    free_objects += __atomic_load_n(&pub->cache[i].count, __ATOMIC_RELAXED);
  out->object_size = pl->size;
  out->blocks = pl->nblocks;
  out->bytes = pl->bytes;
  out->objects = pl->carved;
  out->free_objects = free_objects;
  out->slow_calls = atomic_load_relaxed(&pl->xslow);
  spin_unlock(&pl->lock);
  return 0;
}

void pool_foreach(void (*visit)(const struct mm_pool_s *, const mm_pool_stats_t *, void *),
                  void *arg) {
  mutex_lock(&pools_lock);
  for (pool_t *pl = pools; pl; pl = pl->next) {
    if (pl->heap) continue; /* a heap's: counted with its heap */
    mm_pool_stats_t s;
    pool_stats(&pl->pub, &s);
    visit(&pl->pub, &s, arg);
  }
  mutex_unlock(&pools_lock);
}

static bool chain_is_valid(pool_t *pl, const uintptr_t *head, uint64_t want, const char *what,
                           unsigned i, char *why, size_t why_size) {
  uint64_t n = 0;
  for (const uintptr_t *o = head; o; o = (const uintptr_t *)o[0]) {
    extent_t *e = pool_block_at(o);
    uint64_t off = e ? (uintptr_t)o - e->page_start : 0;
    if (!e || pool_of_block(e) != &pl->pub || !page_offset_at_block(e, off) ||
        !pool_offset_carved(e, off) || o[1] != ((uintptr_t)o ^ pl->pub.key)) {
      os_format(why, why_size, "pool \"%s\": %s %u holds %p, not a free object of the pool",
                pl->name, what, i, (const void *)o);
      return false;
    }
    if (++n > pl->carved) {
      os_format(why, why_size, "pool \"%s\": %s %u has a cycle", pl->name, what, i);
      return false;
    }
  }
  if (n != want) {
    os_format(why, why_size, "pool \"%s\": %s %u holds %lu objects, its count says %lu",
              pl->name, what, i, (unsigned long)n, (unsigned long)want);
    return false;
  }
  return true;
}

bool pool_is_valid(struct mm_pool_s *pub, unsigned own, char *why, size_t why_size) {
  pool_t *pl = pool_of(pub);
  spin_lock(&pl->lock);
  uint64_t in_batches = 0;
  bool ok = true;
  for (uint32_t b = 0; ok && b < pl->nbatches; b++) {
    in_batches += pl->batch[b].count;
    ok = pl->batch[b].count > 0 &&
         chain_is_valid(pl, pl->batch[b].head, pl->batch[b].count, "depot batch", b, why, why_size);
  }
  if (ok) {
    uint64_t loose = 0;
    for (const uintptr_t *o = pl->loose; o && loose <= pl->depot_count; o = (const uintptr_t *)o[0])
      loose++;
    if (in_batches + loose != pl->depot_count) {
      os_format(why, why_size, "pool \"%s\": depot holds %lu objects, its count says %lu",
                pl->name, (unsigned long)(in_batches + loose), (unsigned long)pl->depot_count);
      ok = false;
    } else {
      ok = chain_is_valid(pl, pl->loose, loose, "depot's loose list", 0, why, why_size);
    }
  }
  mm_pool_cache_t *c0 = &pub->cache[0];
  if (ok && (c0->free || c0->count || c0->limit)) {
    os_format(why, why_size, "pool \"%s\": list 0 is not empty", pl->name);
    ok = false;
  }
  for (unsigned i = 1; ok && i < MM_POOL_THREADS; i++)
    if (own == MM_POOL_THREADS || i == own)
      ok = chain_is_valid(pl, pub->cache[i].free, pub->cache[i].count, "list", i, why, why_size);
  uint64_t carved = 0, n = 0, bytes = 0;
  for (extent_t *e = pl->blocks.first; ok && e; e = e->next, n++) {
    uint64_t limit = atomic_load_relaxed(&e->xlimit);
    if (e->kind != MM_EXTENT_POOL || pool_of_block(e) != pub || limit % pl->size ||
        e->capacity != extent_usable(e) / pl->size ||
        limit > (uint64_t)e->capacity * pl->size ||
        (e->next && limit != (uint64_t)e->capacity * pl->size)) {
      os_format(why, why_size, "pool \"%s\": block %p is not one of its full blocks", pl->name,
                (void *)e->node.start);
      ok = false;
    }
    carved += limit / pl->size;
    bytes += extent_usable(e);
  }
  if (ok && (carved != pl->carved || n != pl->nblocks || bytes != pl->bytes)) {
    os_format(why, why_size, "pool \"%s\": %lu objects in %lu blocks, counted %lu in %lu",
              pl->name, (unsigned long)carved, (unsigned long)n, (unsigned long)pl->carved,
              (unsigned long)pl->nblocks);
    ok = false;
  }
  spin_unlock(&pl->lock);
  return ok;
}

/* ---- fork ----------------------------------------------------------------------------------- */

void pool_fork_prepare(void) {
  mutex_lock_ordered(&pools_lock);
  pool_quarantine_fork_prepare();
  /* newest first on the list: take them in serial order, oldest first */
  pool_t *last = pools;
  while (last && last->next) last = last->next;
  for (pool_t *pl = last; pl; pl = pl->prev) spin_lock_ordered(&pl->lock);
}

void pool_fork_parent(void) {
  for (pool_t *pl = pools; pl; pl = pl->next) spin_unlock(&pl->lock);
  pool_quarantine_fork_parent();
  mutex_unlock(&pools_lock);
}

/* The child: one thread, whose index is the only one in use. */
void pool_fork_child(void) {
  for (pool_t *pl = pools; pl; pl = pl->next) spin_reset(&pl->lock);
  mutex_reinit(&pools_lock);
  pool_quarantine_fork_child();
  memset(index_used, 0, sizeof(index_used));
  index_used[0] = 1;
  unsigned i = mm_pool_thread_;
  if (i) index_used[i / 64] |= (uint64_t)1 << (i % 64);
}
