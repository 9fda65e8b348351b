/* forks.c — fork 200 times while three threads allocate; each child
 * allocates, frees (also objects the parent's threads made), and exits 0.
 * Not a benchmark.  usage: forks [FORKS] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "mmalloc.h"

static atomic_int stop;
#define SHARED 256
static void *_Atomic shared[SHARED]; /* objects the allocating threads publish */

static void *busy(void *arg) {
  uint64_t s = (uint64_t)(uintptr_t)arg * 2654435761u + 1;
  void *mine[64] = {0};
  while (!atomic_load(&stop)) {
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    int k = (int)(s % 64);
    mm_free(mine[k]);
    size_t size = (s >> 20) % 4 == 0 ? 40000 + (s >> 30) % 100000 : 1 + (s >> 30) % 2000;
    mine[k] = mm_malloc(size);
    if (mine[k]) memset(mine[k], 0x5A, size < 64 ? size : 64);
    void *p = mm_malloc(48);
    if (p) memset(p, 0x77, 48);
    void *old = atomic_exchange(&shared[s % SHARED], p);
    mm_free(old);
  }
  for (int k = 0; k < 64; k++) mm_free(mine[k]);
  return NULL;
}

static int child(void) {
  /* The child runs alone; its parent's threads are gone.  It must be able to
   * allocate, free its own blocks, and free blocks those threads made. */
  for (int i = 0; i < 1000; i++) {
    size_t size = (size_t)(i * 37 % 3000) + 1;
    char *p = mm_malloc(size);
    if (!p) return 3;
    memset(p, 1, size);
    mm_free(p);
  }
  void *big = mm_malloc(3 << 20);
  if (!big) return 4;
  memset(big, 2, 3 << 20);
  mm_free(big);
  for (int i = 0; i < SHARED; i += 3) {
    unsigned char *p = atomic_exchange(&shared[i], NULL);
    if (p && p[0] != 0x77) return 5;
    mm_free(p);
  }
  mm_collect();
  return 0;
}

int main(int argc, char **argv) {
  int forks = argc > 1 ? atoi(argv[1]) : 200;
  fprintf(stderr, "forks: %d forks while 3 threads allocate (not a benchmark)\n", forks);
  pthread_t t[3];
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, busy, (void *)(intptr_t)(i + 1));
  int ok = 0, bad = 0;
  for (int f = 0; f < forks; f++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      bad++;
      continue;
    }
    if (pid == 0) _exit(child());
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
      bad++;
      continue;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ok++;
    else {
      bad++;
      fprintf(stderr, "forks: child %d ended with status 0x%x\n", f, status);
    }
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < SHARED; i++) mm_free(atomic_exchange(&shared[i], NULL));
  CHECK("every child allocated and exited 0", ok == forks && bad == 0);
  return check_summary("forks");
}
