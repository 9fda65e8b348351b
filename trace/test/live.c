/* live.c — a C program (no C++ library) that holds many small blocks at
 * once: N blocks of 24 bytes, each written, all live at the peak, then
 * freed.  check_replay.py compares its real peak RSS with the replay's,
 * which must not count the replayer's own table of those blocks or the
 * C++ library a C program never loads.  Given FILE, it also maps that file
 * and reads a byte of each of its pages before the blocks are made, and
 * keeps it mapped: memory of its own that is no block (as a program's code,
 * libraries and mapped data are), which the replay must count as well.
 * `live grow M` grows one buffer by realloc from 1 MiB to M MiB, a MiB at
 * a time, writing each new MiB (an allocator that grows it in place, as
 * mmalloc does past 1 MiB, must show the same peak in the replay).
 * `live threads K N`: K threads that share nothing, each making N blocks
 * in bursts of 64 and freeing each burst (its replay must not make one
 * thread wait for another's frees).  `live blocks N K hold|churn`: N blocks
 * of K KiB, a byte written in each of their pages, all held and then freed
 * (hold), or each freed before the next is made (churn, beside a 32 MiB
 * block held throughout, so that the peak is not below what a test's
 * forked runner carries into its child's ru_maxrss): a replay that did
 * not write a new block (blocks from 128 KiB up are mapped untouched) or
 * did not free one would show a peak far from the real one.
 *
 *   live N [FILE]
 *   live grow M
 *   live threads K N
 * `live spin N US`: N blocks of 64 bytes, each made, held while the
 * program computes for US microseconds, and freed (short gaps of work
 * between plain calls, which a replay at --speed 1 must spin).
 *
 *   live blocks N K hold|churn
 *   live spin N US
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int grow(long mib) {
  const size_t step = (size_t)1 << 20;
  char *b = NULL;
  for (long k = 1; k <= mib; k++) {
    char *c = realloc(b, (size_t)k * step);
    if (!c) return 1;
    b = c;
    memset(b + (size_t)(k - 1) * step, (int)k, step);
  }
  free(b);
  return 0;
}

static void *bursts(void *arg) {
  long n = *(const long *)arg;
  void *b[64];
  for (long done = 0; done < n; done += 64) {
    for (int i = 0; i < 64; i++) {
      b[i] = malloc((size_t)(16 + 16 * (i % 8)));
      if (!b[i]) abort();
      memset(b[i], i, 16);
    }
    for (int i = 0; i < 64; i++) free(b[i]);
  }
  return NULL;
}

static int threads(long k, long n) {
  pthread_t t[64];
  if (k < 1 || k > 64 || n < 1) return 2;
  for (long i = 0; i < k; i++)
    if (pthread_create(&t[i], NULL, bursts, &n) != 0) return 1;
  for (long i = 0; i < k; i++) pthread_join(t[i], NULL);
  return 0;
}

static int blocks(long n, long kib, const char *how) {
  bool hold = strcmp(how, "hold") == 0;
  if (n < 1 || kib < 1 || (!hold && strcmp(how, "churn") != 0)) return 2;
  char **b = malloc((size_t)n * sizeof *b);
  char *base = hold ? NULL : malloc((size_t)32 << 20);
  if (!b || (!hold && !base)) return 1;
  for (size_t off = 0; !hold && off < (size_t)32 << 20; off += 4096) base[off] = 1;
  for (long i = 0; i < n; i++) {
    b[i] = malloc((size_t)kib << 10);
    if (!b[i]) return 1;
    for (size_t off = 0; off < (size_t)kib << 10; off += 4096) b[i][off] = (char)i;
    if (!hold) free(b[i]);
  }
  if (hold)
    for (long i = 0; i < n; i++) free(b[i]);
  free(base);
  free(b);
  return 0;
}

static int spin(long n, long us) {
  if (n < 1 || us < 1) return 2;
  for (long i = 0; i < n; i++) {
    volatile char *b = malloc(64);
    if (!b) return 1;
    b[0] = (char)i;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < us * 1000L);
    free((void *)b);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[1], "grow") == 0) return atol(argv[2]) > 0 ? grow(atol(argv[2])) : 2;
  if (argc > 3 && strcmp(argv[1], "threads") == 0) return threads(atol(argv[2]), atol(argv[3]));
  if (argc > 3 && strcmp(argv[1], "spin") == 0) return spin(atol(argv[2]), atol(argv[3]));
  if (argc > 4 && strcmp(argv[1], "blocks") == 0) return blocks(atol(argv[2]), atol(argv[3]), argv[4]);
  long n = argc > 1 ? atol(argv[1]) : 0;
  if (n <= 0) {
    fprintf(stderr, "usage: live N [FILE] | live grow M | live threads K N | live blocks N K hold|churn | live spin N US\n");
    return 2;
  }
  volatile unsigned char sum = 0;
  if (argc > 2) {
    int fd = open(argv[2], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
      perror(argv[2]);
      return 2;
    }
    const unsigned char *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      perror("mmap");
      return 2;
    }
    for (off_t i = 0; i < st.st_size; i += 4096) sum += m[i];
    close(fd);
  }
  void **p = malloc((size_t)n * sizeof *p);
  if (!p) return 1;
  for (long i = 0; i < n; i++) {
    p[i] = malloc(24);
    if (!p[i]) return 1;
    memset(p[i], (int)i, 24);
  }
  for (long i = 0; i < n; i++) free(p[i]);
  free(p);
  return 0;
}
