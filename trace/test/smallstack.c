/* smallstack — a thread with the smallest stack a thread may have
 * (PTHREAD_STACK_MIN) makes calls and then aborts: the recorder's handler
 * for the fatal signal runs on that stack and must still write the trace's
 * last chunks and its end record (test trace_smallstack). */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) free(malloc(32));
  abort();
}

int main(void) {
  pthread_attr_t attr;
  pthread_t t;
  if (pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN) ||
      pthread_create(&t, &attr, worker, NULL))
    return 2;
  pthread_join(t, NULL);
  return 0;
}
