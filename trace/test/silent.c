/* silent.c — a worker that stops calling the allocator long before the
 * program ends, as a compressor's worker thread does (xz -T2: its last
 * call comes within a millisecond, then it computes for seconds and is
 * still running when the program exits).  The main thread waits for it,
 * blocked, with no call in between.
 *
 *   worker: 200 malloc+free pairs about 100 us of work apart (about 20 ms),
 *           then WORK_MS of work without a call, then a byte down a pipe,
 *           then it sleeps until the process exits (no thread end);
 *   main:   one call, then blocked on the pipe, then one call, exit.
 *
 * check_replay.py checks that a replay takes the main thread's recorded
 * wait: the worker's ops end about 20 ms in, and the rest of the wait is
 * no thread's op, which the replay must sleep rather than drop.
 *
 *   silent
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define WORK_MS 300

static int fds[2];

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void work_ms(double ms) {
  double until = now_ms() + ms;
  while (now_ms() < until) {}
}

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 200; i++) {
    work_ms(0.1);
    free(malloc(64));
  }
  work_ms(WORK_MS);
  if (write(fds[1], "x", 1) != 1) _exit(1);
  for (;;) pause();
  return NULL;
}

int main(void) {
  if (pipe(fds) != 0) return 1;
  void *p = malloc(100);
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
  char c;
  if (read(fds[0], &c, 1) != 1) return 1;
  free(p);
  printf("done\n");
  exit(0);
}
