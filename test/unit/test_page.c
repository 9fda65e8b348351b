/* test_page.c — the page layer (page.c, page.h) on pages built by hand from
 * a local heap's page blocks: carving (lazy, MM_EXTEND_BYTES at a time, in
 * address order, up to the capacity), the canary of free blocks, local
 * frees reused before fresh blocks are carved, the block-boundary
 * arithmetic (page_offset_is_block, page_offset_at_block), and the page
 * checker accepting every step and rejecting each corruption with its
 * reason; for the smallest class, a middle one, 4096 bytes, the largest,
 * and one the seed picks.
 *
 * With the argument "secure" (its own ctest, unit_page_secure: it switches
 * the process to secure mode before its first page is made): blocks are
 * carved in a random order, a permutation of the extension that differs
 * from page to page, made of two ascending runs (with "secure2",
 * unit_page_secure2, as MMALLOC_SECURE=2: a uniform shuffle, not two
 * runs); links are stored encoded (block_next decodes them); freed
 * blocks carry the fill pattern; a write after free is caught when the
 * block is handed out again (in a child process: it aborts); a fresh
 * list (blocks never handed out) is neither filled nor checked past the
 * canary and link.
 *
 * Single-threaded; the pages are owned by a stand-in thread heap, as in
 * test_local_heap.c.  Not a benchmark.
 *
 * usage: unit_page [SEED] [secure|secure2] */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "unit.h"
#include "local_heap.h"
#include "page.h"
#include "thread_heap.h"

#define FILL 0xDF /* a byte of mm_fill_word (options.c) */
#define MAX_CAPACITY 4096 /* of any class: 64 KiB of 16-byte blocks */



static bool page_valid(const extent_t *page) { return page_is_valid(page, why, sizeof(why)); }


/* ---- pages by hand: claimed from local heap 0 by a stand-in owner ------------------ */

static thread_heap_t stand_in;

static void claim(extent_t *page, void *arg) {
  page_init(page, *(unsigned *)arg);
  page_set_owner(page, &stand_in, 1);
}

static extent_t *take_page(unsigned cls) {
  extent_t *page = local_heap_take_page_block(&mm_heaps[0], mm_size_classes[cls].ndatablocks, 1, 0, claim, &cls);
  REQUIRE("a page block from the local heap", page != NULL);
  return page;
}

/* An empty page goes home (as thread_heap_retire_page would). */
static void give_back(extent_t *page) {
  REQUIRE("a page goes back empty", page->used == 0);
  local_heap_t *home = local_heap_of_extent(page);
  local_heap_lock(home);
  page_clear_owner(page);
  local_heap_cache_page_locked(home, page);
  local_heap_unlock(home);
}

/* The owner frees b: what the free paths do (the fast path: canary, push;
 * the checked modes: block_on_free fills it too). */
static void free_block(extent_t *page, block_t *b) {
  if (mm_slow_only) block_on_free(page, b);
  else b->canary = block_canary_of(b);
  page_push_local(page, b);
  page->used--;
}

static uintptr_t block_at(const extent_t *page, uint32_t i) {
  return page->page_start + (uintptr_t)i * page->block_size;
}

static uint32_t list_length(const block_t *b) {
  uint32_t n = 0;
  for (; b && n < 1u << 20; b = block_next(b)) n++;
  return n;
}

static block_t *list_last(block_t *b) {
  while (block_next(b)) b = block_next(b);
  return b;
}

/* page_offset_is_block (the start of a carved block) and
 * page_offset_at_block (a block boundary) against the geometry, for every
 * offset of the first blocks, every offset around the end of the carved
 * part and the last block's, and a few wild ones. */
static int offsets_bad(const extent_t *page) {
  uint64_t bs = page->block_size, lim = (uint64_t)page->reserved * bs;
  uint64_t end = (uint64_t)page->capacity * bs;
  int bad = 0;
#define OFFSET_BAD(off)                                                                     \
  (page_offset_is_block(page, off) != ((off) < lim && (off) % bs == 0) ||                   \
   page_offset_is_block_own(page, off) != page_offset_is_block(page, off) ||                \
   page_offset_at_block(page, off) != ((off) % bs == 0))
  for (uint64_t off = 0; off < 4 * bs && off < end; off++) bad += OFFSET_BAD(off);
  for (uint64_t off = lim > 2 * bs ? lim - 2 * bs : 0; off < lim + 2 * bs; off++) bad += OFFSET_BAD(off);
  for (uint64_t off = end - bs; off < end + 2 * bs; off++) bad += OFFSET_BAD(off);
#undef OFFSET_BAD
  /* below the page (the offset wraps) and far beyond it */
  uint64_t wild[] = {(uint64_t)-1, (uint64_t)-16, (uint64_t)-(int64_t)bs, end, end + bs, (uint64_t)1 << 31};
  for (size_t i = 0; i < sizeof(wild) / sizeof(wild[0]); i++)
    if (page_offset_is_block(page, wild[i])) bad++;
  return bad;
}

/* ---- carving, pop and push, in plain mode ------------------------------------------- */

/* Pop every block of the free list; they must come out in address order
 * from block `first`.  Appends them to out. */
static void pop_all_in_order(extent_t *page, uint32_t first, block_t **out, uint32_t *nout) {
  int bad_order = 0, bad_canary = 0, bad_valid = 0;
  uint32_t i = first;
  while (page->free) {
    uint32_t used = page->used;
    block_t *b = page_pop(page);
    if ((uintptr_t)b != block_at(page, i++)) bad_order++;
    if (block_is_free(b) || b->canary != 0) bad_canary++;
    if (page->used != used + 1) bad_valid++;
    if (!page_valid(page)) bad_valid++;
    out[(*nout)++] = b;
  }
  CHECK("pop: blocks come out in address order", bad_order == 0);
  CHECK("pop: a popped block has no canary", bad_canary == 0);
  CHECK("pop: used counts it, checker accepts", bad_valid == 0);
}

static void test_carving(unsigned cls) {
  const size_class_t *sc = &mm_size_classes[cls];
  extent_t *page = take_page(cls);
  uint32_t bs = sc->size, cap = sc->capacity;
  uint32_t per = MM_EXTEND_BYTES / bs ? MM_EXTEND_BYTES / bs : 1;
  fprintf(stderr, "  class %u: %u bytes, capacity %u, %u per extension, %u datablocks\n", cls, bs, cap,
          per, sc->ndatablocks);
  CHECK("init: a PAGE of its class", page->kind == MM_EXTENT_PAGE && page->size_class == cls);
  CHECK("init: geometry", page->block_size == bs && page->capacity == cap && page->magic == sc->magic &&
                              page->page_start == page->node.start &&
                              page->node.ndatablocks == sc->ndatablocks);
  CHECK("init: owned by the stand-in", page_owner(page) == &stand_in && page_owner_is(page, 1, false));
  CHECK("init: nothing carved", page->reserved == 0 && atomic_load_relaxed(&page->xcarved) == 0);
  CHECK("init: a block step above 0", page_step(page) != 0 && page_step(page) == sc->magic * bs);
  CHECK("init: empty lists, nothing used", !page->free && !page->local_free && page->used == 0);
  bool ok = page_valid(page);
  if (!ok) fprintf(stderr, "  init: %s\n", why);
  CHECK("init: checker accepts", ok);
  CHECK("init: offsets (nothing carved)", offsets_bad(page) == 0);

  /* the blocks handed out (no malloc here: the test does not link the
   * allocator's malloc, and keeps it that way) */
  static block_t *out[MAX_CAPACITY];
  REQUIRE("capacity fits the test's array", cap <= MAX_CAPACITY);
  uint32_t nout = 0, extensions = 0;
  int bad_carve = 0, bad_list = 0, bad_canary = 0, bad_valid = 0, bad_lazy = 0, bad_local = 0,
      bad_offsets = 0;
  for (;;) {
    uint32_t r = page->reserved;
    if (page->free || page->local_free) bad_lazy++;
    bool more = page_refill(page);
    if (r == cap) {
      CHECK("full: page_refill returns false", !more);
      CHECK("full: and carves nothing", page->reserved == cap && !page->free);
      break;
    }
    extensions++;
    uint32_t n = per < cap - r ? per : cap - r;
    if (!more || page->reserved != r + n) bad_carve++;
    if (atomic_load_relaxed(&page->xcarved) != (uint64_t)page->reserved * page_step(page)) bad_carve++;
    /* the new free list: the carved blocks, in address order, each free */
    uint32_t i = 0;
    for (block_t *b = page->free; b && i <= n; b = block_next(b), i++) {
      if ((uintptr_t)b != block_at(page, r + i)) bad_list++;
      if (!block_is_free(b)) bad_canary++;
    }
    if (i != n) bad_list++;
    if (!page_valid(page)) bad_valid++;
    bad_offsets += offsets_bad(page);
    /* lazy: with blocks on the free list, a refill carves nothing */
    block_t *head = page->free;
    if (!page_refill(page) || page->free != head || page->reserved != r + n) bad_lazy++;
    pop_all_in_order(page, r, out, &nout);
    /* local frees: reused before anything is carved */
    if (nout >= 2) {
      uint32_t k1 = (uint32_t)(next_rand() % nout), k2 = (uint32_t)(next_rand() % (nout - 1));
      if (k2 >= k1) k2++;
      block_t *x = out[k1], *y = out[k2];
      uint32_t used = page->used;
      free_block(page, x);
      free_block(page, y);
      if (!block_is_free(x) || !block_is_free(y) || page->used != used - 2) bad_local++;
      if (page->local_free != y || block_next(y) != x || block_next(x) != NULL) bad_local++;
      if (!page_valid(page)) bad_valid++;
      if (!page_refill(page) || page->free != y || page->local_free || page->reserved != r + n) bad_local++;
      if (!page_valid(page)) bad_valid++;
      if (page_pop(page) != y || page_pop(page) != x || page->free || page->reserved != r + n ||
          page->used != used)
        bad_local++;
      if (!page_valid(page)) bad_valid++;
    }
  }
  CHECK("refill: carves min(MM_EXTEND_BYTES / size, what is left), xcarved follows", bad_carve == 0);
  CHECK("refill: the carved blocks, in address order", bad_list == 0);
  CHECK("refill: every carved free block carries its canary", bad_canary == 0);
  CHECK("refill: only carves when both lists are empty", bad_lazy == 0);
  CHECK("local frees come back first, last freed first", bad_local == 0);
  CHECK("checker accepts after every step", bad_valid == 0);
  CHECK("offsets agree with the geometry after every refill", bad_offsets == 0);
  CHECK("as many extensions as the capacity needs", extensions == (cap + per - 1) / per);
  CHECK("full: everything carved and used", page->reserved == cap && page->used == cap && nout == cap &&
                                               atomic_load_relaxed(&page->xcarved) == (uint64_t)cap * page_step(page));
  CHECK("full: offsets", offsets_bad(page) == 0);
  /* a full page with a local free: the refill takes it */
  block_t *x = out[next_rand() % nout];
  free_block(page, x);
  CHECK("full page, a local free: page_refill returns it", page_refill(page) && page->free == x &&
                                                              page->reserved == cap);
  CHECK("full page, a local free: popped again", page_pop(page) == x && !page->free);
  ok = page_valid(page);
  CHECK("full: checker accepts", ok);

  /* ---- corruptions: a free list, a local free list, blocks in use ---- */
  /* free all but the first block (in a shuffled order), refill, then
   * pop two and free them again: free has cap - 3 blocks, local_free 2 */
  for (uint32_t i = nout - 1; i > 1; i--) {
    uint32_t j = 1 + (uint32_t)(next_rand() % i);
    block_t *t = out[i];
    out[i] = out[j];
    out[j] = t;
  }
  for (uint32_t i = 1; i < nout; i++) free_block(page, out[i]);
  nout = 1;
  CHECK("corruptions: refill", page_refill(page) && page->used == 1);
  block_t *p1 = page_pop(page), *p2 = page_pop(page);
  free_block(page, p1);
  free_block(page, p2);
  REQUIRE("corruptions: both lists", list_length(page->free) == cap - 3 && list_length(page->local_free) == 2);
  ok = page_valid(page);
  if (!ok) fprintf(stderr, "  corruptions: %s\n", why);
  REQUIRE("corruptions: checker accepts the page", ok);

  block_t *head = page->free;
  block_t *second = block_next(head);
  block_t *mid = head;
  for (uint32_t i = 0, m = (uint32_t)(next_rand() % (cap - 3)); i < m; i++) mid = block_next(mid);
  block_t *saved_link = mid->next; /* raw: restored as stored */
  block_t *outside_past = (block_t *)(page->page_start + (uintptr_t)cap * bs);
  block_t *outside_below = (block_t *)(page->page_start - bs);
  block_t on_stack;
  block_t *misaligned = (block_t *)((uintptr_t)second + 8);
  NEGATIVE("link past the carved blocks", page_valid(page), { block_set_next(mid, outside_past); },
           { mid->next = saved_link; }, "outside the page or misaligned");
  NEGATIVE("link below the page", page_valid(page), { block_set_next(mid, outside_below); },
           { mid->next = saved_link; }, "outside the page or misaligned");
  NEGATIVE("link to the stack", page_valid(page), { block_set_next(mid, &on_stack); },
           { mid->next = saved_link; }, "outside the page or misaligned");
  NEGATIVE("misaligned link", page_valid(page), { block_set_next(mid, misaligned); },
           { mid->next = saved_link; }, "outside the page or misaligned");
  block_t *tail = list_last(page->free);
  block_t *saved_tail = tail->next;
  NEGATIVE("free list cycle", page_valid(page), { block_set_next(tail, head); },
           { tail->next = saved_tail; }, "a cycle");
  NEGATIVE("free list points to itself", page_valid(page), { block_set_next(tail, tail); },
           { tail->next = saved_tail; }, "a cycle");
  block_t *lt = list_last(page->local_free);
  block_t *saved_lt = lt->next;
  NEGATIVE("local free list cycle", page_valid(page), { block_set_next(lt, page->local_free); },
           { lt->next = saved_lt; }, "a cycle");
  NEGATIVE("local free list link outside", page_valid(page), { block_set_next(lt, outside_past); },
           { lt->next = saved_lt; }, "outside the page or misaligned");
  /* the local list's tail joins the free list's last block: counted twice */
  NEGATIVE("the lists share a block", page_valid(page), { block_set_next(lt, tail); },
           { lt->next = saved_lt; }, "!= reserved");
  uintptr_t saved_canary = mid->canary;
  NEGATIVE("free block lost its canary", page_valid(page), { mid->canary = 0; },
           { mid->canary = saved_canary; }, "lost its canary");
  NEGATIVE("free block's canary of another block", page_valid(page),
           { mid->canary = block_canary_of(second == mid ? head : second); }, { mid->canary = saved_canary; },
           "lost its canary");
  saved_canary = page->local_free->canary;
  NEGATIVE("local free block lost its canary", page_valid(page), { page->local_free->canary ^= 1; },
           { page->local_free->canary = saved_canary; }, "lost its canary");
  NEGATIVE("used one too many", page_valid(page), { page->used++; }, { page->used--; }, "!= reserved");
  NEGATIVE("used one too few", page_valid(page), { page->used--; }, { page->used++; }, "!= reserved");
  /* a page a forked child inherited from another thread: its count may be
   * one off (a fast path torn by the fork), and only the count */
  page->flags |= MM_EXTENT_FORKED;
  page->used++;
  CHECK("a FORKED page's count may be one off", page_valid(page));
  page->used--;
  NEGATIVE("a FORKED page's geometry is still checked", page_valid(page),
           { page->reserved++; }, { page->reserved--; }, "geometry");
  page->flags &= (uint8_t)~MM_EXTENT_FORKED;
  uint64_t xl = atomic_load_relaxed(&page->xcarved), step = page_step(page);
  NEGATIVE("xcarved a block too high", page_valid(page), { atomic_store_relaxed(&page->xcarved, xl + step); },
           { atomic_store_relaxed(&page->xcarved, xl); }, "geometry inconsistent");
  NEGATIVE("xcarved one too low", page_valid(page), { atomic_store_relaxed(&page->xcarved, xl - 1); },
           { atomic_store_relaxed(&page->xcarved, xl); }, "geometry inconsistent");
  NEGATIVE("reserved above the capacity", page_valid(page),
           { page->reserved++; atomic_store_relaxed(&page->xcarved, xl + step); },
           { page->reserved--; atomic_store_relaxed(&page->xcarved, xl); }, "geometry inconsistent");
  NEGATIVE("a magic that is not its class's", page_valid(page), { page->magic--; }, { page->magic++; },
           "geometry inconsistent");
  NEGATIVE("page_start off node.start", page_valid(page), { page->page_start += bs; },
           { page->page_start -= bs; }, "geometry inconsistent");
  NEGATIVE("not a page", page_valid(page), { page->kind = MM_EXTENT_LARGE; },
           { page->kind = MM_EXTENT_PAGE; }, "is not a page");

  /* back home: every block freed */
  free_block(page, out[0]);
  CHECK("end: every block free", page->used == 0);
  ok = page_valid(page);
  CHECK("end: checker accepts", ok);
  give_back(page);
}

/* ---- secure mode -------------------------------------------------------------------- */

/* The order of the page's free list as block indices; checks that it is a
 * permutation of blocks [first, first + n), each at a block boundary,
 * whose stored links are encoded.  Returns the number of problems. */
static int secure_list(const extent_t *page, uint32_t first, uint32_t n, uint16_t *order) {
  int bad = 0;
  uint8_t seen[MM_EXTEND_BYTES / 16] = {0};
  uint32_t i = 0;
  for (block_t *b = page->free; b; b = block_next(b), i++) {
    if (i >= n) return bad + 1;
    uint64_t off = (uintptr_t)b - block_at(page, first);
    if (off >= (uint64_t)n * page->block_size || off % page->block_size) return bad + 1;
    uint32_t k = (uint32_t)(off / page->block_size);
    if (seen[k]++) bad++;
    order[i] = (uint16_t)k;
    /* the stored link is not the pointer: it is xor'ed with the key */
    uintptr_t raw = (uintptr_t)b->next, dec = (uintptr_t)block_next(b);
    if (raw == dec || (raw ^ dec) != block_link_key(b)) bad++;
    if (!block_is_free(b)) bad++;
  }
  return bad + (i != n);
}

static bool identity(const uint16_t *order, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (order[i] != i) return false;
  return true;
}

/* MMALLOC_SECURE=1's order: two ascending runs, one after the other (at
 * most one step down). */
static bool two_ascending_runs(const uint16_t *order, uint32_t n) {
  uint32_t down = 0;
  for (uint32_t i = 1; i < n; i++) down += order[i] < order[i - 1];
  return down <= 1;
}

static int secure_level; /* options.secure of the run: 1 two lists, 2 a uniform shuffle */

/* In a child process: pop the head of the free list after `damage` wrote
 * into it; returns the child's stderr (the abort message) and status.
 * The child is made by the raw system call, without the allocator's fork
 * handlers: the pages' owner is a stand-in no registry knows, which the
 * handlers' MM_DEBUG 3 census would call lost. */
static pid_t raw_fork(void) {
#ifdef SYS_fork
  return (pid_t)syscall(SYS_fork);
#else
  return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
}

static int pop_in_child(extent_t *page, void (*damage)(block_t *), char *msg, size_t msg_size) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  fflush(stderr);
  pid_t pid = raw_fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(fd[1], 2);
    close(fd[0]);
    damage(page->free);
    page_pop(page);
    _exit(0);
  }
  close(fd[1]);
  size_t n = 0;
  ssize_t k;
  while (n + 1 < msg_size && (k = read(fd[0], msg + n, msg_size - 1 - n)) > 0) n += (size_t)k;
  msg[n] = 0;
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

static void damage_none(block_t *b) { (void)b; }
static void damage_byte_20(block_t *b) { ((unsigned char *)b)[20] ^= 0x40; }
static void damage_last_byte(block_t *b) { ((unsigned char *)b)[255] = 0; }
static void damage_canary(block_t *b) { b->canary ^= 0x100; }
static void damage_link(block_t *b) { b->next = (block_t *)((uintptr_t)b->next ^ 0x1000000); }

static void test_secure_class(unsigned cls) {
  const size_class_t *sc = &mm_size_classes[cls];
  uint32_t bs = sc->size, n = MM_EXTEND_BYTES / bs;
  REQUIRE("secure: a class with at least 16 blocks per extension", n >= 16);
  fprintf(stderr, "  secure, class %u: %u bytes, %u per extension\n", cls, bs, n);
  extent_t *a = take_page(cls), *b = take_page(cls);
  CHECK("secure: the page block has a guard datablock",
        (a->flags & MM_EXTENT_GUARD) && a->node.ndatablocks == sc->ndatablocks + 1 &&
            (size_t)a->capacity * bs <= (size_t)sc->ndatablocks << MM_DATABLOCK_SHIFT);
  CHECK("secure: owner word tagged slow", atomic_load_relaxed(&a->xowner_tid) == (1 | MM_OWNER_SLOW));
  uint16_t oa[MM_EXTEND_BYTES / 16], ob[MM_EXTEND_BYTES / 16], oa2[MM_EXTEND_BYTES / 16];
  CHECK("secure: refill", page_refill(a) && a->reserved == n);
  CHECK("secure: the first extension is a permutation of its blocks, encoded",
        secure_list(a, 0, n, oa) == 0);
  CHECK("secure: ... a fresh list (never handed out: not filled, not checked)",
        (a->flags & MM_EXTENT_FRESH) != 0);
  CHECK("secure: ... not in address order", !identity(oa, n));
  if (secure_level == 1)
    CHECK("secure: ... two ascending runs (MMALLOC_SECURE=1)", two_ascending_runs(oa, n));
  else /* a uniform shuffle of n >= 16 blocks is two runs with odds under 1e-8 */
    CHECK("secure: ... a shuffle, not two ascending runs (MMALLOC_SECURE=2)", !two_ascending_runs(oa, n));
  bool ok = page_valid(a);
  if (!ok) fprintf(stderr, "  secure: %s\n", why);
  CHECK("secure: checker accepts (it decodes the links)", ok);
  CHECK("secure: refill of another page", page_refill(b) && b->reserved == n);
  CHECK("secure: its order is a permutation too", secure_list(b, 0, n, ob) == 0);
  CHECK("secure: ... of the level's shape", two_ascending_runs(ob, n) == (secure_level == 1));
  CHECK("secure: two pages, two orders", memcmp(oa, ob, n * sizeof(oa[0])) != 0);
  /* a plain (unencoded) link is garbage to the checker */
  block_t *h = a->free, *saved = h->next;
  NEGATIVE("secure: an unencoded link", page_valid(a), { h->next = block_next(h); }, { h->next = saved; },
           "outside the page or misaligned");
  uintptr_t saved_canary = h->canary;
  NEGATIVE("secure: a lost canary", page_valid(a), { h->canary = 0; }, { h->canary = saved_canary; },
           "lost its canary");
  /* pop the whole extension: the blocks come out in the list's order */
  block_t *popped[MM_EXTEND_BYTES / 16];
  int bad = 0;
  for (uint32_t i = 0; i < n; i++) {
    block_t *x = page_pop(a);
    popped[i] = x;
    if ((uintptr_t)x != block_at(a, oa[i]) || block_is_free(x) || a->used != i + 1) bad++;
  }
  CHECK("secure: pops follow the shuffled order, clear the canary", bad == 0 && !a->free);
  ok = page_valid(a);
  CHECK("secure: checker accepts after the pops", ok);
  /* the second extension: blocks [n, 2n), in another order */
  CHECK("secure: second refill", page_refill(a) && a->reserved == 2 * n);
  CHECK("secure: second extension a permutation of the next blocks", secure_list(a, n, n, oa2) == 0);
  CHECK("secure: ... in another order than the first", memcmp(oa, oa2, n * sizeof(oa[0])) != 0);
  /* a freed block is filled again, carries its canary, links encoded */
  block_t *x = popped[0], *y = popped[1];
  memset(x, 0x11, bs);
  memset(y, 0x22, bs);
  free_block(a, x);
  free_block(a, y);
  int unfilled = 0;
  for (uint32_t j = sizeof(block_t); j < bs; j++)
    unfilled += ((unsigned char *)x)[j] != FILL || ((unsigned char *)y)[j] != FILL;
  CHECK("secure: a freed block is filled", unfilled == 0);
  CHECK("secure: a freed block carries its canary", block_is_free(x) && block_is_free(y));
  CHECK("secure: local links are encoded too",
        block_next(y) == x && (uintptr_t)y->next != (uintptr_t)x && block_next(x) == NULL && x->next != NULL);
  ok = page_valid(a);
  CHECK("secure: checker accepts the local frees", ok);
  /* drain the second extension, then the local frees come back first */
  block_t *popped2[MM_EXTEND_BYTES / 16];
  for (uint32_t i = 0; i < n; i++) popped2[i] = page_pop(a);
  CHECK("secure: local frees before fresh blocks", page_refill(a) && a->free == y && a->reserved == 2 * n);
  CHECK("secure: ... and that list is not fresh: its fills are checked", !(a->flags & MM_EXTENT_FRESH));
  CHECK("secure: a filled block passes the write-after-free check", page_pop(a) == y && a->free == x);

  /* a write after free is caught when the block is handed out again
   * (x, filled and linked when it was freed, heads the free list) */
  char msg[512];
  int st = pop_in_child(a, damage_none, msg, sizeof(msg));
  CHECK("secure: an intact free block pops (child exits 0)", WIFEXITED(st) && WEXITSTATUS(st) == 0);
  if (bs > 32) {
    st = pop_in_child(a, damage_byte_20, msg, sizeof(msg));
    CHECK("secure: a byte written after free aborts the pop",
          WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT &&
              strstr(msg, "written after it was freed (byte 20 changed)"));
    if (verbose) fprintf(stderr, "  child: %s", msg);
  }
  if (bs == 256) {
    st = pop_in_child(a, damage_last_byte, msg, sizeof(msg));
    CHECK("secure: the last byte too", WIFSIGNALED(st) && strstr(msg, "(byte 255 changed)"));
  }
  st = pop_in_child(a, damage_canary, msg, sizeof(msg));
  CHECK("secure: a changed canary aborts the pop", WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT &&
                                                       strstr(msg, "(byte 8 changed)"));
  st = pop_in_child(a, damage_link, msg, sizeof(msg));
  CHECK("secure: a changed link aborts the pop", WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT &&
                                                     strstr(msg, "(byte 0 changed)"));
  CHECK("secure: the parent's page is untouched", a->free == x && block_next(x) == NULL && page_valid(a));

  /* home: every block still handed out is freed */
  free_block(a, y);
  for (uint32_t i = 2; i < n; i++) free_block(a, popped[i]);
  for (uint32_t i = 0; i < n; i++) free_block(a, popped2[i]);
  ok = page_valid(a);
  CHECK("secure: every block back", a->used == 0 && ok);
  give_back(a);
  /* b's list is fresh: bytes past the two words are not checked there
   * (nobody can have freed those blocks), the canary and link still are */
  if (bs > 32) {
    st = pop_in_child(b, damage_byte_20, msg, sizeof(msg));
    CHECK("secure: a fresh block's bytes are not checked (child exits 0)",
          WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  st = pop_in_child(b, damage_canary, msg, sizeof(msg));
  CHECK("secure: a fresh block's changed canary aborts the pop",
        WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(msg, "(byte 8 changed)"));
  st = pop_in_child(b, damage_link, msg, sizeof(msg));
  CHECK("secure: a fresh block's changed link aborts the pop",
        WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(msg, "(byte 0 changed)"));
  /* b: pop its extension through the checks, free it all */
  for (uint32_t i = 0; i < n; i++) popped[i] = page_pop(b);
  for (uint32_t i = 0; i < n; i++) free_block(b, popped[i]);
  ok = page_valid(b);
  CHECK("secure: the second page drained and freed", b->used == 0 && ok);
  give_back(b);
}

static void test_secure(uint64_t seed, int level) {
  /* The modes, set before the first page (and before the first slot: the
   * data area of a secure slot ends a guard datablock early). */
  uint32_t slots = 0;
  for (uint32_t i = 0; i < mm_nheaps; i++) slots += mm_heaps[i].nslots;
  REQUIRE("secure: no slot yet (no page made in plain mode)", slots == 0);
  options.secure = secure_level = level;
  mm_slow_only = true;
  mm_list_key = (seed * 0x9E3779B97F4A7C15ull) | 1 | ((uintptr_t)1 << 63);
  test_secure_class(0);  /* 16 bytes: 256 per extension, nothing to fill */
  test_secure_class(11); /* 256 bytes: 16 per extension */
  test_secure_class(4);  /* 80 bytes: 51 per extension */
}

/* Secure mode's fill of a freed block's body and its check on reuse
 * (page.h: block_fill_body, block_body_changed), for every class's size up
 * to 1 KiB and a big one: the fill covers every body byte and nothing past
 * the block; the check passes on a filled body and, for every body byte
 * changed alone, reports that byte's offset exactly. */
static void test_fill_check(void) {
  static uint8_t buf[8192 + 64] __attribute__((aligned(64)));
  int cases = 0, missed = 0, misplaced = 0, spilled = 0, false_alarm = 0;
  for (unsigned cls = 0; cls < MM_CLASSES; cls++) {
    uint32_t bs = mm_size_classes[cls].size;
    if (bs > 1024 && bs != 4096) continue;
    block_t *b = (block_t *)buf;
    memset(buf, 0x5A, sizeof buf);
    block_fill_body(b, bs);
    for (uint32_t j = sizeof(block_t); j < bs; j++) spilled += buf[j] != block_fill_byte();
    for (uint32_t j = 0; j < sizeof(block_t); j++) spilled += buf[j] != 0x5A;
    for (uint32_t j = bs; j < bs + 64; j++) spilled += buf[j] != 0x5A;
    false_alarm += block_body_changed(b, bs) != SIZE_MAX;
    for (uint32_t off = 0; off + sizeof(block_t) < bs; off++) {
      uint8_t *at = buf + sizeof(block_t) + off;
      *at ^= 0x41;
      size_t got = block_body_changed(b, bs);
      missed += got == SIZE_MAX;
      misplaced += got != SIZE_MAX && got != off;
      *at ^= 0x41;
      cases++;
    }
  }
  fprintf(stderr, "  fill and check: %d single-byte writes into freed bodies\n", cases);
  CHECK("fill: every body byte, nothing before or past the block", spilled == 0);
  CHECK("check: a filled body passes", false_alarm == 0);
  CHECK("check: every changed byte is caught", missed == 0);
  CHECK("check: ... and named by its offset", misplaced == 0);
}

int main(int argc, char **argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x9a9e5eedULL;
  int level = argc <= 2                        ? 0
              : strcmp(argv[2], "secure") == 0  ? 1
              : strcmp(argv[2], "secure2") == 0 ? 2
                                                : -1;
  REQUIRE("usage: unit_page [SEED] [secure|secure2]", level >= 0);
  bool secure = level > 0;
  verbose = true;
  rng = seed | 1;
  fprintf(stderr, "unit_page: seed 0x%llx%s\n", (unsigned long long)seed, secure ? ", secure" : "");
  thread_heap_process_init();
  REQUIRE("the process starts in plain mode", !mm_slow_only && options.secure == 0 && mm_list_key == 0);
  test_fill_check();
  if (secure) {
    test_secure(seed, level);
  } else {
    unsigned classes[5] = {0, MM_CLASSES / 2, size_class_of(4096), MM_CLASSES - 1,
                           (unsigned)(next_rand() % MM_CLASSES)};
    REQUIRE("a class of 4096 bytes", mm_size_classes[classes[2]].size == 4096);
    for (int i = 0; i < 5; i++) {
      test_carving(classes[i]);
      verbose = getenv("UNIT_PAGE_VERBOSE") != NULL; /* the reasons: first class only */
    }
  }
  local_heap_t *h = &mm_heaps[0];
  local_heap_lock(h);
  bool ok = local_heap_is_valid(h, why, sizeof(why));
  local_heap_unlock(h);
  if (!ok) fprintf(stderr, "local heap: %s\n", why);
  CHECK("the local heap is valid at the end", ok);
  return check_summary(level == 2 ? "unit_page secure2" : secure ? "unit_page secure" : "unit_page");
}
