/* exit-rss.c — preloaded after the allocator, prints at exit the resident
 * KiB of libc's text and of the whole process (/proc/self/smaps: exact,
 * where getrusage's peak comes from the kernel's approximate per-CPU
 * counters and can be off by tens of pages in a small program).
 *   gcc -O2 -shared -fPIC -o exit-rss.so exit-rss.c
 *   LD_PRELOAD="<allocator> ./exit-rss.so" PROGRAM   (to stderr, or append to $EXIT_RSS) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((destructor)) static void exit_rss(void) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return;
  char line[512];
  long total = 0, libc_text = 0, v;
  int in_libc_text = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long a, b;
    char perm[8];
    if (sscanf(line, "%lx-%lx %7s", &a, &b, perm) == 3 && strchr(line, '-') < strchr(line, ' ')) {
      in_libc_text = strcmp(perm, "r-xp") == 0 && strstr(line, "/libc.so") != NULL;
      continue;
    }
    if (sscanf(line, "Rss: %ld kB", &v) == 1) {
      total += v;
      if (in_libc_text) libc_text += v;
    }
  }
  fclose(f);
  const char *o = getenv("EXIT_RSS");
  FILE *out = o ? fopen(o, "a") : stderr;
  if (!out) return;
  fprintf(out, "libc_text %ld total %ld\n", libc_text, total);
  if (o) fclose(out);
}
