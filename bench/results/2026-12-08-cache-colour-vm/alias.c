/* alias.c N S R: N arrays of S bytes each, malloc'd one after another,
 * then R lockstep passes, out[i] = sum over the arrays of a_k[i] (floats):
 * the loop of a stencil or a k-way merge over arrays used side by side.
 * Prints the sum, the OR of every array's offset into its 4 KiB page (0:
 * every array starts on a page) and the first array's offset.
 *   gcc -O2 -o alias alias.c
 *   LD_PRELOAD=<allocator> ./alias 16 65536 3000 */
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  int n = atoi(argv[1]); size_t s = strtoul(argv[2], 0, 0); int r = atoi(argv[3]);
  size_t m = s / sizeof(float);
  float **a = malloc(n * sizeof *a);
  for (int k = 0; k < n; k++) { a[k] = malloc(s); for (size_t i = 0; i < m; i++) a[k][i] = (float)(i + k); }
  float *out = malloc(s);
  double tot = 0;
  for (int rep = 0; rep < r; rep++) {
    for (size_t i = 0; i < m; i++) { float t = 0; for (int k = 0; k < n; k++) t += a[k][i]; out[i] = t; }
    tot += out[rep % m];
  }
  unsigned long offs = 0; for (int k = 0; k < n; k++) offs |= (unsigned long)a[k] & 4095;
  printf("%g offsets-or=%lx first=%lx\n", tot, offs, (unsigned long)a[0] & 4095);
  return 0;
}
