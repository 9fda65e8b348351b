/* internal.h — cross-file prototypes, grouped by the file that defines them,
 * and the few inline helpers the fast paths need.
 *
 * Layer order (each calls only the ones above it in this list):
 *   os.c -> region.c -> interval_tree.c, local_heap.c -> size_class.c,
 *   page.c, thread_heap.c -> api.c, override.c
 * Side modules: options.c, stats.c.
 */
#ifndef MM_INTERNAL_H
#define MM_INTERNAL_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "types.h"

/* Everything declared from here on is internal to the library: hidden, so
 * the compiler may address it directly (no GOT) and nothing leaks out. */
#pragma GCC visibility push(hidden)

#define MM_EXPORT __attribute__((visibility("default")))
#define MM_INLINE static inline __attribute__((always_inline))
#define MM_NOINLINE __attribute__((noinline))
#define MM_COLD __attribute__((cold, noinline))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ---- page queues: doubly linked lists of extents (next/prev) ---------------- */
MM_INLINE void page_queue_push_front(page_queue_t *q, extent_t *e) {
  e->prev = NULL;
  e->next = q->first;
  if (q->first) q->first->prev = e; else q->last = e;
  q->first = e;
}
MM_INLINE void page_queue_push_back(page_queue_t *q, extent_t *e) {
  e->next = NULL;
  e->prev = q->last;
  if (q->last) q->last->next = e; else q->first = e;
  q->last = e;
}
MM_INLINE void page_queue_remove(page_queue_t *q, extent_t *e) {
  if (e->prev) e->prev->next = e->next; else q->first = e->next;
  if (e->next) e->next->prev = e->prev; else q->last = e->prev;
  e->next = e->prev = NULL;
}

/* ---- options.c --------------------------------------------------------------- */
typedef struct options_s {
  long verbose;        /* MMALLOC_VERBOSE: print the options in force */
  long stats;          /* MMALLOC_STATS: print statistics at exit */
  long heaps;          /* MMALLOC_HEAPS: local heaps (default: CPUs) */
  long hugepages;      /* MMALLOC_HUGEPAGES: 0 never, 1 always, 2 large blocks */
  long purge_delay_ms; /* MMALLOC_PURGE_DELAY_MS: idle time before purging */
  long secure;         /* MMALLOC_SECURE: run-time part of secure mode */
  long zero_on_free;   /* MMALLOC_ZERO_ON_FREE: freed small blocks are zeroed */
} options_t;
extern options_t options;
void options_init(void);
void options_print(void);

/* ---- os.c ------------------------------------------------------------------ */
enum { MM_FAULT_RESERVE = 0, MM_FAULT_COMMIT = 1, MM_FAULT_PURGE = 2, MM_FAULT_KINDS = 3 };
void os_init(void);
void *os_reserve(size_t size, size_t align);
void *os_reserve_offset(size_t size, size_t align, size_t offset);
bool os_reserve_at(void *p, size_t size);
void os_release(void *p, size_t size);
bool os_commit(void *p, size_t size);
bool os_purge(void *p, size_t size);
void os_hugepages(void *p, size_t size, bool on);
bool os_guard(void *p, size_t size, bool on);
bool os_remap_in_place(void *p, size_t old_size, size_t new_size);
bool os_remap_to(void *old, size_t old_size, void *to, size_t new_size);
uint32_t os_now_ms(void);
int os_current_cpu(void);
int os_cpu_count(void);
uint64_t os_random(void);
size_t os_vformat(char *buf, size_t size, const char *fmt, va_list ap);
size_t os_format(char *buf, size_t size, const char *fmt, ...);
void os_write_all(int fd, const char *s, size_t n);
void os_message(const char *fmt, ...);
__attribute__((noreturn)) void os_fatal(const char *fmt, ...);

/* True once `now` has reached `deadline` on the wrapping millisecond clock. */
MM_INLINE bool time_reached(uint32_t now, uint32_t deadline) {
  return (int32_t)(now - deadline) >= 0;
}

/* ---- region.c --------------------------------------------------------------- */
extern _Atomic(uint8_t) mm_slot_table[MM_SLOT_TABLE_SIZE];

MM_INLINE slot_t *slot_of_address(uintptr_t a) {
  return (slot_t *)(a & ~(MM_SLOT_SIZE - 1));
}
MM_INLINE slot_t *slot_of_extent(const extent_t *e) {
  return slot_of_address((uintptr_t)e);
}
MM_INLINE uint32_t *slot_map(slot_t *slot) {
  return (uint32_t *)((uintptr_t)slot + MM_SLOT_MAP_OFFSET);
}
MM_INLINE extent_t *slot_extents(slot_t *slot) {
  return (extent_t *)((uintptr_t)slot + MM_SLOT_EXTENTS_OFFSET);
}
MM_INLINE uintptr_t slot_data_start(const slot_t *slot) {
  return (uintptr_t)slot + MM_SLOT_META_SIZE;
}
MM_INLINE uintptr_t extent_end(const extent_t *e) {
  return e->node.start + (e->node.npages << MM_PAGE_SHIFT);
}
/* Bytes of a LARGE extent the user may use (all but a guard datablock). */
MM_INLINE size_t extent_usable(const extent_t *e) {
  return (e->node.npages - ((e->flags & MM_EXTENT_GUARD) ? 1 : 0)) << MM_PAGE_SHIFT;
}
/* Slot table entry of an address (MM_SLOT_NONE for anything not ours,
 * including addresses above MM_ADDRESS_BITS). */
MM_INLINE unsigned slot_table_entry(uintptr_t a) {
  uintptr_t i = a >> MM_SLOT_SHIFT;
  if (unlikely(i >= MM_SLOT_TABLE_SIZE)) return MM_SLOT_NONE;
  return atomic_load_relaxed(&mm_slot_table[i]);
}
/* The extent the page map names for address a of a slot (the slot header's
 * zero prefix when it names none).  Exact for pages; see region.c. */
MM_INLINE extent_t *slot_extent_of(slot_t *slot, uintptr_t a) {
  return (extent_t *)((uintptr_t)slot +
                      slot_map(slot)[(a >> MM_PAGE_SHIFT) & (MM_SLOT_PAGES - 1)]);
}

extent_t *region_extent_new(slot_t *slot);
void region_extent_delete(slot_t *slot, extent_t *e);
void region_map_all(extent_t *e);
void region_map_ends(extent_t *e);
extent_t *region_extent_at(slot_t *slot, uintptr_t a);
slot_t *region_slot_new(uint32_t heap, extent_t **free_out);
size_t region_slot_data_pages(void);
void region_slot_release(slot_t *slot);
bool region_commit_to(slot_t *slot, uintptr_t end);
extent_t *region_huge_new(uint32_t heap, size_t size, size_t align);
extent_t *region_huge_at(uintptr_t a);
void region_huge_free(extent_t *e);
extent_t *region_huge_resize(extent_t *e, size_t size, bool keep_tail);

/* ---- size_class.c ------------------------------------------------------------ */
extern size_class_t mm_size_classes[MM_CLASSES];
extern uint8_t mm_direct_class[MM_DIRECT_SLOTS];
void size_class_init(void);
unsigned size_class_of_slow(size_t n);
unsigned size_class_aligned(size_t n, size_t align);
bool size_class_is_valid(char *why, size_t why_size);

MM_INLINE unsigned size_class_of(size_t n) {
  if (n <= MM_DIRECT_MAX) return mm_direct_class[(n + 15) >> 4];
  return size_class_of_slow(n);
}

/* ---- page ownership (see MM_OWNER_FULL in types.h) ------------------------- */
extern bool mm_slow_only;
MM_INLINE uintptr_t page_owner_tid(const thread_heap_t *th, bool full) {
  return th->tid | (full ? MM_OWNER_FULL : 0) | (mm_slow_only ? MM_OWNER_SLOW : 0);
}
MM_INLINE void page_set_owner(extent_t *page, thread_heap_t *th) {
  atomic_store_relaxed(&page->xowner, th);
  atomic_store_relaxed(&page->xowner_tid, th ? page_owner_tid(th, false) : 0);
}
MM_INLINE void page_set_full(extent_t *page, const thread_heap_t *th, bool full) {
  atomic_store_relaxed(&page->xowner_tid, page_owner_tid(th, full));
}
MM_INLINE bool page_is_full(const extent_t *page) {
  return atomic_load_relaxed(&page->xowner_tid) & MM_OWNER_FULL;
}

/* ---- blocks: the two words a free block carries ------------------------------
 * The fast paths touch them directly (plain link, canary); every other path
 * goes through these, which also serve the two modes that switch the fast
 * paths off (mm_slow_only): secure mode, whose links are stored xor'ed with
 * a secret and the block's address (mm_list_key, 0 otherwise, so that a
 * plain link reads the same either way), and valgrind, which must be told
 * when the allocator itself touches a free block. */
extern uintptr_t mm_canary_key;
extern uintptr_t mm_list_key;
extern bool mm_slow_only;

#if MM_VALGRIND
void block_vg_open(const block_t *b);
void block_vg_close(const block_t *b);
#else
MM_INLINE void block_vg_open(const block_t *b) { (void)b; }
MM_INLINE void block_vg_close(const block_t *b) { (void)b; }
#endif

MM_INLINE uintptr_t block_link_key(const block_t *b) {
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

/* ---- page.c ------------------------------------------------------------------- */
void page_init(extent_t *page, unsigned cls);
bool page_refill(extent_t *page);
void *page_pop_checked(extent_t *page);
bool block_is_free(const block_t *b);
void block_on_free(extent_t *page, block_t *b);
bool page_holds_free_block(const extent_t *page, const block_t *b);
bool page_is_valid(const extent_t *page, char *why, size_t why_size);

/* ---- local_heap.c -------------------------------------------------------------- */
extern local_heap_t mm_heaps[MM_MAX_HEAPS];
extern uint32_t mm_nheaps;
void local_heap_init_all(uint32_t n);
local_heap_t *local_heap_of_extent(const extent_t *e);
extent_t *local_heap_take_page(local_heap_t *h, unsigned cls);
extent_t *local_heap_adopt_class(local_heap_t *h, unsigned cls, thread_heap_t *th);
bool local_heap_adopt_page(extent_t *page, thread_heap_t *th);
void local_heap_return_page(extent_t *page);
void local_heap_abandon_page(extent_t *page);
void *local_heap_alloc_large(local_heap_t *h, size_t size, size_t align, bool zero, bool room);
void *local_heap_alloc_huge(local_heap_t *h, size_t size, size_t align, bool zero);
void local_heap_free_huge(extent_t *e);
extent_t *local_heap_resize_huge(extent_t *e, size_t size);
void local_heap_free_large(extent_t *e);
bool local_heap_resize_large(extent_t *e, size_t size);
void local_heap_purge(local_heap_t *h, bool force);
void local_heap_purge_due(uint32_t now);
void local_heap_collect_all(void);
thread_heap_t *local_heap_thread_heap_new(local_heap_t *h);
void local_heap_thread_heap_dead(thread_heap_t *th);
block_t *local_heap_take_dead_inboxes(local_heap_t *h);
void local_heap_fork_prepare(void);
void local_heap_fork_parent(void);
void local_heap_fork_child(void);
bool local_heap_is_valid(local_heap_t *h, char *why, size_t why_size);

/* The calling thread's id: its thread pointer, one instruction to read. */
MM_INLINE uintptr_t mm_thread_id(void) {
  uintptr_t tid;
#if defined(__x86_64__)
  __asm__("movq %%fs:0, %0" : "=r"(tid));
#elif defined(__aarch64__)
  __asm__("mrs %0, tpidr_el0" : "=r"(tid));
#else
  tid = (uintptr_t)__builtin_thread_pointer();
#endif
  return tid;
}

/* ---- thread_heap.c ---------------------------------------------------------------- */
extern __thread thread_heap_t *mm_thread_heap __attribute__((tls_model("initial-exec")));
extern thread_heap_t mm_heap_empty;
extern extent_t mm_page_empty;
void thread_heap_process_init(void);
thread_heap_t *thread_heap_current(void);
void *thread_heap_malloc_slow(thread_heap_t *th, size_t size);
void *thread_heap_malloc_aligned(size_t size, size_t align, bool zero);
void thread_heap_free_slow(void *p, const char *call);
void thread_heap_free_remote(void *p, extent_t *page, const char *call);
void thread_heap_page_empty(thread_heap_t *th, extent_t *page);
bool thread_heap_is_valid(thread_heap_t *th, char *why, size_t why_size);
void thread_heap_init_fresh(thread_heap_t *th, local_heap_t *local);
void thread_heap_abandon(thread_heap_t *th);
void thread_heap_collect(void);
size_t thread_heap_usable_size(const void *p, const char *call);
void *thread_heap_realloc(void *p, size_t size);
extent_t *thread_heap_lookup(const void *p, const char *call);

/* The fast paths (see thread_heap.c for the call tree).  Force-inlined into
 * api.c and override.c; the _slow functions they fall back to are noinline. */
MM_INLINE void *thread_heap_malloc_fast(size_t size) {
  thread_heap_t *th = mm_thread_heap;
  if (likely(size <= MM_DIRECT_MAX)) {
    extent_t *page = th->direct[(size + 15) >> 4];
    block_t *b = page->free;
    if (likely(b != NULL)) {
      page->free = b->next;
      page->used++;
      b->canary = 0;
      return b;
    }
  }
  return thread_heap_malloc_slow(th, size);
}

MM_INLINE void thread_heap_free_fast(void *p, const char *call) {
  uintptr_t a = (uintptr_t)p;
  if (likely(slot_table_entry(a) == MM_SLOT_HEAP)) {
    extent_t *page = slot_extent_of(slot_of_address(a), a);
    if (likely(atomic_load_relaxed(&page->xowner_tid) == mm_thread_id())) {
      /* A carved block boundary of this page (off < limit, and off a
       * multiple of block_size: Lemire's test, exact for off < 2^32)... */
      uint64_t off = a - page->page_start;
      block_t *b = p;
      uintptr_t canary = a ^ mm_canary_key;
      if (likely(off < atomic_load_relaxed(&page->xlimit) && off * page->magic < page->magic &&
                 b->canary != canary)) { /* ...not already free */
        b->next = page->local_free;
        b->canary = canary;
        page->local_free = b;
        if (likely(--page->used != 0)) return;
        thread_heap_page_empty(mm_thread_heap, page);
        return;
      }
    } else {
      thread_heap_free_remote(p, page, call); /* another thread's page, or odd */
      return;
    }
  }
  thread_heap_free_slow(p, call);
}

/* ---- stats.c ------------------------------------------------------------------------ */
size_t stats_json(char *buf, size_t size);
void stats_print(int fd);

#pragma GCC visibility pop

#endif
