/* live.c — a C program (no C++ library) that holds many small blocks at
 * once: N blocks of 24 bytes, each written, all live at the peak, then
 * freed.  check_replay.py compares its real peak RSS with the replay's,
 * which must not count the replayer's own table of those blocks or the
 * C++ library a C program never loads.
 *
 *   live N
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 0;
  if (n <= 0) {
    fprintf(stderr, "usage: live N\n");
    return 2;
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
