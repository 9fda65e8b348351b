/* vgprog.c — the program valgrind.sh runs under memcheck, once on glibc's
 * malloc and once with the MM_VALGRIND libmmalloc.so preloaded.  It is
 * linked to neither: the allocator is whatever the process has.
 *
 * usage: trust_vgprog MODE
 *   uaf       read a word of a freed small block (24 B) and of a freed large
 *             block (100,000 B): two "Invalid read of size 8 ... inside a
 *             block of size N free'd"
 *   uaf_reuse the same small read, after the program allocated 300 more
 *             blocks of 24 bytes (7 KiB), as programs do: still reported on
 *             glibc, whose memcheck keeps freed blocks out of use until
 *             20 MB more were freed (--freelist-vol); on an allocator that
 *             hands the block out again sooner, memcheck sees a read of a
 *             live block and says nothing
 *   leak      drop the last pointer to a small (40 B) and a large (70,000 B)
 *             block: "definitely lost: 70,040 bytes in 2 blocks"
 *   overread  read the byte just past the end of a 13 B and of a 100,000 B
 *             block: two "Invalid read of size 1 ... 0 bytes after a block
 *             of size N alloc'd"
 *   clean     a little of everything (small, large, huge, calloc, realloc,
 *             aligned, another thread), every byte defined, all freed: no
 *             error, nothing lost, nothing in use at exit
 *   clean_aligned  the same promise for aligned blocks: posix_memalign,
 *             aligned_alloc and memalign, alignments from 32 B to 16 MiB
 *             (valgrind's own malloc refuses larger ones)
 *   aligned_huge   the same for alignments of 128 and 256 MiB (mmalloc
 *             only: no glibc run to compare with)
 * Each mode does only what it says, so that the two reports can be compared
 * kind by kind.  Every mode ends by printing "allocator: mmalloc" or
 * "allocator: other" on stdout (last, so that its malloc and free do not
 * change what comes before): mmalloc when mm_malloc_usable_size is
 * there and accepts a block from malloc (it aborts on a pointer that is not
 * its own), which proves that malloc reached mmalloc and not valgrind's
 * replacement. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The compiler must not see through the allocator calls, nor drop reads
 * whose value is unused, nor know where a pointer came from (hide). */
static void *volatile sink;
static volatile long lsink;

static const void *hide(const void *p) {
  __asm__ volatile("" : "+r"(p));
  return p;
}
static long read_word(const void *p) { return *(const volatile long *)hide(p); }
static char read_byte(const void *p) { return *(const volatile char *)hide(p); }

static int uaf(void) {
  char *small = malloc(24);
  char *large = malloc(100000);
  if (!small || !large) return 2;
  memset(small, 1, 24);
  memset(large, 2, 100000);
  free(small);
  free(large);
  lsink = read_word(small + 8);    /* 8 bytes inside a block of size 24 free'd */
  lsink = read_word(large + 4096); /* 4,096 bytes inside a block of size 100,000 free'd */
  return 0;
}

static int uaf_reuse(void) {
  char *small = malloc(24);
  if (!small) return 2;
  memset(small, 1, 24);
  free(small);
  static char *more[300]; /* the program goes on allocating: 7,200 bytes */
  for (int i = 0; i < 300; i++) {
    more[i] = malloc(24);
    memset(more[i], 2, 24);
  }
  lsink = read_word(small + 8); /* 8 bytes inside a block of size 24 free'd */
  for (int i = 0; i < 300; i++) free(more[i]);
  return 0;
}

static int leak(void) {
  sink = malloc(40);
  memset(sink, 3, 40);
  sink = malloc(70000);
  memset(sink, 4, 70000);
  sink = NULL; /* both last pointers gone */
  return 0;
}

static int overread(void) {
  char *small = malloc(13);
  char *large = malloc(100000);
  if (!small || !large) return 2;
  memset(small, 5, 13);
  memset(large, 6, 100000);
  lsink = read_byte(small + 13);      /* 0 bytes after a block of size 13 alloc'd */
  lsink = read_byte(large + 100000);  /* 0 bytes after a block of size 100,000 alloc'd */
  free(small);
  free(large);
  return 0;
}

static void *clean_thread(void *arg) {
  char **blocks = arg;
  for (int i = 0; i < 200; i++) {
    char *p = malloc((size_t)(i % 50) * 13 + 1);
    p[0] = (char)i;
    lsink += p[0];
    free(p);
  }
  free(blocks[0]); /* a block another thread allocated */
  return NULL;
}

static int clean(void) {
  char *keep[64];
  for (int i = 0; i < 64; i++) {
    size_t n = i < 48 ? (size_t)(i + 1) * 16 : (size_t)(i - 47) * 20000;
    keep[i] = malloc(n);
    memset(keep[i], i, n);
  }
  long sum = 0;
  for (int i = 0; i < 64; i++) sum += keep[i][0];
  char *z = calloc(1000, 10);
  for (int i = 0; i < 10000; i++) sum += z[i];
  char *r = malloc(10);
  memset(r, 7, 10);
  for (size_t n = 20; n < 300000; n *= 3) {
    r = realloc(r, n);
    memset(r, 7, n);
  }
  void *a = NULL;
  if (posix_memalign(&a, 4096, 5000) != 0) return 2;
  memset(a, 8, 5000);
  char *huge = malloc((size_t)40 << 20);
  huge[0] = huge[(40 << 20) - 1] = 9;
  sum += huge[0];
  free(huge);
  char *other[1] = {malloc(77)};
  other[0][0] = 1;
  pthread_t t;
  if (pthread_create(&t, NULL, clean_thread, other) != 0) return 2;
  pthread_join(t, NULL);
  for (int i = 0; i < 64; i++) free(keep[i]);
  free(z);
  free(r);
  free(a);
  lsink = sum;
  printf("clean: %ld\n", sum); /* stdio's buffer: freed by valgrind's freeres */
  return 0;
}

static void which_allocator(void) {
  size_t (*usable)(const void *) =
      (size_t(*)(const void *))dlsym(RTLD_DEFAULT, "mm_malloc_usable_size");
  const char *name = "other";
  if (usable) {
    void *p = malloc(100);
    if (usable(p) >= 100) name = "mmalloc";
    free(p);
  }
  printf("allocator: %s\n", name);
  fflush(stdout);
}

static int aligned_range(size_t from, size_t to) {
  for (size_t align = from; align <= to; align <<= 1) {
    void *p = NULL;
    if (posix_memalign(&p, align, 100) != 0 || (uintptr_t)p % align) return 2;
    memset(p, 1, 100);
    char *q = aligned_alloc(align, align);
    if (!q || (uintptr_t)q % align) return 2;
    q[0] = q[align - 1] = 2;
    char *r = memalign(align, 3 * align / 2);
    if (!r || (uintptr_t)r % align) return 2;
    memset(r, 3, 3 * align / 2 < 4096 ? 3 * align / 2 : 4096);
    free(p);
    free(q);
    free(r);
  }
  printf("aligned %zu..%zu: done\n", from, to);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: trust_vgprog uaf|uaf_reuse|leak|overread|clean|clean_aligned|aligned_huge\n");
    return 2;
  }
  int rc;
  if (strcmp(argv[1], "uaf") == 0) rc = uaf();
  else if (strcmp(argv[1], "uaf_reuse") == 0) rc = uaf_reuse();
  else if (strcmp(argv[1], "leak") == 0) rc = leak();
  else if (strcmp(argv[1], "overread") == 0) rc = overread();
  else if (strcmp(argv[1], "clean") == 0) rc = clean();
  else if (strcmp(argv[1], "clean_aligned") == 0) rc = aligned_range(32, (size_t)16 << 20);
  else if (strcmp(argv[1], "aligned_huge") == 0)
    rc = aligned_range((size_t)128 << 20, (size_t)256 << 20);
  else {
    fprintf(stderr, "trust_vgprog: unknown mode %s\n", argv[1]);
    return 2;
  }
  which_allocator();
  return rc;
}
