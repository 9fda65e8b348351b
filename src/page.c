/* page.c — pages of small objects: initialisation, carving, the checked
 * pop and free of the modes without fast paths, and the page checker.
 *
 * Layer: page (page.h has the layout, the block and ownership encodings,
 * and the invariants).  A page belongs to one thread heap, whose thread
 * alone touches its lists (thread_heap.h says how pages move).
 *
 * Blocks are carved lazily, MM_EXTEND_BYTES at a time and in address
 * order, so a page's memory is touched only as it is used and successive
 * mallocs of one size return neighbouring addresses.
 *
 * The checked modes (mm_slow_only: secure mode, zero on free, or valgrind)
 * bypass the fast paths and come through page_pop_checked and
 * block_on_free:
 *   secure:   links stored xor'ed (mm_list_key), blocks carved in a random
 *             order (two ascending lists; a uniform shuffle with
 *             MMALLOC_SECURE=2), every freed block filled with a pattern
 *             (zero with MMALLOC_ZERO_ON_FREE) that is checked when it is
 *             handed out again: a write after free aborts with the block's
 *             address (blocks carved and never handed out are neither
 *             filled nor checked: MM_EXTENT_FRESH marks a free list of only
 *             those);
 *   valgrind: every block is a MALLOCLIKE/FREELIKE block for memcheck, and
 *             free blocks are no-access except while the allocator reads
 *             or writes their two words.
 */
#include <string.h>

#include "page.h"

#if MM_VALGRIND
#include <valgrind/memcheck.h>
#endif

#if MM_VALGRIND
void block_vg_open(const block_t *b) { VALGRIND_MAKE_MEM_DEFINED(b, sizeof(block_t)); }
void block_vg_close(const block_t *b) { VALGRIND_MAKE_MEM_NOACCESS(b, sizeof(block_t)); }
#endif

/* Is b a free block (does it carry its canary)?  The one read of a word
 * that may be either user data or ours; under valgrind it is read without
 * a report and the answer is marked defined. */
#if MM_VALGRIND
bool block_is_free(const block_t *b) {
  VALGRIND_DISABLE_ERROR_REPORTING;
  volatile int free = b->canary == block_canary_of(b);
  VALGRIND_ENABLE_ERROR_REPORTING;
  VALGRIND_MAKE_MEM_DEFINED(&free, sizeof(free));
  return free;
}
#endif

#if MM_VALGRIND
void block_vg_freed(const block_t *b, uint32_t size) {
  VALGRIND_FREELIKE_BLOCK(b, 0);
  VALGRIND_MAKE_MEM_NOACCESS(b, size);
}
#endif

void block_fill_big(void *p, size_t n) { memset(p, block_fill_byte(), n); }

size_t block_fill_changed_big(const void *q, size_t n) {
  const uint8_t *p = q;
  size_t at = 0;
  for (; at < n; at += MM_FILL_BLOCK)
    if (memcmp(p + at, mm_fill_block, n - at < MM_FILL_BLOCK ? n - at : MM_FILL_BLOCK) != 0) break;
  if (likely(at >= n)) return SIZE_MAX;
  while (p[at] == (uint8_t)mm_fill_word) at++;
  return at;
}

MM_COLD void page_written_after_free(const block_t *b, size_t at) {
  os_fatal("mmalloc: malloc(): block %p was written after it was freed (byte %zu changed)\n",
           (const void *)b, at);
}

/* page_pop for the checked modes: in secure mode, check that nothing wrote
 * into the block while it was free (page_check_free_head), then take it.
 * Secure mode's blocks of up to 16 steps of body take page_pop_secure,
 * whose checks are the same, inline and with no call that returns (so no
 * registers to save): the pop of a build with secure mode built in, here
 * for MMALLOC_SECURE chosen at start-up. */
void *page_pop_checked(extent_t *page) {
  if (!MM_VALGRIND && (MM_SECURE || options.secure) && block_body_inline(page->block_size))
    return page_pop_secure(page);
  return page_pop_checked_any(page);
}

MM_NOINLINE void *page_pop_checked_any(extent_t *page) {
  block_t *b = page->free;
  block_t *next = block_next(b);
  block_vg_open(b);
  if (MM_SECURE || options.secure) page_check_free_head(page, b, next);
  page_take_block(page, b, next);
#if MM_VALGRIND
  VALGRIND_MAKE_MEM_NOACCESS(b, page->block_size);
#endif
  return b;
}

MM_COLD void *page_pop_damaged(const block_t *b, size_t at) { page_written_after_free(b, at); }

void page_init(extent_t *page, unsigned cls) {
  mm_assert_internal(page->kind == MM_EXTENT_PAGE && cls < MM_CLASSES);
  const size_class_t *sc = &mm_size_classes[cls];
  page->size_class = (uint8_t)cls;
  page->flags &= MM_EXTENT_GUARD;
  page->fostered = 0;
  page->idle = 0;
  page->free = NULL;
  page->local_free = NULL;
  page->used = 0;
  page->reserved = 0;
  page->trim_at = 0;
  atomic_store_relaxed(&page->xcarved, 0);
  page->block_size = sc->size;
  page->capacity = sc->capacity;
  page->magic = sc->magic;
  page->page_start = page->node.start;
  page->next = page->prev = NULL;
#if MM_VALGRIND
  VALGRIND_MAKE_MEM_NOACCESS(page->page_start, (size_t)page->capacity * page->block_size);
#endif
}

/* xorshift64*: the random order of a secure page's blocks. */
static uint64_t shuffle_next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1Dull;
}

/* A fresh block on a checked free list: its link (encoded), its canary. */
static void carve_block(block_t *b, block_t *next) {
  block_set_next(b, next);
  block_vg_open(b);
  b->canary = block_canary_of(b);
  block_vg_close(b);
}

/* MMALLOC_SECURE=1: each block goes, by one random bit, to one of two
 * lists kept in address order, handed out one after the other.  The
 * program then meets the blocks as two ascending runs, which the hardware
 * prefetcher follows (a uniform shuffle, below, costs up to twice the time
 * of a loop that touches what it allocates: threadtest, knary).  Without
 * `random` (zero on free, valgrind) one list: address order.  Two passes
 * over the same random words, one per list, each taking its blocks from a
 * mask of 64 (no branch on the random bits); each block is carved when
 * the next of its list is found, the last one after both. */
static block_t *carve_two_lists(char *first, uint32_t n, uint32_t size, uint64_t s, bool random) {
  block_t *head = NULL, *prev = NULL;
  for (unsigned list = 0; list < 2; list++) {
    uint64_t t = s;
    for (uint32_t base = 0; base < n; base += 64) {
      uint64_t bits = random ? shuffle_next(&t) : 0;
      uint64_t mask = list ? bits : ~bits;
      if (n - base < 64) mask &= (1ull << (n - base)) - 1;
      for (; mask; mask &= mask - 1) {
        block_t *b = (block_t *)(first + (size_t)(base + (uint32_t)__builtin_ctzll(mask)) * size);
        if (prev) carve_block(prev, b);
        else head = b;
        prev = b;
      }
    }
  }
  carve_block(prev, NULL); /* n >= 1: the last block of the two lists */
  return head;
}

/* MMALLOC_SECURE=2: a uniform shuffle (Fisher-Yates over the n indices):
 * any block may follow any other. */
static block_t *carve_shuffled(char *first, uint32_t n, uint32_t size, uint64_t s) {
  uint16_t order[MM_EXTEND_BYTES / 16];
  for (uint32_t i = 0; i < n; i++) order[i] = (uint16_t)i;
  for (uint32_t i = n - 1; i > 0; i--) {
    uint32_t j = (uint32_t)(((shuffle_next(&s) >> 32) * (i + 1)) >> 32); /* in [0, i], no divide */
    uint16_t t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  block_t *head = NULL;
  for (uint32_t i = 0; i < n; i++) {
    block_t *b = (block_t *)(first + (size_t)order[n - 1 - i] * size);
    carve_block(b, head);
    head = b;
  }
  return head;
}

/* Carve the next blocks of the page onto its (empty) free list: in address
 * order, or (secure mode) in a random order. */
static void page_extend(extent_t *page) {
  uint32_t size = page->block_size;
  uint32_t n = MM_EXTEND_BYTES / size;
  if (n == 0) n = 1;
  if (n > page->capacity - page->reserved) n = page->capacity - page->reserved;
  char *first = (char *)page->page_start + (size_t)page->reserved * size;
  if (!mm_slow_only) {
    /* The plain case, on the path of every fresh page: links in address
     * order, so the first block out is the lowest. */
    block_t *b = (block_t *)first;
    for (uint32_t i = 1; i < n; i++) {
      block_t *next = (block_t *)((char *)b + size);
      b->next = next;
      b->canary = block_canary_of(b);
      b = next;
    }
    b->next = NULL;
    b->canary = block_canary_of(b);
    page->free = (block_t *)first;
  } else {
    /* The checked modes.  Not filled: never handed out, these blocks are
     * not checked either (MM_EXTENT_FRESH). */
    uint64_t s = mm_list_key ^ (uintptr_t)first ^ 0x9E3779B97F4A7C15ull;
    page->free = options.secure >= 2 ? carve_shuffled(first, n, size, s)
                                     : carve_two_lists(first, n, size, s, options.secure != 0);
    page->flags |= MM_EXTENT_FRESH;
  }
  page->reserved += n;
  atomic_store_relaxed(&page->xcarved, (uint64_t)page->reserved * page_step(page));
}

/* Give an empty free list new blocks: first those the owner freed, then
 * fresh ones.  False when the page has none (it is full). */
bool page_refill(extent_t *page) {
  if (page->free) return true;
  if (page->local_free) {
    page_take_local_frees(page);
    return true;
  }
  if (page->reserved < page->capacity) {
    page_extend(page);
    return true;
  }
  return false;
}

static bool list_is_valid(const extent_t *page, const block_t *list,
                          uint32_t *count, char *why, size_t why_size) {
  uintptr_t lo = page->page_start;
  uintptr_t hi = lo + (uintptr_t)page->reserved * page->block_size;
  for (const block_t *b = list; b; b = block_next(b)) {
    uintptr_t a = (uintptr_t)b;
    if (a < lo || a >= hi || (a - lo) % page->block_size) {
      os_format(why, why_size, "page %p: free block %p outside the page or misaligned",
                (void *)lo, (void *)a);
      return false;
    }
    if (!block_is_free(b)) {
      os_format(why, why_size, "page %p: free block %p lost its canary (write after free?)",
                (void *)lo, (void *)a);
      return false;
    }
    if (++*count > page->reserved) {
      os_format(why, why_size, "page %p: free list longer than the page (a cycle)",
                (void *)lo);
      return false;
    }
  }
  return true;
}

bool page_is_valid(const extent_t *page, char *why, size_t why_size) {
  if (page->kind != MM_EXTENT_PAGE) {
    os_format(why, why_size, "extent %p is not a page", (void *)page);
    return false;
  }
  if (page->page_start != page->node.start ||
      (size_t)page->capacity * page->block_size > (page->node.ndatablocks << MM_DATABLOCK_SHIFT) ||
      page->reserved > page->capacity ||
      page->magic != mm_size_classes[page->size_class].magic || page_step(page) == 0 ||
      atomic_load_relaxed(&page->xcarved) != (uint64_t)page->reserved * page_step(page)) {
    os_format(why, why_size, "page %p: geometry inconsistent", (void *)page->page_start);
    return false;
  }
  uint32_t nfree = 0;
  if (!list_is_valid(page, page->free, &nfree, why, why_size) ||
      !list_is_valid(page, page->local_free, &nfree, why, why_size))
    return false;
  /* a page a forked child inherited from another thread may have been torn
   * in that thread's fast path: its count may be one off (lifecycle.c) */
  if (page->used + nfree != page->reserved && !(page->flags & MM_EXTENT_FORKED)) {
    os_format(why, why_size, "page %p: used %u + free %u != reserved %u",
              (void *)page->page_start, page->used, nfree, page->reserved);
    return false;
  }
  return true;
}
