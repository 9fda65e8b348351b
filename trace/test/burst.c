/* burst.c — dense bursts of small calls of which some fail, for
 * check_burst.py: traced over failalloc.c (which fails every malloc of 77
 * bytes and calloc of 7 x 11), the recorder takes most of them on its
 * fast path, which must record the failures as failed and give every other
 * block its id.  Each round: 96 allocations (sizes as below), then their
 * frees in reverse order (free(NULL) for the failed ones); four rounds, or
 * as many as the first argument says (check_burst.py's write failure: a
 * trace larger than the file size limit), in a thread of its own, which
 * then exits, with a second argument "thread". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *run(void *arg) {
  int rounds = *(int *)arg;
  void *p[96];
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < 96; i++) {
      if (i % 8 == 3)
        p[i] = malloc(77);
      else if (i % 8 == 5)
        p[i] = calloc(7, 11);
      else
        p[i] = malloc(16 + (size_t)i);
      if ((p[i] == NULL) != (i % 8 == 3 || i % 8 == 5)) {
        fprintf(stderr, "burst: allocation %d of round %d: %p\n", i, r, p[i]);
        exit(1);
      }
    }
    for (int i = 95; i >= 0; i--) free(p[i]);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 4;
  if (argc > 2 && strcmp(argv[2], "thread") == 0) {   /* in a thread of its own, which then exits */
    pthread_t th;
    if (pthread_create(&th, NULL, run, &rounds) != 0 || pthread_join(th, NULL) != 0) return 1;
    return 0;
  }
  run(&rounds);
  return 0;
}
