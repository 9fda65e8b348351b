/* static — a statically linked program for bin/mmrun, which must say that
 * the allocator cannot be preloaded into it (test preload_mmrun_static). */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char *volatile p = malloc(64);
  free(p);
  puts("a static program ran");
  return 0;
}
