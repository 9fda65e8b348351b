/* page.c — a page: one extent holding small objects of one size class.
 *
 * Layer: thread heap.  A page belongs to one thread heap (xowner) whose
 * thread alone touches its lists; see thread_heap.c for how pages move
 * between queues and owners.
 *
 *   page_start                                  page_start + npages * 4 KiB
 *   | blk 0 | blk 1 | ... | blk reserved-1 | (not yet carved) ... | waste |
 *
 * No header anywhere in it: the descriptor lives in the slot's management
 * area.  Blocks are carved lazily, MM_EXTEND_BYTES at a time and in address
 * order, so a page's memory is touched only as it is used and successive
 * mallocs of one size return neighbouring addresses.
 *
 * Invariants (page_is_valid):
 *   free and local_free are disjoint lists of distinct carved blocks of the
 *   page, each at a block boundary, each carrying its canary;
 *   used + |free| + |local_free| == reserved <= capacity;
 *   xlimit == reserved * block_size.
 */
#include <string.h>

#include "internal.h"

uintptr_t mm_canary_key;

void page_init(extent_t *page, unsigned cls) {
  const size_class_t *sc = &mm_size_classes[cls];
  page->kind = MM_EXTENT_PAGE;
  page->size_class = (uint8_t)cls;
  page->flags = 0;
  page->idle = 0;
  page->free = NULL;
  page->local_free = NULL;
  page->used = 0;
  page->reserved = 0;
  atomic_store_relaxed(&page->xlimit, 0);
  page->block_size = sc->size;
  page->capacity = sc->capacity;
  page->magic = sc->magic;
  page->page_start = page->node.start;
  page->next = page->prev = NULL;
}

/* Carve the next blocks of the page onto its (empty) free list. */
static void page_extend(extent_t *page) {
  uint32_t size = page->block_size;
  uint32_t n = MM_EXTEND_BYTES / size;
  if (n == 0) n = 1;
  if (n > page->capacity - page->reserved) n = page->capacity - page->reserved;
  char *first = (char *)page->page_start + (size_t)page->reserved * size;
  /* Link in address order: the first block out is the lowest. */
  block_t *b = (block_t *)first;
  for (uint32_t i = 1; i < n; i++) {
    block_t *next = (block_t *)((char *)b + size);
    b->next = next;
    b->canary = (uintptr_t)b ^ mm_canary_key;
    b = next;
  }
  b->next = NULL;
  b->canary = (uintptr_t)b ^ mm_canary_key;
  page->free = (block_t *)first;
  page->reserved += n;
  atomic_store_relaxed(&page->xlimit, (uint64_t)page->reserved * size);
}

/* Give an empty free list new blocks: first those the owner freed, then
 * fresh ones.  False when the page has none (it is full). */
bool page_refill(extent_t *page) {
  if (page->free) return true;
  if (page->local_free) {
    page->free = page->local_free;
    page->local_free = NULL;
    return true;
  }
  if (page->reserved < page->capacity) {
    page_extend(page);
    return true;
  }
  return false;
}

static bool list_holds(const block_t *list, const block_t *b, uint32_t limit) {
  for (uint32_t n = 0; list && n <= limit; list = list->next, n++)
    if (list == b) return true;
  return false;
}

/* Is b on one of the page's free lists?  (Owner only; the double-free check
 * calls it when a block being freed already carries its canary.) */
bool page_holds_free_block(const extent_t *page, const block_t *b) {
  return list_holds(page->free, b, page->reserved) ||
         list_holds(page->local_free, b, page->reserved);
}

static bool list_is_valid(const extent_t *page, const block_t *list,
                          uint32_t *count, char *why, size_t why_size) {
  uintptr_t lo = page->page_start;
  uintptr_t hi = lo + (uintptr_t)page->reserved * page->block_size;
  for (const block_t *b = list; b; b = b->next) {
    uintptr_t a = (uintptr_t)b;
    if (a < lo || a >= hi || (a - lo) % page->block_size) {
      os_format(why, why_size, "page %p: free block %p outside the page or misaligned",
                (void *)lo, (void *)a);
      return false;
    }
    if (b->canary != (a ^ mm_canary_key)) {
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
      (size_t)page->capacity * page->block_size > (page->node.npages << MM_PAGE_SHIFT) ||
      page->reserved > page->capacity ||
      atomic_load_relaxed(&page->xlimit) != (uint64_t)page->reserved * page->block_size) {
    os_format(why, why_size, "page %p: geometry inconsistent", (void *)page->page_start);
    return false;
  }
  uint32_t nfree = 0;
  if (!list_is_valid(page, page->free, &nfree, why, why_size) ||
      !list_is_valid(page, page->local_free, &nfree, why, why_size))
    return false;
  if (page->used + nfree != page->reserved) {
    os_format(why, why_size, "page %p: used %u + free %u != reserved %u",
              (void *)page->page_start, page->used, nfree, page->reserved);
    return false;
  }
  return true;
}
