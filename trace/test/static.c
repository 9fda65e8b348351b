/* static — a statically linked program that allocates: the recorder cannot
 * be preloaded into it, and `mmtrace record` must say so instead of
 * reporting that it made no allocation call (test trace_static). */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char *volatile p = malloc(100);
  free(p);
  puts("static: ran");
  return 0;
}
