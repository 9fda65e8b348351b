/* page.h — a page: one extent holding small objects of one size class; the
 * encoding of a free block's two words; and the encoding of a page's
 * owner (page.c implements what is not inline here).
 *
 * Layer: page (above the local heaps, which hand out page blocks and take
 * them back; below the thread heaps, which own pages).
 *
 *   page_start                                  page_start + ndatablocks * 4 KiB
 *   | blk 0 | blk 1 | ... | blk reserved-1 | (not yet carved) ... | waste |
 *
 * No header anywhere in it: the descriptor (extent_t, region.h) lives in the
 * slot's management area: its line 0 (the page's owner, start, bounds)
 * is what every free reads, its line 1 (the free lists, the count) what
 * the owner's malloc and free write.
 *
 * Invariants (page_is_valid):
 *   free and local_free are disjoint lists of distinct carved blocks of the
 *   page, each at a block boundary, each carrying its canary;
 *   used + |free| + |local_free| == reserved <= capacity;
 *   xcarved == reserved * step (step: page_step, below);
 *   blocks in remote batches and inboxes (remote.c) count as used.
 */
#ifndef MM_PAGE_H
#define MM_PAGE_H

#include <string.h>

#include "options.h"
#include "region.h"
#include "size_class.h"

MM_HIDDEN_BEGIN

/* ---- blocks ---------------------------------------------------------------------
 * A free small object.  Both words belong to the user once the block is
 * handed out; malloc clears the canary word so that only a free can set it.
 * The fast paths touch the two words directly (plain link, canary); every
 * other path goes through block_next / block_set_next, which also serve
 * the modes that switch the fast paths off (mm_slow_only): secure mode,
 * whose links are stored xor'ed with a secret and the block's address
 * (mm_list_key; 0 otherwise, so that a plain link reads the same either
 * way), and valgrind, which must be told when the allocator itself touches
 * a free block. */
typedef struct block_s {
  struct block_s *next;
  uintptr_t canary; /* (uintptr_t)block ^ mm_canary_key while free */
} block_t;

#if MM_VALGRIND
void block_vg_open(const block_t *b);
void block_vg_close(const block_t *b);
void block_vg_freed(const block_t *b, uint32_t size); /* a FREELIKE block, no-access */
#else
MM_INLINE void block_vg_open(const block_t *b) { (void)b; }
MM_INLINE void block_vg_close(const block_t *b) { (void)b; }
MM_INLINE void block_vg_freed(const block_t *b, uint32_t size) { (void)b, (void)size; }
#endif

MM_INLINE uintptr_t block_link_key(const block_t *b) {
  /* secure mode built in: the key is set at start-up, before any block */
  if (MM_SECURE) return mm_list_key ^ ((uintptr_t)b >> 12);
  return mm_list_key ? mm_list_key ^ ((uintptr_t)b >> 12) : 0;
}
MM_INLINE block_t *block_next(const block_t *b) {
  block_vg_open(b);
  block_t *n = (block_t *)((uintptr_t)b->next ^ block_link_key(b));
  block_vg_close(b);
  return n;
}
MM_INLINE void block_set_next(block_t *b, block_t *next) {
  block_vg_open(b);
  b->next = (block_t *)((uintptr_t)next ^ block_link_key(b));
  block_vg_close(b);
}
MM_INLINE uintptr_t block_canary_of(const block_t *b) {
  return (uintptr_t)b ^ mm_canary_key;
}
/* The pattern secure mode fills freed memory with (zero with
 * MMALLOC_ZERO_ON_FREE), and checks before the memory is handed out
 * again: a byte, and a word of it. */
MM_INLINE uint8_t block_fill_byte(void) { return (uint8_t)mm_fill_word; }
MM_INLINE uint64_t block_fill_word(void) { return mm_fill_word; }
/* Over 256 bytes, out of line (page.c), so that the inline paths that
 * may call them save no registers for the C library's call: the fill by
 * memset's wide stores, and its check by memcmp's wide loads against
 * mm_fill_block (the offset of the first changed byte, or SIZE_MAX). */
void block_fill_big(void *p, size_t n);
size_t block_fill_changed_big(const void *p, size_t n);
/* Fill [p, p + n) with the pattern (p 8-aligned, n a multiple of 8): word
 * stores for the small objects most programs free (a memset call costs
 * more there), memset for the rest. */
MM_INLINE void block_fill_range(void *p, size_t n) {
  uint64_t f = block_fill_word(), *w = p;
  if (n <= 32) { /* four words at most, unrolled */
    for (size_t i = 0; i < 4; i++)
      if (i < n / 8) w[i] = f;
  } else if (n <= 256) {
    for (uint64_t *end = w + n / 8; w < end; w++) *w = f;
  } else {
    block_fill_big(p, n);
  }
}
/* The offset of the first byte of [p, p + n) that no longer holds the
 * pattern, or n (p 8-aligned, n a multiple of 8).  The differences are
 * or'ed together without a branch, which the compiler turns into vector
 * operations; the byte is looked for only when one differs, to name it. */
MM_INLINE size_t block_fill_changed(const void *p, size_t n) {
  uint64_t f = block_fill_word(), diff = 0;
  const uint64_t *w = p;
  if (n <= 32) { /* the small blocks most programs use: four words at most, unrolled */
    for (size_t i = 0; i < 4; i++)
      if (i < n / 8) diff |= w[i] ^ f;
  } else if (n > 256) {
    size_t at = block_fill_changed_big(p, n);
    return at == SIZE_MAX ? n : at;
  } else {
    for (const uint64_t *end = w + n / 8; w < end; w++) diff |= *w ^ f;
  }
  if (likely(!diff)) return n;
  size_t at = 0;
  while (((const uint8_t *)p)[at] == (uint8_t)f) at++;
  return at;
}
/* The same two for a page block's body (past its two words), in 16-byte
 * steps: block sizes are multiples of 16 and blocks 16-aligned, so the
 * loops need no tail (size_class.c checks the sizes).  A body of 1 to 8
 * steps (blocks of 32 to 144 bytes, most of what programs free) takes no
 * loop: a window of four steps at its start and one at its end, which
 * overlap when the body is shorter, cover it. */
typedef uint64_t mm_v2_t __attribute__((vector_size(16), may_alias));
/* The pattern in both halves of a vector: one load. */
MM_INLINE mm_v2_t block_fill_vector(void) { return *(const mm_v2_t *)mm_fill_block; }
MM_INLINE void block_fill_body(block_t *b, uint32_t size) {
  size_t k = (size - sizeof(block_t)) / 16;
  if (k > 16) { /* first, so that a long body pays one compare */
    block_fill_big(b + 1, k * 16);
    return;
  }
  mm_v2_t f = block_fill_vector(), *v = (mm_v2_t *)(b + 1);
  if (k <= 4) { /* v[0], v[1], v[k-2], v[k-1], each kept in the body */
    if (k == 0) return;
    mm_v2_t *last = v + k - 1;
    v[0] = f;
    v[k > 1] = f;
    last[-(ptrdiff_t)(k > 1)] = f;
    *last = f;
  } else if (k <= 8) { /* v[0..3] and v[k-4..k-1] */
    mm_v2_t *w = v + k - 4;
    v[0] = f, v[1] = f, v[2] = f, v[3] = f;
    w[0] = f, w[1] = f, w[2] = f, w[3] = f;
  } else {
    for (size_t i = 0; i < k; i++) v[i] = f;
  }
}
/* The offset in the body of the first byte that no longer holds the
 * pattern, or SIZE_MAX if every byte does (a constant, so that the caller's
 * test of it folds away on the common path). */
MM_INLINE size_t block_body_changed(const block_t *b, uint32_t size) {
  size_t k = (size - sizeof(block_t)) / 16;
  if (k > 16) return block_fill_changed_big(b + 1, k * 16); /* first: one compare */
  mm_v2_t f = block_fill_vector(), d = {0, 0};
  const mm_v2_t *v = (const mm_v2_t *)(b + 1);
  if (k <= 4) { /* the windows of block_fill_body */
    if (k == 0) return SIZE_MAX;
    const mm_v2_t *last = v + k - 1;
    d = (v[0] ^ f) | (v[k > 1] ^ f) | (last[-(ptrdiff_t)(k > 1)] ^ f) | (*last ^ f);
  } else if (k <= 8) {
    const mm_v2_t *w = v + k - 4;
    d = ((v[0] ^ f) | (v[1] ^ f)) | ((v[2] ^ f) | (v[3] ^ f)) | ((w[0] ^ f) | (w[1] ^ f)) |
        ((w[2] ^ f) | (w[3] ^ f));
  } else { /* 9 to 16 steps: four loads a step, two chains, then the rest */
    const mm_v2_t *end = v + k;
    mm_v2_t e = {0, 0};
    for (; v + 4 <= end; v += 4) d |= (v[0] ^ f) | (v[1] ^ f), e |= (v[2] ^ f) | (v[3] ^ f);
    for (; v < end; v++) d |= *v ^ f;
    d |= e;
  }
  if (likely((d[0] | d[1]) == 0)) return SIZE_MAX;
  const uint8_t *p = (const uint8_t *)(b + 1);
  size_t at = 0;
  while (p[at] == (uint8_t)mm_fill_word) at++;
  return at;
}
/* Is b a free block (does it carry its canary)? */
#if MM_VALGRIND
bool block_is_free(const block_t *b);
#else
MM_INLINE bool block_is_free(const block_t *b) { return b->canary == block_canary_of(b); }
#endif
/* A block the user just freed, in a checked mode: fill it (secure mode;
 * zero it with zero on free alone), mark it, tell memcheck. */
MM_INLINE void block_on_free_sized(block_t *b, uint32_t size) {
  if (MM_SECURE || options.secure) block_fill_body(b, size);
  else if (options.zero_on_free) memset(b, 0, size);
  block_vg_open(b);
  b->canary = block_canary_of(b);
  block_vg_close(b);
  block_vg_freed(b, size);
}
MM_INLINE void block_on_free(extent_t *page, block_t *b) { block_on_free_sized(b, page->block_size); }

/* ---- ownership --------------------------------------------------------------------
 * A page owned by a thread carries two names of it: xowner, its thread
 * heap (where remote frees go), and xowner_tid, the thread's id
 * (mm_thread_id(), one instruction to read), which the free fast path
 * compares with its own.  Tags in xowner_tid make that comparison miss on
 * purpose:
 *   MM_OWNER_FULL  the page has no free block and sits on its heap's full
 *                  list; the owner's free goes to the slow path, which puts
 *                  the page back in its queue (and a taker of an idle heap's
 *                  full pages may work on it under the owner's lock);
 *   MM_OWNER_SLOW  every page while the fast paths are off (secure mode
 *                  chosen at run time, zero on free, valgrind): no thread
 *                  id has this bit.
 * States:
 *   owned        xowner == th, xowner_tid == th's id | tags;
 *   taken        xowner == th, xowner_tid == 0: a thread holding th's
 *                lock is taking the full page over (remote.c);
 *   abandoned    both 0, the page on its home heap's abandoned list;
 *   retired      both 0, the extent no longer a PAGE.
 * Only these calls write the two words, so xowner is NULL on every extent
 * that is not a PAGE (malloc_usable_size's fast path takes a non-NULL one
 * for a page; local_heap_is_valid checks it).  A change from or to "abandoned"
 * or "retired" happens under the home local heap's lock; owned <-> taken
 * under the owner's lock.  (A page block lent whole, kind POOL, is no
 * page: its claim, pool_claim_block, and its return, local_heap_unlend,
 * write its owner word, under the home local heap's lock; pool.h.) */
#define MM_OWNER_FULL ((uintptr_t)1)
#define MM_OWNER_SLOW ((uintptr_t)2)

MM_INLINE uintptr_t page_owner_word(uintptr_t tid, bool full) {
  return tid | (full ? MM_OWNER_FULL : 0) | (mm_slow_only && !mm_fast_checked ? MM_OWNER_SLOW : 0);
}
MM_INLINE struct thread_heap_s *page_owner(const extent_t *page) {
  return atomic_load_relaxed(&page->xowner);
}
MM_INLINE void page_set_owner(extent_t *page, struct thread_heap_s *th, uintptr_t tid) {
  atomic_store_relaxed(&page->xowner, th);
  atomic_store_relaxed(&page->xowner_tid, page_owner_word(tid, false));
}
MM_INLINE void page_clear_owner(extent_t *page) {
  atomic_store_relaxed(&page->xowner, NULL);
  atomic_store_relaxed(&page->xowner_tid, 0);
}
MM_INLINE void page_set_full(extent_t *page, uintptr_t tid, bool full) {
  atomic_store_relaxed(&page->xowner_tid, page_owner_word(tid, full));
}
MM_INLINE bool page_is_full(const extent_t *page) {
  return atomic_load_relaxed(&page->xowner_tid) & MM_OWNER_FULL;
}
/* A taker of an idle heap's full pages marks one it works on (remote.c). */
MM_INLINE void page_set_taken(extent_t *page) { atomic_store_relaxed(&page->xowner_tid, 0); }
MM_INLINE bool page_is_taken(const extent_t *page) {
  return atomic_load_relaxed(&page->xowner_tid) == 0;
}
MM_INLINE bool page_owner_is(const extent_t *page, uintptr_t tid, bool full) {
  return atomic_load_relaxed(&page->xowner_tid) == page_owner_word(tid, full);
}

/* ---- block boundaries ----------------------------------------------------------
 * off = address - page_start (below 2^32).  off * magic mod 2^64 is k * step
 * for the start of block k and at least magic for every other offset
 * (Lemire, Kaser and Kurz's divisibility test, with the magic of
 * size_class.c, whose step is never 0), and xcarved == reserved * step <
 * magic, so one multiply and one compare tell "the start of a carved
 * block"; page_offset_at_block, the compare with magic, tells only "a block
 * boundary" (carved or not: the slow path's diagnosis). */
MM_INLINE uint64_t page_step(const extent_t *page) { return page->magic * page->block_size; }
/* Any thread may ask (relaxed).  off must be below 2^32: an address the
 * slot and extent maps placed in this page (its offset is below the
 * page's size). */
MM_INLINE bool page_offset_is_block(const extent_t *page, uint64_t off) {
  return off * page->magic < atomic_load_relaxed(&page->xcarved);
}
/* The same for the page's owner, which alone writes xcarved while it owns
 * the page: a plain load (atomic_load_own), one instruction less. */
MM_INLINE bool page_offset_is_block_own(const extent_t *page, uint64_t off) {
  return off * page->magic < atomic_load_own(&page->xcarved);
}
MM_INLINE bool page_offset_at_block(const extent_t *page, uint64_t off) {
  return off * page->magic < page->magic;
}

/* ---- pop and push -------------------------------------------------------------------- */

/* Take b, the head of the page's free list, whose successor is next (the
 * pop every path shares; the fast paths pass the plain link b->next). */
MM_INLINE void *page_take_block(extent_t *page, block_t *b, block_t *next) {
  page->free = next;
  page->used++;
  atomic_order_stores(); /* off the list before its canary goes: fork */
  b->canary = 0;
  return b;
}
MM_COLD __attribute__((noreturn)) void page_written_after_free(const block_t *b, size_t at);
/* Secure mode: did anything write into b, the head of the page's free
 * list, while it was free?  Its canary must be intact, its link (next,
 * decoded) must name a block of this page or nothing before anyone
 * follows it, and, unless the list is fresh (MM_EXTENT_FRESH: blocks
 * carved and never handed out, which no one can have freed and written
 * since), every byte past the two words must still hold the fill.  A
 * write after free aborts with the block's address and the byte.
 * page_free_head_damage gives the byte at which b shows such a write (8:
 * its canary, 0: its link, 16 on: its body) or SIZE_MAX, for a caller that
 * reports it itself (size: the page's block size); page_check_free_head
 * aborts. */
MM_INLINE size_t page_free_head_damage(const extent_t *page, const block_t *b, const block_t *next,
                                       uint32_t size) {
  if (b->canary != block_canary_of(b)) return 8;
  /* the owner pops: its own xcarved; next is read from the block, so it may
   * be anything: an offset from 2^32 up is refused before the compare */
  uint64_t off = (uintptr_t)next - page->page_start;
  if (next && ((off >> 32) != 0 || !page_offset_is_block_own(page, off))) return 0;
  if (page->flags & MM_EXTENT_FRESH) return SIZE_MAX;
  size_t at = block_body_changed(b, size);
  return at == SIZE_MAX ? at : sizeof(block_t) + at;
}
MM_INLINE void page_check_free_head(const extent_t *page, const block_t *b, const block_t *next) {
  size_t at = page_free_head_damage(page, b, next, page->block_size);
  if (unlikely(at != SIZE_MAX)) page_written_after_free(b, at);
}
/* Is a block of this size's body filled and checked inline, by the fast
 * paths where secure mode is built in: 0 to 16 steps of 16 bytes?  Longer
 * ones go out of line (memset and memcmp), so that the inline paths make
 * no call that returns and save no registers.  One compare for both
 * bounds, so that the compiler knows k <= 16 in what follows and keeps no
 * call to the out-of-line check there. */
MM_INLINE bool block_body_inline(uint32_t size) {
  return size - sizeof(block_t) <= 16 * 16;
}
/* The checked modes' pop (page.c); page_pop_checked_any is its every-case
 * part, also page_pop_secure's, out of line, for a body that is not
 * block_body_inline. */
void *page_pop_checked(extent_t *page);
void *page_pop_checked_any(extent_t *page);
/* page_written_after_free (it never returns), typed so that the pop can
 * end in it by a jump, which needs no stack frame on its way in. */
MM_COLD void *page_pop_damaged(const block_t *b, size_t at);
/* The fast path's pop where secure mode is built in (mm_fast_checked). */
MM_INLINE void *page_pop_secure(extent_t *page) {
  uint32_t size = page->block_size;
  if (unlikely(!block_body_inline(size))) return page_pop_checked_any(page);
  block_t *b = page->free, *next = block_next(b);
  size_t at = page_free_head_damage(page, b, next, size);
  if (unlikely(at != SIZE_MAX)) return page_pop_damaged(b, at); /* a jump: no frame here */
  return page_take_block(page, b, next);
}
/* The blocks the owner freed since the last refill become the page's free
 * list, which is empty (owner only, no lock: both lists are the owner's).
 * The local list is emptied first, so that a fork between the two stores
 * leaves those blocks on neither list (lost to the child, counted in
 * use), never on both.  The list is no longer one of blocks never handed
 * out: MM_EXTENT_FRESH goes.  Only the checked modes set that mark
 * (page_extend), so only they clear it, and the default mode does not
 * write the flags here. */
MM_INLINE void page_take_local_frees(extent_t *page) {
  mm_assert_internal(page->free == NULL && page->local_free != NULL);
  block_t *list = page->local_free;
  page->local_free = NULL;
  atomic_order_stores();
  page->free = list;
  if (mm_slow_only) page->flags &= (uint8_t)~MM_EXTENT_FRESH;
  mm_assert_internal(!(page->flags & MM_EXTENT_FRESH));
}
/* Pop a block from a page whose free list is not empty (owner only). */
MM_INLINE void *page_pop(extent_t *page) {
  mm_assert(page->free != NULL);
  if (unlikely(mm_slow_only)) return page_pop_checked(page);
  block_t *b = page->free;
  return page_take_block(page, b, b->next);
}
/* Push b (its canary set) onto the owner's local free list. */
MM_INLINE void page_push_local(extent_t *page, block_t *b) {
  block_set_next(b, page->local_free);
  atomic_order_stores(); /* link before head: a fork may land here */
  page->local_free = b;
}

/* ---- page.c ------------------------------------------------------------------------- */

/* Make a page block (kind PAGE, from the local heap) an empty page of
 * class cls; its guard flag is kept. */
void page_init(extent_t *page, unsigned cls);
/* Give an empty free list new blocks; false when the page is full. */
bool page_refill(extent_t *page);
/* Owner only (or its lock held).  O(blocks). */
bool page_is_valid(const extent_t *page, char *why, size_t why_size);

MM_HIDDEN_END

#endif
