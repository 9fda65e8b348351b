/* hot-text-run.c — what a common program asks of its allocator, for
 * tools/hot-text.sh: blocks of 16 B to 4 MiB from malloc, calloc, realloc
 * (grown and shrunk), posix_memalign and aligned_alloc; a second thread
 * that frees the first's blocks and allocates its own, then exits; a pause
 * past the purge delay, and more of the same after it (the free of a large
 * block then runs the purge). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 2048
static void *blocks[N];

static void churn(unsigned seed) {
  for (int i = 0; i < N; i++) {
    size_t size = (size_t)16 << ((seed + (unsigned)i * 7) % 12); /* 16 B .. 32 KiB */
    blocks[i] = (i % 5 == 0) ? calloc(1, size) : malloc(size);
    if (blocks[i]) memset(blocks[i], i, size);
  }
  for (int i = 0; i < N; i += 2) {
    free(blocks[i]);
    blocks[i] = NULL;
  }
  char *s = NULL;
  for (size_t n = 64; n <= ((size_t)4 << 20); n *= 2) { /* a buffer grown to 4 MiB, then shrunk */
    char *t = realloc(s, n);
    if (!t) break;
    s = t;
    memset(s + n / 2, 1, n / 2);
  }
  s = realloc(s, 100);
  free(s);
  void *p = NULL;
  if (posix_memalign(&p, 64, 1000) == 0) free(p);
  free(aligned_alloc(4096, 8192));
  char *big = malloc((size_t)256 << 10); /* a large block: its free runs a purge that is due */
  if (big) memset(big, 2, (size_t)256 << 10);
  free(big);
}

static void *other(void *arg) {
  (void)arg;
  for (int i = 1; i < N; i += 2) { /* the main thread's blocks: remote frees */
    free(blocks[i]);
    blocks[i] = NULL;
  }
  churn(3);
  for (int i = 0; i < N; i++) free(blocks[i]);
  return NULL;
}

int main(void) {
  churn(1);
  pthread_t t;
  if (pthread_create(&t, NULL, other, NULL) == 0) pthread_join(t, NULL);
  struct timespec pause = {0, 250 * 1000 * 1000}; /* past the purge delay */
  nanosleep(&pause, NULL);
  churn(5);
  for (int i = 0; i < N; i++) free(blocks[i]);
  return 0;
}
