/* bigfree.c — what stays resident after a program frees one big array.
 * Mallocs N MiB and writes it, frees it, then mallocs 2N MiB and writes
 * it; prints the process's RSS (VmRSS, MiB) after each step and its peak
 * (VmHWM).  An allocator that keeps the freed array shows it in the RSS
 * after the free, and in the peak when the second array cannot reuse it.
 *
 *   gcc -O2 -o bigfree bigfree.c && bin/mmrun [--alloc NAME] ./bigfree N
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A field of /proc/self/status in MiB (-1 if missing). */
static long status_mib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0 && line[n] == ':') kb = atol(line + n + 1);
  if (f) fclose(f);
  return kb < 0 ? -1 : kb / 1024;
}

char *volatile sink; /* keeps the compiler from dropping the arrays */

int main(int argc, char **argv) {
  size_t bytes = (size_t)atol(argc > 1 ? argv[1] : "2048") << 20;
  sink = malloc(bytes);
  if (!sink) return 1;
  memset(sink, 1, bytes);
  printf("after malloc of %zu MiB: RSS %ld\n", bytes >> 20, status_mib("VmRSS"));
  free(sink);
  printf("after its free: RSS %ld\n", status_mib("VmRSS"));
  sink = malloc(2 * bytes);
  if (!sink) return 1;
  memset(sink, 2, 2 * bytes);
  printf("after malloc of %zu MiB: RSS %ld, peak %ld\n", 2 * bytes >> 20, status_mib("VmRSS"),
         status_mib("VmHWM"));
  free(sink);
  return 0;
}
