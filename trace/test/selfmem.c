/* selfmem — a C program that says, at exit (in an atexit handler, which
 * runs before the recorder's own, registered earlier), how much of its
 * resident memory is backed by files (RssFile + RssShmem, KiB), how much of
 * that is the recorder's library (the Rss less the Anonymous of the
 * mappings of a file named libmmtrace.so), and whether the unwinder
 * (libgcc_s) is mapped:
 *     files=F recorder=R unwinder=0|1
 * (with a file named on its command line mapped and read first)
 * (check_memory.py: the trace's memory record leaves the recorder out). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static char *keep;

static void report(void) {
  /* the C library's calls the recorder makes at exit, after the count
   * below (writev, write, open, read, close, memchr, memmove), made once before it,
   * so that the pages they fault in are counted here as well */
  setvbuf(stdout, NULL, _IONBF, 0);
  struct iovec line0 = {"selfmem\n", 8};
  if (writev(1, &line0, 1) != 8 || write(1, "", 0) != 0) _exit(1);
  char probe[64];
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, probe, sizeof probe) <= 0) _exit(1);
  close(fd);
  char *nl = memchr(probe, ':', sizeof probe);
  memmove(probe + 1, probe, nl ? (size_t)(nl - probe) : 1);
  unsigned long files = 0, recorder = 0, written = 0, v;
  int unwinder = 0, mine = 0;
  char line[4352];
  printf("%s %lu %d\n", "selfmem", 0ul, 0);    /* printf's pages, before the count too */
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) _exit(1);
  while (fgets(line, sizeof line, f)) {
    if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' ')) {   /* a mapping's first line */
      mine = strstr(line, "/libmmtrace.so") != NULL;
      unwinder |= strstr(line, "/libgcc_s.so") != NULL;
    } else if (mine && sscanf(line, "Rss: %lu", &v) == 1) {
      recorder += v;
    } else if (mine && sscanf(line, "Anonymous: %lu", &v) == 1) {
      written += v;
    }
  }
  fclose(f);
  f = fopen("/proc/self/status", "r");          /* last: every call above has made its faults */
  if (!f) _exit(1);
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "RssFile: %lu", &v) == 1 || sscanf(line, "RssShmem: %lu", &v) == 1) files += v;
  fclose(f);
  printf("files=%lu recorder=%lu unwinder=%d\n", files, recorder - written, unwinder);
  free(keep);
}

/* argv[1], if given: a file to map and read (check_memory.py gives one
 * whose path is longer than the recorder's line buffer for smaps) */
int main(int argc, char **argv) {
  keep = malloc(1000);                          /* a call for the recorder to record */
  if (argc > 1) {
    int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) return 1;
    volatile const char *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) return 1;
    unsigned sum = 0;
    for (off_t i = 0; i < st.st_size; i += 4096) sum += (unsigned char)m[i];
    keep[0] = (char)sum;
    close(fd);
  }
  return atexit(report) != 0;
}
