/* times.c — a program whose time between calls is known, for
 * check_times.py: between two of its 64-byte mallocs it computes for 40 ms
 * of its own CPU time, between the next two it sleeps 40 ms; then it makes
 * and frees blocks of 1 MiB and 128 KiB (calls a version 2 trace times)
 * and small ones (calls it does not).  Then a dense burst of small calls
 * (which the recorder stamps on one call in 8), 20 ms of computing, and
 * eight more small mallocs: the gap shows at the first of them the
 * recorder stamps.  Last it runs a thread that computes for 30 ms of its
 * CPU time and makes no allocator call at all.  It starts with sixteen
 * calls 300 us apart, so that whatever the C library's start-up did, the
 * calls it measures are stamped (a malloc and its free back to back, on a
 * fast machine, were a dense window: the calls after it went unstamped). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile unsigned long sink;

static void burn(double seconds) {
  double t0 = cpu_s();
  unsigned long x = 1;
  while (cpu_s() - t0 < seconds)
    for (int i = 0; i < 10000; i++) x = x * 6364136223846793005ul + 1;
  sink = x;
}

static void *computer(void *arg) {
  (void)arg;
  burn(0.030);
  return NULL;
}

int main(void) {
  struct timespec pause = {0, 300000};
  for (int i = 0; i < 8; i++) {
    void *p = malloc(16);
    nanosleep(&pause, NULL);
    free(p); /* apart too: a free right after its malloc can make a dense window */
    nanosleep(&pause, NULL);
  }
  void *a = malloc(64);
  burn(0.040);                                   /* 40 ms of this thread's CPU */
  void *b = malloc(64);
  struct timespec nap = {0, 40000000};           /* 40 ms blocked */
  nanosleep(&nap, NULL);
  void *c = malloc(64);
  char *big = malloc(1 << 20);
  if (!a || !b || !c || !big) return 1;
  memset(big, 1, 1 << 20);
  free(big);
  void *z = calloc(1 << 14, 8);
  free(z);
  free(c);
  free(b);
  free(a);
  void *burst[64], *after[8];
  for (int i = 0; i < 64; i++) burst[i] = malloc(32);
  for (int i = 0; i < 64; i++) free(burst[i]);
  burn(0.020);
  for (int i = 0; i < 8; i++) after[i] = malloc(48);
  for (int i = 0; i < 8; i++) free(after[i]);
  pthread_t th;
  if (pthread_create(&th, NULL, computer, NULL) != 0 || pthread_join(th, NULL) != 0) return 1;
  return 0;
}
