/* secure.c — what secure mode promises, and that the default costs none of
 * it.  Each case runs in a child process (fork), most of them because the
 * child must die; the order cases run in fresh processes (exec), because a
 * forked child shares its parent's secrets and heap.
 *
 * usage: trust_secure EXPECT
 *   secure     secure mode is on (MMALLOC_SECURE=1, or a -DMM_SECURE=ON build):
 *     guards   writing just past the end of a page block (the page of one
 *              size class, all its blocks taken), of a large block (at its
 *              page-rounded end), of a huge block, or of a slot's
 *              management area faults (SIGSEGV);
 *     links    a free block's first word is not a plain pointer (it is xor'ed
 *              with a secret): not the block freed before it, not an address
 *              anywhere near the heap;
 *     forged   a plain pointer written over that word after the free is
 *              not followed: the process dies when the block is reused,
 *              with one line naming mmalloc and the block, and no malloc
 *              ever returns the forged pointer;
 *     order    64 successive malloc(64) are not in increasing address order,
 *              and two processes get different orders;
 *     waf      a byte written into a freed block (in its body, or in its
 *              canary word) is caught when the block is reused: the process
 *              dies (SIGABRT) with one line on stderr naming mmalloc and the
 *              block's address;
 *     pool     the same for an object pool: a write into a freed object's
 *              body, canary word or link word, or a forged link, is caught
 *              when the pool hands the object out again (one line naming
 *              mmalloc, the call, the pool and the object; abort), and the
 *              forged link is never followed;
 *     release  a write into memory a pool or heap gave back (release,
 *              destroy, a heap's own block freed, a page block freed) is
 *              caught when the memory leaves the secure mode's quarantine or
 *              at exit (one line naming the call and the address; abort);
 *              memory left alone passes; a pool call on an object of a
 *              released pool is refused;
 *   zero       secure, and MMALLOC_ZERO_ON_FREE=1: everything above, and a
 *              freed block reads as zero past the allocator's two words
 *              (inspected in the freed block), and once malloc hands it out
 *              again, past its first word (the free-list link);
 *   zero-only  MMALLOC_ZERO_ON_FREE=1 without secure mode: the zero checks;
 *   default    neither: none of the costs.  Successive malloc(16) are 16
 *              bytes apart in increasing order, and so are malloc(64); no
 *              guard after a large block or a management area; free-list
 *              links are plain pointers; free writes nothing into a block
 *              past its two words.
 * The first check of every mode is that mm_option_get says the mode is in
 * force; the others run regardless, so that running a mode in the wrong
 * environment shows each check failing.
 *
 * trust_secure order SIZE N  (helper) prints the addresses of N successive
 * malloc(SIZE), one per line. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "mmalloc.h"

#define SLOT_SIZE ((uintptr_t)128 << 20) /* src/config.h: MM_SLOT_SIZE */
#define META_SIZE ((uintptr_t)2 << 20)   /* MM_SLOT_META_SIZE */
#define OS_PAGE ((uintptr_t)4096)

/* The compiler must not drop or fold our stray reads and writes, nor see
 * that a pointer it is given was freed (hide() launders it: the cases take
 * an alias before the free and use only that). */
static void *hide(void *p) {
  __asm__ volatile("" : "+r"(p));
  return p;
}
static void poke(void *p, unsigned char v) { *(volatile unsigned char *)hide(p) = v; }
static unsigned char peek(const void *p) {
  return *(const volatile unsigned char *)hide((void *)p);
}
static uintptr_t peek_word(const void *p) {
  return *(const volatile uintptr_t *)hide((void *)p);
}

/* Exit codes of a case's child.  0: it ran to the end (survived). */
enum { SETUP = 10 };

/* ---- running a case in a child ------------------------------------------- */

typedef struct outcome_s {
  int status;
  char out[256]; /* the child's stdout */
  char err[1024];
} outcome_t;

static void slurp(int fd, char *buf, size_t size) {
  size_t n = 0;
  ssize_t r;
  while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) > 0) n += (size_t)r;
  buf[n] = 0;
  char drain[256];
  while (read(fd, drain, sizeof(drain)) > 0) {
  }
}

static outcome_t run_child(void (*fn)(void)) {
  outcome_t o;
  memset(&o, 0, sizeof(o));
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) {
    perror("pipe");
    exit(2);
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    close(out[1]);
    close(err[1]);
    signal(SIGSEGV, SIG_DFL);
    signal(SIGABRT, SIG_DFL);
    fn();
    fflush(stdout);
    _exit(0);
  }
  close(out[1]);
  close(err[1]);
  slurp(err[0], o.err, sizeof(o.err)); /* small: neither pipe fills */
  slurp(out[0], o.out, sizeof(o.out));
  close(out[0]);
  close(err[0]);
  waitpid(pid, &o.status, 0);
  return o;
}

static bool died_of(const outcome_t *o, int sig) {
  return WIFSIGNALED(o->status) && WTERMSIG(o->status) == sig;
}
static bool survived(const outcome_t *o) {
  return WIFEXITED(o->status) && WEXITSTATUS(o->status) == 0;
}
static int exit_code(const outcome_t *o) {
  return WIFEXITED(o->status) ? WEXITSTATUS(o->status) : -WTERMSIG(o->status);
}

static void show(const char *name, const outcome_t *o) {
  fprintf(stderr, "  %-44s %s %d", name,
          WIFSIGNALED(o->status) ? "signal" : "exit", WIFSIGNALED(o->status)
                                                          ? WTERMSIG(o->status)
                                                          : WEXITSTATUS(o->status));
  if (o->err[0]) fprintf(stderr, "; stderr: %.*s", (int)strcspn(o->err, "\n"), o->err);
  fputc('\n', stderr);
}

/* ---- (a) guard pages ---------------------------------------------------------
 * src/local_heap.c: a page block or large block carries one more datablock,
 * made a guard (extent_guard); src/region.c: the last datablock of a slot's
 * management area and of its data area are guards (region_slot_new), and a
 * huge block's mapping has an inaccessible page after the block
 * (huge_mapping_size). */

/* Every block of one page of one size class (3,000 bytes: the 3,072 class,
 * 21 blocks in 16 datablocks, 1,024 bytes of waste at the end), then a
 * write at the first datablock past the page. */
#define PB_SIZE 3000
#define PB_CLASS 3072
#define PB_BLOCKS 21
static void guard_page_block(void) {
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < PB_BLOCKS; i++) {
    char *p = malloc(PB_SIZE);
    if (!p || malloc_usable_size(p) < PB_SIZE) _exit(SETUP);
    memset(p, 1, PB_SIZE);
    if ((uintptr_t)p < lo) lo = (uintptr_t)p;
    if ((uintptr_t)p > hi) hi = (uintptr_t)p;
  }
  if (hi - lo != (PB_BLOCKS - 1) * (uintptr_t)PB_CLASS) _exit(SETUP + 1); /* not one page */
  uintptr_t end = (hi + PB_CLASS + OS_PAGE - 1) & ~(OS_PAGE - 1);
  poke((void *)end, 1);
}

/* A large block of exactly 10 datablocks, written one byte past its end. */
static void guard_large(void) {
  char *p = malloc(40960);
  if (!p || malloc_usable_size(p) < 40960) _exit(SETUP);
  memset(p, 1, 40960);
  poke(p + 40960, 1);
}

/* Guards are removed lazily (src/extent.c): a freed block's guard stays
 * installed until an extent carved over it takes it away.  A block of
 * `first` bytes freed, then one of `second` bytes in its place (first fit;
 * exit 3: not in the same place, so the case would not be tested): every
 * byte of the new block must be writable (it says so on stderr), and its
 * own end is guarded (the write past it faults).  Both above the medium
 * blocks (128 KiB), which a free puts in the medium cache, not the tree. */
static void guard_reuse(size_t first, size_t second) {
  char *p = malloc(first);
  if (!p) _exit(SETUP);
  memset(p, 1, first);
  free(p);
  char *q = malloc(second);
  if (!q) _exit(SETUP);
  if (q != p) _exit(3);
  memset(q, 2, second);
  static const char said[] = "whole block written\n";
  if (write(2, said, sizeof said - 1) < 0) _exit(SETUP);
  poke(q + second, 1);
}
/* 40 datablocks, then 80 over the old guard (at q + 163840); 80, then 40
 * whose guard lies before the old one */
static void guard_reuse_bigger(void) { guard_reuse(163840, 327680); }
static void guard_reuse_smaller(void) { guard_reuse(327680, 163840); }
/* a medium block (10 datablocks) freed and taken back from the medium
 * cache: its guard came with it */
static void guard_reuse_cached(void) { guard_reuse(40960, 40960); }

/* realloc in secure mode moves a growing block past 1 MiB to a mapping of
 * its own and then resizes that mapping (src/realloc.c): the contents
 * survive every step (exit 5 if not), the whole block is writable (it says
 * so on stderr), and the byte past its new end faults. */
static void guard_realloc_huge(void) {
  size_t sizes[] = {(size_t)512 << 10, (size_t)2 << 20, (size_t)8 << 20, (size_t)24 << 20};
  unsigned char *p = NULL;
  size_t had = 0;
  for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    unsigned char *q = realloc(p, sizes[k]);
    if (!q) _exit(SETUP);
    for (size_t i = 0; i < had; i += 4096)
      if (q[i] != (unsigned char)(i / 4096 * 7 + 1)) _exit(5);
    for (size_t i = 0; i < sizes[k]; i += 4096) q[i] = (unsigned char)(i / 4096 * 7 + 1);
    q[sizes[k] - 1] = 1;
    p = q;
    had = sizes[k];
  }
  static const char said[] = "whole block written\n";
  if (write(2, said, sizeof said - 1) < 0) _exit(SETUP);
  poke(p + had, 1);
}

/* A huge block: the page after it must be part of a mapping and
 * inaccessible ("---p" in /proc/self/maps: the allocator's own reservation),
 * not merely unmapped, where the kernel could put another mapping; then the
 * write.  Exit 4: it is not. */
static bool page_is_reserved_noaccess(uintptr_t a) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[512];
  bool found = false;
  while (fgets(line, sizeof(line), f)) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && lo <= a && a < hi) {
      found = strncmp(perms, "---", 3) == 0;
      break;
    }
  }
  fclose(f);
  return found;
}

static void guard_huge(void) {
  size_t n = (size_t)40 << 20;
  char *p = malloc(n);
  if (!p) _exit(SETUP);
  p[0] = p[n - 1] = 1;
  if (!page_is_reserved_noaccess((uintptr_t)p + n)) _exit(4);
  poke(p + n, 1);
}

/* The slot of a small block: its management area ends with a guard. */
static void guard_meta(void) {
  char *p = malloc(64);
  if (!p) _exit(SETUP);
  uintptr_t base = (uintptr_t)p & ~(SLOT_SIZE - 1);
  (void)peek((void *)(base + META_SIZE - OS_PAGE - 1)); /* the byte before: readable */
  poke((void *)(base + META_SIZE - OS_PAGE), 1);
}

/* ---- (b) free-list links ------------------------------------------------------ */

/* Free x then y (same size, same page): y's first word is the link to x.
 * Exit 0: the word is x itself (a plain link); 1: it looks like nothing
 * (not 0, not within 1 GiB of y); 2: something else. */
static void links(void) {
  char *x = malloc(64), *y = malloc(64);
  if (!x || !y) _exit(SETUP);
  memset(x, 0x5A, 64);
  memset(y, 0x5A, 64);
  uintptr_t xa = (uintptr_t)x, ya = (uintptr_t)y;
  const char *y_alias = hide(y);
  free(x);
  free(y);
  uintptr_t w = peek_word(y_alias);
  uintptr_t d = w > ya ? w - ya : ya - w;
  if (w == xa) _exit(0);
  _exit(w != 0 && d > ((uintptr_t)1 << 30) ? 1 : 2);
}

/* Write a plain pointer to a live block over a freed block's first word,
 * then allocate that size until the block is reused (and beyond).  Exit 3:
 * malloc returned the forged pointer; 0: nothing happened. */
static void forged_link(void) {
  char *x = malloc(64), *z = malloc(64);
  if (!x || !z) _exit(SETUP);
  memset(z, 0x33, 64);
  printf("%p\n", (void *)x);
  fflush(stdout);
  void **x_alias = hide(x);
  free(x);
  *(void *volatile *)x_alias = z;
  for (int i = 0; i < 4096; i++) {
    char *p = malloc(64);
    if (!p) _exit(SETUP + 1);
    if (p == z) _exit(3);
  }
}

/* ---- (e) write after free -------------------------------------------------- */

static int waf_offset;
static size_t waf_size = 64;
static void write_after_free(void) {
  char *p = malloc(waf_size);
  if (!p) _exit(SETUP);
  memset(p, 0x11, waf_size);
  printf("%p\n", (void *)p);
  fflush(stdout);
  char *alias = hide(p);
  free(p);
  poke(alias + waf_offset, (unsigned char)(peek(alias + waf_offset) ^ 0x41));
  for (int i = 0; i < 4096; i++)
    if (!malloc(waf_size)) _exit(SETUP + 1);
}

/* The same, the block freed among 31 others of its page: after the page's
 * local frees become its free list (one pop on the slow path), the blocks
 * are popped by the inline fast path, which must make the same check
 * (write_after_free alone has its block reused by the slow path). */
static void write_after_free_among(void) {
  char *b[32];
  for (int i = 0; i < 32; i++) {
    b[i] = malloc(waf_size);
    if (!b[i]) _exit(SETUP);
    memset(b[i], 0x11, waf_size);
  }
  printf("%p\n", (void *)b[16]);
  fflush(stdout);
  char *alias = hide(b[16]);
  for (int i = 0; i < 32; i++) free(b[i]);
  poke(alias + waf_offset, (unsigned char)(peek(alias + waf_offset) ^ 0x41));
  for (int i = 0; i < 4096; i++)
    if (!malloc(waf_size)) _exit(SETUP + 1);
}

/* A write into a block freed into a page that its thread then emptied and
 * kept for its next page (thread_heap.c): caught when the page is handed
 * out again, as in any other page.  In a thread of its own, so that the
 * 64-byte pages are its own: the first 1024 blocks fill its first page
 * (64 KiB), five more pages follow, the first page's blocks are freed (it
 * is not the class's current page: it is kept), then enough blocks are
 * allocated to use up the current page and take the kept one back. */
#define KEPT_BLOCKS 1024
static void *write_after_free_kept_thread(void *arg) {
  (void)arg;
  static char *p[6 * KEPT_BLOCKS];
  for (int i = 0; i < 5 * KEPT_BLOCKS + 100; i++)
    if (!(p[i] = malloc(64))) _exit(SETUP);
  char *alias = hide(p[KEPT_BLOCKS / 2]);
  printf("%p\n", (void *)alias);
  fflush(stdout);
  for (int i = 0; i < KEPT_BLOCKS; i++) free(p[i]);
  poke(alias + 40, (unsigned char)(peek(alias + 40) ^ 0x41));
  for (int i = 0; i < 2 * KEPT_BLOCKS; i++)
    if (!malloc(64)) _exit(SETUP + 1);
  return NULL;
}
static void write_after_free_kept(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, write_after_free_kept_thread, NULL) != 0) _exit(SETUP);
  pthread_join(t, NULL);
}

/* The same for an object of a pool: a write into a freed object's body,
 * canary or link is caught when the pool hands it out again; a forged
 * link is never followed. */
static char forged_target[64];
static void pool_write_after_free(void) {
  mm_pool_options_t po = {.object_size = 64, .name = "waf"};
  mm_pool_t *pool = mm_pool_create(&po);
  char *p = pool ? mm_pool_alloc(pool) : NULL;
  if (!p) _exit(SETUP);
  memset(p, 0x11, 64);
  printf("%p\n", (void *)p);
  fflush(stdout);
  char *alias = hide(p);
  mm_pool_free(pool, p);
  if (waf_offset < 0) { /* forge the link: a plain pointer to static data */
    void *forged = forged_target;
    memcpy(alias, &forged, sizeof(forged));
  } else {
    poke(alias + waf_offset, (unsigned char)(peek(alias + waf_offset) ^ 0x41));
  }
  for (int i = 0; i < 4096; i++) {
    char *q = mm_pool_alloc(pool);
    if (!q) _exit(SETUP + 1);
    if (q == forged_target) _exit(3); /* the forged link was followed */
  }
}

/* Use after release: memory a pool or heap gave back (mm_pool_release,
 * mm_pool_destroy, mm_heap_destroy, mm_heap_free of a heap's own block,
 * mm_page_block_free) and the program wrote into afterwards.  Secure mode
 * holds such memory filled before the page manager reuses it; the write is
 * caught when the memory leaves the quarantine (pushed out by 17 MiB given
 * back after it: the child then ends with _exit, no exit-time check) or at
 * exit (exit(), which runs the check).  The child prints the address it
 * writes. */
static int release_how;
enum { REL_POOL, REL_POOL_DESTROY_PUSHED, REL_HEAP_DESTROY, REL_HEAP_FREE_LARGE, REL_PAGE_BLOCK,
       REL_CASES };
static const char *const release_what[] = {
    "mm_pool_release, then exit", "mm_pool_destroy, then 17 MiB given back",
    "mm_heap_destroy, then exit", "mm_heap_free of a 100 KiB object, then exit",
    "mm_page_block_free, then exit"};

static void write_after_release(void) {
  mm_pool_options_t po = {.object_size = 48, .name = "rel"};
  mm_pool_t *pool = mm_pool_create(&po);
  mm_heap_t *heap = mm_heap_new("rel");
  if (!pool || !heap) _exit(SETUP);
  char *p = NULL;
  switch (release_how) {
  case REL_POOL:
  case REL_POOL_DESTROY_PUSHED: p = mm_pool_alloc(pool); break;
  case REL_HEAP_DESTROY: p = mm_heap_malloc(heap, 200); break;
  case REL_HEAP_FREE_LARGE: p = mm_heap_malloc(heap, 100 << 10); break;
  case REL_PAGE_BLOCK: p = mm_page_block_alloc(64 << 10); break;
  }
  if (!p) _exit(SETUP + 1);
  char *alias = hide(p) + 24; /* a byte inside the object */
  printf("%p\n", (void *)alias);
  fflush(stdout);
  switch (release_how) {
  case REL_POOL: mm_pool_release(pool); break;
  case REL_POOL_DESTROY_PUSHED: mm_pool_destroy(pool); break;
  case REL_HEAP_DESTROY: mm_heap_destroy(heap); break;
  case REL_HEAP_FREE_LARGE: mm_heap_free(heap, p); break;
  case REL_PAGE_BLOCK: mm_page_block_free(p); break;
  }
  poke(alias, 0x41);
  if (release_how == REL_POOL_DESTROY_PUSHED) {
    void *big = mm_page_block_alloc(17 << 20);
    if (!big) _exit(SETUP + 2);
    memset(big, 1, 17 << 20);
    mm_page_block_free(big);
    _exit(0); /* not caught when the quarantine pushed the block out */
  }
  exit(0); /* the exit-time check runs */
}

/* Memory given back and never touched again leaves the quarantine quietly:
 * 40 MiB of pools released and destroyed, heaps destroyed, page blocks
 * freed (the quarantine's limit passed twice over), then exit. */
static void release_untouched(void) {
  for (int round = 0; round < 40; round++) {
    mm_pool_options_t po = {.object_size = 256, .name = "quiet"};
    mm_pool_t *pool = mm_pool_create(&po);
    mm_heap_t *heap = mm_heap_new("quiet");
    if (!pool || !heap) _exit(SETUP);
    for (int i = 0; i < 2048; i++) { /* 512 KiB */
      char *a = mm_pool_alloc(pool), *b = mm_heap_malloc(heap, 40 + (size_t)i % 300);
      if (!a || !b) _exit(SETUP + 1);
      memset(a, 7, 256);
      memset(b, 7, 40);
    }
    char *big = mm_heap_malloc(heap, 64 << 10);
    void *blk = mm_page_block_alloc(128 << 10);
    if (!big || !blk) _exit(SETUP + 2);
    if (round % 2) mm_pool_release(pool);
    mm_pool_destroy(pool);
    mm_heap_free(heap, big);
    mm_heap_destroy(heap);
    mm_page_block_free(blk);
  }
  exit(0);
}

/* A pool call on an object whose pool was released (its memory held by the
 * quarantine) is refused with the usual one line. */
static void free_after_release(void) {
  mm_pool_options_t po = {.object_size = 64, .name = "rel"};
  mm_pool_t *pool = mm_pool_create(&po);
  char *p = pool ? mm_pool_alloc(pool) : NULL;
  if (!p) _exit(SETUP);
  printf("%p\n", (void *)p);
  fflush(stdout);
  mm_pool_release(pool);
  mm_pool_free(pool, p);
}

/* The process died of SIGABRT with exactly one line on stderr that names
 * mmalloc and the block (whose address the child printed first). */
static bool caught(const outcome_t *o) {
  char block[64];
  int n = (int)strcspn(o->out, "\n");
  if (n == 0 || n >= (int)sizeof(block)) return false;
  memcpy(block, o->out, (size_t)n);
  block[n] = 0;
  const char *nl = strchr(o->err, '\n');
  return died_of(o, SIGABRT) && nl && nl[1] == 0 && strncmp(o->err, "mmalloc: ", 9) == 0 &&
         strstr(o->err, block) != NULL;
}

/* ---- free does not fill (default) -------------------------------------------- */

/* Exit 0 when free left the block's bytes past its two words as they were. */
static void free_leaves_bytes(void) {
  unsigned char *p = malloc(64);
  if (!p) _exit(SETUP);
  memset(p, 0x5A, 64);
  unsigned char *alias = hide(p);
  free(p);
  for (int i = 16; i < 64; i++)
    if (peek(alias + i) != 0x5A) _exit(1);
}

/* ---- (d) zero on free --------------------------------------------------------
 * Exit status, bits: 1 the freed block holds non-zero bytes past its first
 * 16 (the link and the canary); 2 once malloc hands it out again, it holds
 * non-zero bytes past its first 8 (the link), or its first word still holds
 * the old contents; 4 it was not handed out again within 4096 mallocs. */
static void zero_on_free(void) {
  unsigned char *p = malloc(200);
  if (!p) _exit(SETUP);
  size_t n = malloc_usable_size(p);
  memset(p, 0xAB, n);
  unsigned char *alias = hide(p);
  uintptr_t pa = (uintptr_t)p;
  free(p);
  int bad = 0;
  for (size_t i = 16; i < n; i++)
    if (peek(alias + i) != 0) bad |= 1;
  for (int k = 0; k < 4096; k++) {
    unsigned char *q = malloc(200);
    if (!q) _exit(SETUP + 1);
    if ((uintptr_t)q != pa) continue;
    for (size_t i = 8; i < n; i++)
      if (q[i] != 0) bad |= 2;
    uintptr_t w;
    memcpy(&w, q, sizeof(w));
    if (w == (uintptr_t)0xABABABABABABABABull) bad |= 2;
    _exit(bad);
  }
  _exit(bad | 4);
}

/* ---- (c), (f) allocation order, in fresh processes ------------------------------- */

static int order_main(size_t size, int n) {
  for (int i = 0; i < n; i++) printf("%p\n", malloc(size));
  return 0;
}

static const char *self;

/* Addresses of n successive malloc(size) in a fresh process. */
static int fresh_order(size_t size, int n, uintptr_t *addr) {
  char cmd[4200];
  snprintf(cmd, sizeof(cmd), "'%s' order %zu %d", self, size, n);
  FILE *f = popen(cmd, "r");
  if (!f) return -1;
  int got = 0;
  void *p;
  while (got < n && fscanf(f, "%p", &p) == 1) addr[got++] = (uintptr_t)p;
  return pclose(f) == 0 && got == n ? 0 : -1;
}

static bool increasing_by(const uintptr_t *a, int n, uintptr_t step) {
  for (int i = 1; i < n; i++)
    if (a[i] != a[i - 1] + step) return false;
  return true;
}

static bool increasing(const uintptr_t *a, int n) {
  for (int i = 1; i < n; i++)
    if (a[i] <= a[i - 1]) return false;
  return true;
}

/* Offsets from the lowest address, in allocation order (the shape of the
 * order, comparable between processes). */
static void shape(const uintptr_t *a, int n, uintptr_t *out) {
  uintptr_t lo = UINTPTR_MAX;
  for (int i = 0; i < n; i++)
    if (a[i] < lo) lo = a[i];
  for (int i = 0; i < n; i++) out[i] = a[i] - lo;
}

/* fn wrote its whole block (it said so) and then faulted past its end. */
static bool written_then_faulted(void (*fn)(void), const char *name) {
  outcome_t o = run_child(fn);
  show(name, &o);
  return died_of(&o, SIGSEGV) && strstr(o.err, "whole block written");
}

/* ---- the modes ------------------------------------------------------------------- */

static void secure_checks(void) {
  outcome_t o;
  fprintf(stderr, "trust_secure: guard pages\n");
  o = run_child(guard_page_block);
  show("write past a page block", &o);
  CHECK("writing past the end of a page block faults", died_of(&o, SIGSEGV));
  o = run_child(guard_large);
  show("write past a large block", &o);
  CHECK("writing past the end of a large block faults", died_of(&o, SIGSEGV));
  CHECK("a block carved over a freed block's guard is writable, and guarded past its end",
        written_then_faulted(guard_reuse_bigger, "a bigger block over a freed one's guard"));
  CHECK("a smaller block in a freed bigger one's place is writable, and guarded past its end",
        written_then_faulted(guard_reuse_smaller, "a smaller block where a bigger one was"));
  CHECK("a medium block taken back from the medium cache is writable, and guarded past its end",
        written_then_faulted(guard_reuse_cached, "a medium block taken back from the cache"));
  CHECK("a block grown by realloc to 24 MiB keeps its contents and is guarded past its end",
        written_then_faulted(guard_realloc_huge, "write past a block grown by realloc"));
  o = run_child(guard_huge);
  show("write past a huge block", &o);
  CHECK("writing past the end of a huge block faults", died_of(&o, SIGSEGV));
  o = run_child(guard_meta);
  show("write past a slot's management area", &o);
  CHECK("writing past the end of a slot's management area faults", died_of(&o, SIGSEGV));

  fprintf(stderr, "trust_secure: free-list links\n");
  o = run_child(links);
  show("a free block's first word", &o);
  CHECK("a free block's link is not a plain pointer (encoded)", exit_code(&o) == 1);
  o = run_child(forged_link);
  show("forge a freed block's link", &o);
  CHECK("a forged link is never followed (malloc does not return it)", exit_code(&o) != 3);
  CHECK("a forged link is caught on reuse (one line naming mmalloc and the block, abort)",
        caught(&o));

  fprintf(stderr, "trust_secure: write after free\n");
  waf_offset = 40;
  o = run_child(write_after_free);
  show("write into a freed block's body", &o);
  CHECK("a write into a freed block's body is caught on reuse (one line, abort)", caught(&o));
  waf_offset = 8;
  o = run_child(write_after_free);
  show("write into a freed block's canary word", &o);
  CHECK("a write into a freed block's canary word is caught on reuse (one line, abort)",
        caught(&o));

  /* big blocks are compared with the pattern in pieces (page.h): a byte in
   * the first piece, in a later one, and the last byte, named exactly; and
   * blocks freed among 31 others, popped by the inline fast path (bodies of
   * up to 256 bytes checked inline, longer ones out of line) */
  static const struct { size_t size; int offset; bool among; } waf[] = {
      {512, 300, false}, {8192, 40, false}, {8192, 5000, false}, {8192, 8191, false},
      {64, 40, true},    {256, 200, true},  {512, 300, true},    {8192, 5000, true}};
  for (size_t k = 0; k < sizeof(waf) / sizeof(waf[0]); k++) {
    waf_size = waf[k].size;
    waf_offset = waf[k].offset;
    o = run_child(waf[k].among ? write_after_free_among : write_after_free);
    char want[64], name[160];
    snprintf(want, sizeof(want), "(byte %d changed)", waf[k].offset);
    snprintf(name, sizeof(name), "a write into byte %d of a freed %zu-byte block%s is caught on reuse, and named",
             waf[k].offset, waf[k].size, waf[k].among ? " (freed among 31 others)" : "");
    show(name, &o);
    CHECK(name, caught(&o) && strstr(o.err, want) != NULL);
  }
  waf_size = 64;

  o = run_child(write_after_free_kept);
  show("write into a freed block of a page its thread emptied and kept", &o);
  CHECK("a write into a freed block of a kept empty page is caught on reuse (one line, abort)",
        caught(&o) && strstr(o.err, "written after") != NULL);

  fprintf(stderr, "trust_secure: write after free in a pool\n");
  static const int pool_offsets[] = {40, 8, 0, -1};
  static const char *const pool_what[] = {"body", "canary word", "link word", "link (forged)"};
  for (int k = 0; k < 4; k++) {
    char name[96];
    waf_offset = pool_offsets[k];
    o = run_child(pool_write_after_free);
    snprintf(name, sizeof(name), "write into a freed pool object's %s", pool_what[k]);
    show(name, &o);
    snprintf(name, sizeof(name), "a write into a freed pool object's %s is caught (one line, abort)",
             pool_what[k]);
    CHECK(name, caught(&o));
  }

  fprintf(stderr, "trust_secure: write after a pool or heap gave memory back\n");
  for (release_how = 0; release_how < REL_CASES; release_how++) {
    char name[128];
    o = run_child(write_after_release);
    snprintf(name, sizeof(name), "write after %s", release_what[release_how]);
    show(name, &o);
    snprintf(name, sizeof(name), "a write after %s is caught (one line, abort)",
             release_what[release_how]);
    CHECK(name, caught(&o) && strstr(o.err, "written after") != NULL);
  }
  o = run_child(release_untouched);
  show("40 rounds of memory given back, untouched", &o);
  CHECK("memory given back and left alone passes the quarantine's checks", survived(&o));
  o = run_child(free_after_release);
  show("mm_pool_free after mm_pool_release", &o);
  CHECK("mm_pool_free of an object of a released pool is refused (one line, abort)",
        caught(&o) && strstr(o.err, "mm_pool_free()") != NULL);

  fprintf(stderr, "trust_secure: allocation order\n");
  uintptr_t a[64], b[64], sa[64], sb[64];
  bool got = fresh_order(64, 64, a) == 0 && fresh_order(64, 64, b) == 0;
  REQUIRE("the order helper runs", got);
  CHECK("64 successive malloc(64) are not in increasing order (process 1)", !increasing(a, 64));
  CHECK("64 successive malloc(64) are not in increasing order (process 2)", !increasing(b, 64));
  shape(a, 64, sa);
  shape(b, 64, sb);
  CHECK("two processes get different orders", memcmp(sa, sb, sizeof(sa)) != 0);
}

static void zero_checks(void) {
  fprintf(stderr, "trust_secure: zero on free\n");
  outcome_t o = run_child(zero_on_free);
  show("freed and reused block contents", &o);
  int code = exit_code(&o);
  CHECK("the zero-on-free case ran to its verdict", code >= 0 && code < 8);
  CHECK("a freed block reads as zero past the allocator's two words", !(code & 1));
  CHECK("a reused block reads as zero past its link word", !(code & 2));
  CHECK("the freed block was handed out again (its reuse was checked)", !(code & 4));
}

static void default_checks(void) {
  outcome_t o;
  fprintf(stderr, "trust_secure: none of secure mode's costs\n");
  uintptr_t a[64];
  REQUIRE("the order helper runs", fresh_order(16, 32, a) == 0);
  CHECK("successive malloc(16) are 16 bytes apart, increasing", increasing_by(a, 32, 16));
  REQUIRE("the order helper runs", fresh_order(64, 64, a) == 0);
  CHECK("successive malloc(64) are 64 bytes apart, increasing", increasing_by(a, 64, 64));
  o = run_child(guard_large);
  show("write past a large block", &o);
  CHECK("no guard page after a large block", survived(&o));
  o = run_child(guard_meta);
  show("write past a slot's management area", &o);
  CHECK("no guard page after a slot's management area", survived(&o));
  o = run_child(links);
  show("a free block's first word", &o);
  CHECK("free-list links are plain pointers", exit_code(&o) == 0);
  o = run_child(free_leaves_bytes);
  show("a freed block's bytes", &o);
  CHECK("free writes nothing past a block's two words", survived(&o));
}

int main(int argc, char **argv) {
  self = argv[0];
  if (argc == 4 && strcmp(argv[1], "order") == 0)
    return order_main((size_t)atol(argv[2]), atoi(argv[3]));
  const char *mode = argc == 2 ? argv[1] : "";
  bool secure = strcmp(mode, "secure") == 0 || strcmp(mode, "zero") == 0;
  bool zero = strcmp(mode, "zero") == 0 || strcmp(mode, "zero-only") == 0;
  bool plain = strcmp(mode, "default") == 0;
  if (!secure && !zero && !plain) {
    fprintf(stderr, "usage: trust_secure secure|zero|zero-only|default\n");
    return 2;
  }
  fprintf(stderr, "trust_secure %s: secure=%ld zero_on_free=%ld\n", mode,
          mm_option_get("secure"), mm_option_get("zero_on_free"));
  /* level 1, or 2 (blocks carved in a uniform shuffle) where MMALLOC_SECURE=2 asks for it */
  const char *asked = getenv("MMALLOC_SECURE");
  long level = !secure ? 0 : asked && strcmp(asked, "2") == 0 ? 2 : 1;
  CHECK("secure mode is in force as expected", mm_option_get("secure") == level);
  CHECK("zero on free is in force as expected", mm_option_get("zero_on_free") == (zero ? 1 : 0));
  if (secure) secure_checks();
  if (zero) zero_checks();
  if (plain) default_checks();
  return check_summary("trust_secure");
}
