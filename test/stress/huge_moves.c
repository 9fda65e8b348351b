/* huge_moves.c — huge blocks that realloc moves (mremap) while other
 * threads map and unmap memory of their own.
 *
 * A move used to leave its old range unmapped for a moment (mremap moves
 * the pages out and unmaps the source) before mmalloc unmapped the whole
 * old mapping and cleared its slot-table entries: another thread's mmap
 * could take the hole in between, and then lost its memory (SIGSEGV, or
 * its bytes gone) or its table entries (its next free() reported "invalid
 * pointer").  realloc-grow at 32 threads hit it in about 2 runs of 100.
 * This test did not reproduce that race in five runs against the racy
 * build (its window is a few instructions wide): trust_remap_hole pins the
 * race down deterministically.  What this one checks is the rest: that
 * huge blocks growing, moving and moving onto cached mappings in several
 * threads at once, beside threads that map and unmap memory of their own
 * and a thread that mallocs and frees huge blocks, keep every byte (it
 * fails if one is lost or a foreign mapping is damaged).
 *
 * Growers: each grows vectors by doubling realloc from 1 MiB to 32 MiB (so
 * every step is a huge block that grows in place, moves, or moves onto a
 * cached mapping), checking a word per page after every step.  Grabbers:
 * each maps 64 KiB to 1 MiB with mmap, fills it, checks it, unmaps it, in a
 * loop (the kernel hands out recently freed ranges first, which is what
 * lands in a hole).  A third kind mallocs and frees huge blocks of its own,
 * so that the slot table changes under the others.
 *
 * usage: huge_moves [ROUNDS] [GROWERS] [GRABBERS]   (default 30 8 4) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "mmalloc.h"

#define MiB ((size_t)1 << 20)

static int rounds = 30;
static atomic_int growers_left;
static atomic_long bad_grower, bad_grabber, bad_freer;

static uint64_t word_at(uint64_t id, size_t off) { return (id * 0x9e3779b97f4a7c15ull) ^ off; }

static void *grower(void *arg) {
  uint64_t id0 = (uint64_t)(uintptr_t)arg << 32;
  for (int r = 0; r < rounds; r++) {
    uint64_t id = id0 | (uint64_t)r;
    size_t size = MiB;
    unsigned char *v = mm_malloc(size);
    if (!v) { atomic_fetch_add(&bad_grower, 1); break; }
    for (size_t off = 0; off < size; off += 4096) memcpy(v + off, &(uint64_t){word_at(id, off)}, 8);
    while (size < 32 * MiB) {
      unsigned char *w = mm_realloc(v, 2 * size);
      if (!w) { atomic_fetch_add(&bad_grower, 1); break; }
      v = w;
      for (size_t off = 0; off < size; off += 4096) {
        uint64_t x;
        memcpy(&x, v + off, 8);
        if (x != word_at(id, off)) { atomic_fetch_add(&bad_grower, 1); break; }
      }
      for (size_t off = size; off < 2 * size; off += 4096)
        memcpy(v + off, &(uint64_t){word_at(id, off)}, 8);
      size *= 2;
    }
    mm_free(v);
  }
  atomic_fetch_sub(&growers_left, 1);
  return NULL;
}

static void *grabber(void *arg) {
  uint64_t s = (uint64_t)(uintptr_t)arg * 2654435761u + 1;
  while (atomic_load(&growers_left) > 0) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    size_t size = (size_t)(16 + (s >> 40) % 241) * 4096; /* 64 KiB .. ~1 MiB */
    unsigned char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) continue;
    for (size_t off = 0; off < size; off += 4096) memcpy(p + off, &(uint64_t){s ^ off}, 8);
    for (size_t off = 0; off < size; off += 4096) {
      uint64_t x;
      memcpy(&x, p + off, 8);
      if (x != (s ^ off)) { atomic_fetch_add(&bad_grabber, 1); break; }
    }
    munmap(p, size);
  }
  return NULL;
}

static void *freer(void *arg) {
  (void)arg;
  while (atomic_load(&growers_left) > 0) {
    unsigned char *p = mm_malloc(40 * MiB);
    if (!p) { atomic_fetch_add(&bad_freer, 1); continue; }
    p[0] = 1;
    p[40 * MiB - 1] = 2;
    if (p[0] != 1 || p[40 * MiB - 1] != 2) atomic_fetch_add(&bad_freer, 1);
    mm_free(p); /* "invalid pointer" and an abort if its table entry was cleared */
  }
  return NULL;
}

int main(int argc, char **argv) {
  rounds = argc > 1 ? atoi(argv[1]) : 30;
  int ngrow = argc > 2 ? atoi(argv[2]) : 8, ngrab = argc > 3 ? atoi(argv[3]) : 4;
  pthread_t t[64];
  int n = 0;
  atomic_store(&growers_left, ngrow);
  for (int i = 0; i < ngrow && n < 60; i++) pthread_create(&t[n++], NULL, grower, (void *)(uintptr_t)(i + 1));
  for (int i = 0; i < ngrab && n < 62; i++) pthread_create(&t[n++], NULL, grabber, (void *)(uintptr_t)(i + 1));
  pthread_create(&t[n++], NULL, freer, NULL);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  fprintf(stderr, "huge_moves: %d growers x %d vectors to 32 MiB, %d grabbers: %ld/%ld/%ld bad\n", ngrow,
          rounds, ngrab, atomic_load(&bad_grower), atomic_load(&bad_grabber), atomic_load(&bad_freer));
  CHECK("every grown vector kept its bytes", atomic_load(&bad_grower) == 0);
  CHECK("every other mapping kept its bytes", atomic_load(&bad_grabber) == 0);
  CHECK("huge blocks of a third thread stay valid", atomic_load(&bad_freer) == 0);
  return check_summary("huge_moves");
}
