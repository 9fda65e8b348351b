/* remap_hole.c — a huge block that realloc moves with mremap leaves no hole
 * in its old range, not even for a moment.
 *
 * The race this pins down: a move used to be a plain mremap, which unmaps
 * the range the pages left; mmalloc then cleared the old mapping's
 * slot-table entries and unmapped the whole old mapping.  Another thread
 * that mapped memory into the hole in between lost it (a SIGSEGV, or its
 * bytes gone), or, when the hole was at a slot boundary and it put a huge
 * block of its own there, lost that block's table entries (its free()
 * reported "invalid pointer").  realloc-grow at 32 threads hit it about
 * twice in 100 runs.  Moves now keep the old range mapped
 * (MREMAP_DONTUNMAP) until mmalloc unmaps it whole.
 *
 * Deterministic: the fault-injection build calls a hook right after each
 * move (mm_test_remap_hook_set), and the hook plays the other thread: it
 * tries to map memory exactly at the range the pages left (MAP_FIXED_NOREPLACE
 * fails when anything is still mapped there).  Each move path is driven:
 *   move   a huge block that cannot grow where it is (a mapping of the
 *          test's own blocks the address space behind it) moves to a new
 *          reservation: its data, then its header
 *   onto   a huge block that outgrows its mapping moves onto a freed mapping
 *          waiting in the huge cache
 * Built only in MM_FAULT_INJECTION trees (label trust). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "mmalloc.h"

void mm_test_remap_hook_set(void (*hook)(void *old, size_t size));

#define MiB ((size_t)1 << 20)

static int moves, holes;

static void hook(void *old, size_t size) {
  moves++;
  void *p = mmap(old, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == old) {
    holes++; /* a hole: another thread could have taken it */
    memset(p, 0x77, size);
    /* left mapped on purpose: the old code then unmapped it under us */
  } else if (p != MAP_FAILED) {
    munmap(p, size); /* a kernel that took the address as a hint */
  }
}

static uint64_t word_at(size_t off) { return off * 0x9e3779b97f4a7c15ull + 1; }

static unsigned char *grow(unsigned char *v, size_t from, size_t to) {
  while (from < to) {
    unsigned char *w = mm_realloc(v, 2 * from);
    REQUIRE("realloc grows", w != NULL);
    for (size_t off = from; off < 2 * from; off += 4096) memcpy(w + off, &(uint64_t){word_at(off)}, 8);
    v = w;
    from *= 2;
  }
  return v;
}

static int intact(const unsigned char *v, size_t size) {
  for (size_t off = 4096; off < size; off += 4096) {
    uint64_t x;
    memcpy(&x, v + off, 8);
    if (x != word_at(off)) return 0;
  }
  return 1;
}

int main(void) {
  CHECK("a long purge delay", mm_option_set("purge_delay_ms", 60000) == 0);
  CHECK("no purge thread", mm_option_set("purge_thread_mib", 0) == 0);
  mm_collect(); /* an empty huge cache */

  /* move: a 4 MiB huge block (its own mapping since 1 MiB), then a mapping
   * of ours right behind its mapping, then growth to 16 MiB */
  unsigned char *v = mm_malloc(1 * MiB);
  REQUIRE("malloc(1 MiB)", v != NULL);
  for (size_t off = 0; off < MiB; off += 4096) memcpy(v + off, &(uint64_t){word_at(off)}, 8);
  v = grow(v, MiB, 4 * MiB);
  /* the mapping is 2 MiB of header and the block: it ends 4 MiB after v */
  void *blocker = mmap(v + 4 * MiB, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  CHECK("move: the address space behind the block could be taken", blocker == (void *)(v + 4 * MiB));
  mm_test_remap_hook_set(hook);
  moves = holes = 0;
  unsigned char *w = grow(v, 4 * MiB, 16 * MiB);
  mm_test_remap_hook_set(NULL);
  fprintf(stderr, "remap_hole move: %d moves, %d left a hole\n", moves, holes);
  CHECK("move: the block moved by mremap (data and header)", moves >= 2);
  CHECK("move: no move left a hole in its old range", holes == 0);
  CHECK("move: every byte moved", intact(w, 16 * MiB));
  mm_free(w);
  if (blocker != MAP_FAILED) munmap(blocker, 4096);

  /* onto: a freed 64 MiB mapping in the huge cache, and a 4 MiB block that
   * cannot grow where it is */
  mm_collect();
  unsigned char *x = mm_malloc(64 * MiB);
  REQUIRE("malloc(64 MiB)", x != NULL);
  memset(x, 1, 64 * MiB);
  v = mm_malloc(1 * MiB);
  REQUIRE("malloc(1 MiB)", v != NULL);
  for (size_t off = 0; off < MiB; off += 4096) memcpy(v + off, &(uint64_t){word_at(off)}, 8);
  v = grow(v, MiB, 4 * MiB); /* x is live: v is a mapping of its own */
  mm_free(x);                /* now cached */
  mm_test_remap_hook_set(hook);
  moves = holes = 0;
  w = grow(v, 4 * MiB, 8 * MiB);
  mm_test_remap_hook_set(NULL);
  fprintf(stderr, "remap_hole onto: %d moves, %d left a hole\n", moves, holes);
  CHECK("onto: the block moved onto the cached mapping", w == x && moves >= 1);
  CHECK("onto: the move left no hole in its old range", holes == 0);
  CHECK("onto: every byte moved", intact(w, 8 * MiB));
  mm_free(w);
  return check_summary("remap_hole");
}
