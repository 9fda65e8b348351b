/* fdreuse — a program that treats every descriptor number as its own, as
 * shells and daemons do: it checks that descriptor 3 is free at start (the
 * recorder's file must not sit where a program expects the first free
 * number), then makes every open descriptor above 2 name its own output file
 * (dup2, as a shell's `exec 3>file` does to one), makes ROUNDS x 1000
 * mallocs and frees (enough for the recorder to write many chunks), and
 * writes LINES lines of its own.  check_fdreuse.py checks the file holds
 * exactly those lines and the trace every call. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 200
#define LINES 100

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  if (fcntl(3, F_GETFD) >= 0 || errno != EBADF) {
    fprintf(stderr, "fdreuse: descriptor 3 is open at start\n");
    return 1;
  }
  int out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return 2;
  for (int fd = 3; fd < 4096; fd++)
    if (fd != out && fcntl(fd, F_GETFD) >= 0 && dup2(out, fd) != fd) return 2;
  static void *keep[1000];
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < 1000; i++) keep[i] = malloc((size_t)(16 + i));
    for (int i = 0; i < 1000; i++) free(keep[i]);
  }
  const char line[] = "a line of the program's own\n";
  for (int i = 0; i < LINES; i++)
    if (write(out, line, sizeof line - 1) != (ssize_t)(sizeof line - 1)) return 2;
  return close(out) != 0;
}
