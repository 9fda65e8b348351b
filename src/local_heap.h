/* local_heap.h — the C local heaps: what the layers above may ask of them.
 *
 * Layer: local heap (above region; below the page and thread heap layers).
 * The layer's files:
 *   local_heap.c        the heaps themselves: start-up, locks, metadata
 *                       memory, fork
 *   extent.c            free extents: the trees, insert and coalesce, carve,
 *                       commit, slots, address-space pressure
 *   page_market.c       page blocks for thread heaps: the page cache,
 *                       borrowing from other heaps, abandoned pages
 *   large.c             large blocks (extents of the tree) and huge blocks
 *                       (own mappings) with their cache
 *   decay.c             dirty accounting and purging
 *   local_heap_check.c  the checker
 * local_heap_parts.h declares what they share; nothing above includes it.
 *
 * There is no global heap.  A local heap owns slots of address space; every
 * extent of its slots is FREE (in its tree), a PAGE (lent to a thread heap,
 * or abandoned here when that thread exited or went idle), LARGE (a user
 * block), or CACHED (a free page block kept for quick reuse).  Memory freed
 * into a local heap stays in that heap's slots: a block always goes home,
 * to the heap whose slot holds it, whichever thread frees it.
 *
 * This layer never writes a page's owner or its free lists (its checker and
 * assertions only read the owner): the page and thread heap layers do that,
 * holding this layer's lock where the rule says so (local_heap_lock, and
 * the _locked calls below).
 */
#ifndef MM_LOCAL_HEAP_H
#define MM_LOCAL_HEAP_H

#include "lock.h"
#include "options.h"
#include "region.h"

MM_HIDDEN_BEGIN

/* A local heap.  Everything is guarded by `lock` except the x fields.
 *
 * Invariants (under lock; local_heap_check.c checks them all):
 *   trees[MM_TREE_MEDIUM] holds every FREE extent of the heap's medium
 *   slots, trees[MM_TREE_MAIN] every FREE extent of its other slots, each
 *   coalesced: no two free extents touch; medium slots hold no page;
 *   dirty_datablocks == sum of dirty over FREE and CACHED
 *   extents (an upper bound on their resident datablocks: a freed extent
 *   counts whole, a merge adds, a carve gives each part at most its size);
 *   purge schedule: if anything waits for the purge (dirty_datablocks > 0,
 *   a cached page block, or a cached huge mapping) then xpurge_at != 0, and
 *   its deadline is at most one purge delay after the newest of them was
 *   freed; xpurge_at may stay set after all of it went (a purge then finds
 *   nothing and clears it);
 *   every extent of the heap's slots is on exactly one of: its slot's tree (FREE),
 *   cache (CACHED, in a slot of the main tree), medium_cache (CACHED, in a
 *   medium slot, at most MM_MEDIUM_CACHE_MAX), abandoned[its class] (a PAGE without owner), a thread
 *   heap's lists (a PAGE with an owner), or none (LARGE, LOST); huge_cache holds
 *   CACHED huge mappings, each on no other list;
 *   abandoned[c] holds the pages with a block to hand out (adoptable) first,
 *   then the full ones, which wait there for a free (whose thread adopts
 *   the page) instead of going to every new thread's full list and back;
 *   bit c of xabandoned_classes == (abandoned[c]'s first page is
 *   adoptable); xcached ==
 *   cache_count; xhuge_cached == huge_cache_count;
 *   huge_cached_datablocks == the committed datablocks of the huge cache's
 *   mappings; huge_room_datablocks == the committed datablocks behind the
 *   heap's live huge blocks (room a reused mapping kept for growth);
 *   xheld_mib == (dirty_datablocks + huge_cached_datablocks) in whole MiB:
 *   the free memory the heap holds that may be resident, which the purge
 *   thread's start watches (purger.c). */
enum { MM_TREE_MAIN = 0, MM_TREE_MEDIUM = 1, MM_TREES = 2 };

typedef struct local_heap_s {
  mm_mutex_t lock;
  uint32_t index;
  uint32_t nslots;
  itree_t trees[MM_TREES]; /* free extents: of the slots for pages and
                              other blocks, and of the medium slots */
  slot_t *slots;
  extent_list_t cache;                  /* CACHED page blocks, newest first */
  extent_list_t medium_cache;           /* CACHED medium large blocks, newest first */
  uint32_t medium_cache_count;
  uint32_t cache_count;
  extent_list_t huge_cache;             /* freed huge mappings (CACHED), newest first */
  uint32_t huge_cache_count;
  extent_list_t abandoned[MM_CLASSES];  /* pages without owner, by class */
  /* Counts mirrored for lock-free peeks (written under lock, read by any
   * thread, relaxed: a stale value only delays the work to the next look). */
  _Atomic(uint64_t) xabandoned_classes; /* bit c: abandoned[c] has an adoptable page */
  _Atomic(uint32_t) xhuge_cached;       /* huge_cache_count */
  _Atomic(uint32_t) xcached;            /* cache_count */
  _Atomic(uint64_t) xpages_taken_over;  /* stats: full pages taken from idle threads */
  size_t dirty_datablocks;
  size_t huge_cached_datablocks;
  size_t huge_room_datablocks; /* stats, under lock */
  _Atomic(uint64_t) xheld_mib; /* written under lock, read by any thread (purger.c) */
  _Atomic(uint64_t) xpurge_at; /* 0, or (1 << 32) | deadline in ms */
  char *meta_next;             /* metadata memory: a bump allocator */
  size_t meta_left;
  size_t meta_bytes;           /* stats: its chunks, all committed */
  /* statistics (under lock) */
  uint64_t large_allocs, large_frees, large_live_bytes;
  uint32_t colour; /* the last large block's colour (config.h: MM_COLOURS) */
  uint64_t realloc_in_place, realloc_remapped;
  uint64_t purged_bytes, purges;
  uint64_t returned_bytes;  /* dirty bytes given back to the OS (purged or unmapped) */
  uint64_t pressure_purges; /* purges forced by the cgroup's memory limit */
  uint64_t growth_purges;   /* free extents given back early for big blocks' fresh memory */
  uint64_t pages_out, pages_back;
  uint64_t lent_blocks, lent_bytes; /* page blocks out as POOL extents (pool.h) */
  uint64_t huge_allocs, huge_live_bytes;
  /* what decides scaling (statistics; docs/statistics.md): the lock taken,
   * and how often it was held by another thread (under lock); failed
   * try-locks; remote batches this heap's threads handed over and the CAS
   * retries that took (relaxed: the threads bound to this heap); pages
   * abandoned here and adopted from here (under lock) */
  uint64_t lock_acquisitions, lock_waits;
  _Atomic(uint64_t) xlock_try_failures;
  _Atomic(uint64_t) xremote_batches, xremote_retries;
  uint64_t pages_abandoned, pages_adopted;
} __attribute__((aligned(MM_CACHE_LINE))) local_heap_t;

extern local_heap_t mm_heaps[MM_MAX_HEAPS];
extern uint32_t mm_nheaps;

/* ---- local_heap.c ---------------------------------------------------------------- */

void local_heap_init_all(uint32_t n);
MM_INLINE local_heap_t *local_heap_of_extent(const extent_t *e) {
  return &mm_heaps[slot_of_extent(e)->heap];
}
/* The datablocks of a LARGE extent for a block of size bytes: one more
 * for a size of MM_COLOUR_PAD_MIN or more where their slack past it would
 * leave fewer than MM_COLOUR_MIN_SLACK bytes of colours (config.h).  A
 * size's datablocks, which the stash and the medium cache match requests
 * by, do not depend on its colour (its guard, in secure mode, comes on
 * top: guarded_datablocks). */
MM_INLINE size_t large_datablocks(size_t size) {
  size_t n = (size + MM_DATABLOCK_SIZE - 1) >> MM_DATABLOCK_SHIFT;
  if (options.cache_colour && size >= MM_COLOUR_PAD_MIN &&
      (n << MM_DATABLOCK_SHIFT) - size < MM_COLOUR_MIN_SLACK)
    n++;
  return n;
}
/* The highest colour a block of size bytes may take in an extent whose
 * usable bytes are `usable`, for an alignment of `align` (0: none): its
 * slack, in MM_COLOUR_STEP steps, up to MM_COLOUR_ROOM; 0 without colours,
 * and for an alignment above a colour step (the block then starts on its
 * datablock). */
MM_INLINE size_t large_colour_room(size_t usable, size_t size, size_t align) {
  if (!options.cache_colour || align > MM_COLOUR_STEP) return 0;
  size_t room = usable - size;
  return room < MM_COLOUR_ROOM ? room & ~(size_t)(MM_COLOUR_STEP - 1) : MM_COLOUR_ROOM;
}
MM_INLINE void local_heap_lock(local_heap_t *h) {
  if (unlikely(mutex_lock_waited(&h->lock))) h->lock_waits++;
  h->lock_acquisitions++;
}
/* The lock for an observer (statistics, the census): not counted, so that
 * reading the statistics does not change them. */
MM_INLINE void local_heap_lock_uncounted(local_heap_t *h) { mutex_lock(&h->lock); }
MM_INLINE bool local_heap_trylock(local_heap_t *h) {
  if (!mutex_trylock(&h->lock)) {
    atomic_fetch_add_relaxed(&h->xlock_try_failures, 1);
    return false;
  }
  h->lock_acquisitions++;
  return true;
}
MM_INLINE void local_heap_unlock(local_heap_t *h) { mutex_unlock(&h->lock); }
/* For assertions (true when the lock witness is off). */
MM_INLINE bool local_heap_locked(const local_heap_t *h) { return mutex_held(&h->lock); }
/* size bytes of zeroed metadata memory that is never freed (thread heap
 * structures); NULL with errno ENOMEM.  Takes the lock. */
void *local_heap_meta_alloc(local_heap_t *h, size_t size);
/* visit(page, arg) for every PAGE extent of h's slots; h's lock held. */
void local_heap_foreach_page_locked(local_heap_t *h, void (*visit)(extent_t *page, void *arg),
                                    void *arg);
void local_heap_fork_prepare(void); /* after every lock of a lower rank */
void local_heap_fork_parent(void);
void local_heap_fork_child(void);

/* ---- page_market.c: page blocks --------------------------------------------------
 * A page block is an extent a thread heap turns into a page.  It leaves
 * here as kind PAGE, mapped on every datablock, with its guard (secure
 * mode), and `claim` (the thread heap's: it initialises the page and names
 * its owner, page.h) has run on it under the lock of the heap whose slot
 * holds it, so that no other thread ever sees a PAGE without an owner that
 * is not on an abandoned list.  It comes back here empty (cached) or with
 * blocks still in use (abandoned), the owner cleared by the caller under
 * this heap's lock. */
typedef void page_claim_fn(extent_t *page, void *arg);
/* align: the block starts at a multiple of this many datablocks (a power
 * of two; 1 for any).  keep_bytes: when the block may hold resident memory
 * (a recycled one), only its first keep_bytes stay resident, the rest goes
 * back to the OS (counted as purged and returned); 0 keeps it all. */
extent_t *local_heap_take_page_block(local_heap_t *h, size_t ndatablocks, size_t align,
                                     size_t keep_bytes, page_claim_fn *claim, void *arg);
void local_heap_cache_page_locked(local_heap_t *h, extent_t *page);
/* A page block lent out whole (kind POOL, pool.h): counted here by its
 * claim, under the lock of its home heap h; local_heap_unlend takes that
 * lock and puts it in the page cache like a page that came back empty. */
void local_heap_lend_locked(local_heap_t *h, extent_t *e);
void local_heap_unlend(extent_t *e);
void local_heap_abandoned_push_locked(local_heap_t *h, extent_t *page);
extent_t *local_heap_abandoned_pop_locked(local_heap_t *h, unsigned cls);
void local_heap_abandoned_remove_locked(local_heap_t *h, extent_t *page);
/* An abandoned page has a block to hand out (its lists do not change while
 * it has no owner: a free into it adopts it first). */
MM_INLINE bool abandoned_page_adoptable(const extent_t *page) {
  return page->free || page->local_free || page->reserved < page->capacity;
}
/* Hints (relaxed peeks, rechecked under the lock). */
MM_INLINE bool local_heap_has_abandoned(const local_heap_t *h, unsigned cls) {
  return atomic_load_relaxed(&h->xabandoned_classes) >> cls & 1;
}
bool local_heap_any_abandoned(void);
MM_INLINE void local_heap_count_taken_over(local_heap_t *h, uint64_t pages) {
  atomic_fetch_add_relaxed(&h->xpages_taken_over, pages);
}

/* ---- purger.c: the purge thread ----------------------------------------------------
 * Wanted once the heaps have taken, or hold free, purge_thread_mib;
 * started by the next allocating call that holds no lock (never from a
 * free: glibc frees under a lock that pthread_create takes, purger.c). */
enum { MM_PURGER_OFF = 0, MM_PURGER_WANTED = 1, MM_PURGER_RUNNING = 2, MM_PURGER_FAILED = 3 };
extern _Atomic(uint32_t) mm_xpurger_state;
void purger_start(void);
/* Call only from an allocating call, where no lock of ours is held
 * (pthread_create may call malloc). */
MM_INLINE void local_heap_purger_poke(void) {
  if (unlikely(atomic_load_relaxed(&mm_xpurger_state) == MM_PURGER_WANTED)) purger_start();
}
/* The purger's state, its heap purges and wake-ups. */
void local_heap_purger_stats(uint32_t *state, uint64_t *purges, uint64_t *wakeups);

/* ---- large.c: blocks handed out whole ------------------------------------------ */

void *local_heap_alloc_large(local_heap_t *h, size_t size, size_t align, bool zero);
void local_heap_free_large(extent_t *e, bool purge);
/* The huge caches of all heaps: the most bytes they may hold together
 * (MM_HUGE_CACHE_SHARE, config.h), the bytes they hold, and the frees that
 * found them over it and unmapped at once. */
void local_heap_huge_cache_stats(uint64_t *limit, uint64_t *cached, uint64_t *over_limit);
bool local_heap_resize_large(extent_t *e, size_t size);
void *local_heap_alloc_huge(local_heap_t *h, size_t size, size_t align, bool zero, bool growing);
/* A huge block of size bytes (below MM_HUGE_MIN too) on the head of a
 * cached huge mapping of at most MM_HUGE_REUSE_ROOM times size, the rest
 * given back; NULL if the heap's huge cache has none. */
void *local_heap_alloc_huge_cached(local_heap_t *h, size_t size, size_t align, bool zero);
void local_heap_free_huge(extent_t *e);
extent_t *local_heap_resize_huge(extent_t *e, size_t size);

/* ---- decay.c ---------------------------------------------------------------------- */

void local_heap_purge(local_heap_t *h, bool force); /* lock held */
/* Purge every heap that is due (the heartbeat; the purge thread): a heap
 * whose lock is busy is skipped, or with wait waited for (the caller holds
 * no local heap lock); every heap, due or not, when the cgroup's memory
 * usage is near its limit.  Returns the milliseconds until the earliest
 * deadline left (0: none); adds the heaps purged to *purged (or NULL). */
uint32_t local_heap_purge_due(uint32_t now, bool wait, uint64_t *purged);
/* Every heap purges all it holds now (the cgroup's memory is near its limit). */
void local_heap_purge_pressure(void);
void local_heap_collect_all(void);
/* The bytes of h's free extents and cached page blocks that are resident now,
 * as the kernel counts them (mincore: a system call per extent that may be
 * resident; for statistics).  Lock held. */
uint64_t local_heap_free_resident_locked(local_heap_t *h);

/* ---- local_heap_check.c ------------------------------------------------------------ */

bool local_heap_is_valid(local_heap_t *h, char *why, size_t why_size); /* lock held */

MM_HIDDEN_END

#endif
