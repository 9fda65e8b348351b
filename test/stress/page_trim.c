/* page_trim.c — a thread's first page of a class, cut from a recycled page
 * block, does not keep the old owner's memory resident (config.h:
 * MM_PAGE_FIRST_KEEP): only its head stays, the rest goes back to the OS.
 * Its second page of the class keeps all (the class is in demand there).
 *
 * Thread A fills 24 pages of the 16 KiB class (8 blocks in a 128 KiB page,
 * by the rule in src/size_class.c), writes every byte and frees them all:
 * the pages go to the local heap's page cache, resident.  Thread B, new,
 * then takes 16 KiB blocks: its first page is one of those blocks, and
 * mincore must find at most its head (16 KiB) and the block B wrote
 * resident; its second page must be resident whole.
 *
 * Then rounds of short-lived threads that each fill a page's worth of
 * five classes and hand the blocks to the main thread, which frees them
 * (mimalloc-bench's mleak pattern): their first pages, cut from the pages
 * the round before gave back, are carved past their heads, so after the
 * first window of first pages none is trimmed any more (returned_bytes
 * stays where it was: trimming them all would return 48 KiB a page).
 * Then rounds of threads that take one block of each class, as B did:
 * their first pages keep only their heads again.
 *
 * Run with MMALLOC_HEAPS=1 (set by CMakeLists.txt): one page cache.  The
 * purge delay is 60 s and the purge thread off, so nothing else gives
 * blocks back.  Not a benchmark. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "memtest.h"

#define BLOCK ((size_t)16 << 10)
#define PAGE ((size_t)128 << 10)
#define PAGES 24

static size_t resident_pages(const void *p, size_t bytes) {
  unsigned char vec[PAGE / 4096];
  uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
  if (mincore((void *)a, bytes, vec) != 0) return (size_t)-1;
  size_t n = 0;
  for (size_t i = 0; i < bytes / 4096; i++) n += vec[i] & 1;
  return n;
}

static void *thread_a(void *arg) {
  (void)arg;
  static char *blocks[PAGES * 8];
  for (int i = 0; i < PAGES * 8; i++) {
    blocks[i] = mm_malloc(BLOCK);
    REQUIRE("A: malloc(16 KiB)", blocks[i] != NULL);
    memset(blocks[i], 0x5a, BLOCK);
  }
  /* 8 blocks to a page, one after the other (the rule this test assumes) */
  CHECK("A: a page holds 8 blocks of 16 KiB, carved in order",
        blocks[1] == blocks[0] + BLOCK && blocks[7] == blocks[0] + 7 * BLOCK);
  for (int i = 0; i < PAGES * 8; i++) mm_free(blocks[i]);
  return NULL;
}

typedef struct result_s {
  size_t first_resident, second_resident;
  long long returned_before, returned_after;
} result_t;

static void *thread_b(void *arg) {
  result_t *r = arg;
  r->returned_before = stats_number("total.returned_bytes");
  char *first = mm_malloc(BLOCK);
  REQUIRE("B: malloc(16 KiB)", first != NULL);
  memset(first, 1, BLOCK);
  r->returned_after = stats_number("total.returned_bytes");
  /* first is its page's first block (carved in address order) */
  r->first_resident = resident_pages(first, PAGE);
  char *more[8];
  for (int i = 0; i < 8; i++) {
    more[i] = mm_malloc(BLOCK);
    REQUIRE("B: malloc(16 KiB)", more[i] != NULL);
  }
  /* the 8th of these is the first block of B's second page */
  char *second = more[7];
  CHECK("B: its second page is another page", second < first || second >= first + PAGE);
  r->second_resident = resident_pages(second, PAGE);
  for (int i = 0; i < 8; i++) mm_free(more[i]);
  mm_free(first);
  return NULL;
}

/* ---- threads that fill their first pages, then threads that do not ---- */

#define FILL_ROUNDS 16
#define LIGHT_ROUNDS 48
#define THREADS 2
static const size_t sizes[] = {48, 96, 192, 384, 768};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define FILL ((size_t)64 << 10) /* bytes of each class a filling thread takes */

typedef struct worker_s {
  bool fill;
  size_t n;
  void *blocks[NSIZES * (FILL / 48)];
} worker_t;

static void *worker(void *arg) {
  worker_t *w = arg;
  w->n = 0;
  for (size_t k = 0; k < NSIZES; k++) {
    size_t count = w->fill ? FILL / sizes[k] : 1;
    for (size_t i = 0; i < count; i++) {
      char *p = mm_malloc(sizes[k]);
      REQUIRE("worker: malloc", p != NULL);
      memset(p, 0x33, sizes[k]);
      w->blocks[w->n++] = p;
    }
  }
  return NULL; /* exits: its blocks are the main thread's to free */
}

/* returned_bytes over the second half of `rounds` rounds of threads that
 * fill their pages or not */
static long long rounds_returned(bool fill, int rounds) {
  static worker_t w[THREADS];
  long long at_half = 0;
  for (int r = 0; r < rounds; r++) {
    if (r == rounds / 2) at_half = stats_number("total.returned_bytes");
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
      w[i].fill = fill;
      REQUIRE("a worker", pthread_create(&t[i], NULL, worker, &w[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
      for (size_t j = 0; j < w[i].n; j++) mm_free(w[i].blocks[j]);
  }
  return stats_number("total.returned_bytes") - at_half;
}

int main(void) {
  CHECK("a long purge delay", mm_option_set("purge_delay_ms", 60000) == 0);
  CHECK("no purge thread", mm_option_set("purge_thread_mib", 0) == 0);
  CHECK("one local heap (MMALLOC_HEAPS=1)", mm_option_get("heaps") == 1);
  pthread_t t;
  pthread_create(&t, NULL, thread_a, NULL);
  pthread_join(t, NULL);
  result_t r;
  pthread_create(&t, NULL, thread_b, &r);
  pthread_join(t, NULL);
  fprintf(stderr,
          "page_trim: B's first page %zu of %zu datablocks resident, its second %zu; "
          "returned %+lld KiB when the first was taken\n",
          r.first_resident, PAGE / 4096, r.second_resident,
          (r.returned_after - r.returned_before) / 1024);
  CHECK("B's first page keeps only its head and the block B wrote (16 KiB: 4 datablocks)",
        r.first_resident <= 4);
  CHECK("the rest of it was counted as returned",
        r.returned_after - r.returned_before >= (long long)(PAGE - BLOCK));
  CHECK("B's second page of the class keeps the recycled block resident",
        r.second_resident == PAGE / 4096);

  /* A first page trimmed to its 16 KiB head gives 48 KiB of a 64 KiB page
   * back.  Threads that fill their pages: the rounds measured take this
   * many first pages from the local heap.  Threads that take one block of
   * each class adopt, in every other round, the pages the round before
   * left (each holding a block the main thread had not freed yet), and
   * take the rest from the local heap, so half as many. */
  long long fill_all = (long long)(FILL_ROUNDS / 2) * THREADS * NSIZES * (48 << 10);
  long long light_all = (long long)(LIGHT_ROUNDS / 2) * THREADS * NSIZES * (48 << 10) / 2;
  long long fill = rounds_returned(true, FILL_ROUNDS);
  long long light = rounds_returned(false, LIGHT_ROUNDS);
  fprintf(stderr,
          "page_trim: threads that fill their first pages: %lld KiB returned in the last %d rounds "
          "(%lld if every first page were trimmed); threads that take a block of a class: %lld KiB "
          "in the last %d (%lld)\n",
          fill / 1024, FILL_ROUNDS / 2, fill_all / 1024, light / 1024, LIGHT_ROUNDS / 2,
          light_all / 1024);
  CHECK("threads that fill their first pages: those pages keep their blocks whole",
        fill >= 0 && fill < fill_all / 10);
  CHECK("threads that take a block of a class: their first pages keep only the head again",
        light >= light_all / 2);
  return check_summary("page_trim");
}
