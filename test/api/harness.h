/* harness.h — helpers shared by the api and robust suites (black-box tests).
 *
 *   opaque_ptr / opaque_size  hide a value from the compiler, so that it can
 *                             neither fold an allocation call nor warn about
 *                             a deliberately bad argument
 *   child_run / child_exec    run a function in a forked child (or exec a
 *                             program) with stdout and stderr captured
 *   bad_pointer_line          the one-line error format of the issue:
 *                             "mmalloc: CALL(): WHAT 0xHEX\n"
 *   pattern_fill / _check     deterministic bytes that say where they are
 *   touch_all                 prove a block writable over its whole size
 *   rss_bytes                 resident set size from /proc/self/statm
 *
 * The including file defines _GNU_SOURCE before any header.
 */
#ifndef MM_TEST_HARNESS_H
#define MM_TEST_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define HARNESS_FN static __attribute__((unused))

static inline void *opaque_ptr(void *p) {
  __asm__ volatile("" : "+r"(p));
  return p;
}
static inline size_t opaque_size(size_t n) {
  __asm__ volatile("" : "+r"(n));
  return n;
}

/* ---- child processes ---------------------------------------------------- */

#define CHILD_BUF (1 << 16)
typedef struct child_s {
  int status;              /* from waitpid */
  char out[CHILD_BUF];     /* the child's stdout, NUL-terminated */
  size_t out_len;
  char err[CHILD_BUF];     /* the child's stderr, NUL-terminated */
  size_t err_len;
} child_t;

HARNESS_FN void child_collect(child_t *c, pid_t pid, int out_fd, int err_fd) {
  c->out_len = c->err_len = 0;
  struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !fds[i].revents) continue;
      char *buf = i == 0 ? c->out : c->err;
      size_t *len = i == 0 ? &c->out_len : &c->err_len;
      char scratch[4096];
      ssize_t n = read(fds[i].fd, scratch, sizeof(scratch));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
        continue;
      }
      size_t room = CHILD_BUF - 1 - *len;
      size_t take = (size_t)n < room ? (size_t)n : room;
      memcpy(buf + *len, scratch, take);
      *len += take;
    }
  }
  c->out[c->out_len] = 0;
  c->err[c->err_len] = 0;
  while (waitpid(pid, &c->status, 0) < 0 && errno == EINTR) {
  }
}

/* Run fn(arg) in a forked child; returns when the child is gone.  The child
 * exits 0 when fn returns (after flushing stdout). */
HARNESS_FN void child_run(child_t *c, void (*fn)(void *), void *arg) {
  int out[2], err[2];
  if (pipe(out) || pipe(err)) {
    perror("pipe");
    exit(2);
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    exit(2);
  }
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]), close(out[1]), close(err[0]), close(err[1]);
    fn(arg);
    fflush(stdout);
    _exit(0);
  }
  close(out[1]);
  close(err[1]);
  child_collect(c, pid, out[0], err[0]);
}

/* Run argv[0] with the environment envp (NULL: ours). */
HARNESS_FN void child_exec(child_t *c, char *const argv[], char *const envp[]) {
  int out[2], err[2];
  if (pipe(out) || pipe(err)) {
    perror("pipe");
    exit(2);
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    exit(2);
  }
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]), close(out[1]), close(err[0]), close(err[1]);
    if (envp) execve(argv[0], argv, envp);
    else execv(argv[0], argv);
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  child_collect(c, pid, out[0], err[0]);
}

static inline bool child_aborted(const child_t *c) {
  return WIFSIGNALED(c->status) && WTERMSIG(c->status) == SIGABRT;
}
static inline bool child_exited_ok(const child_t *c) {
  return WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0;
}
static inline void child_describe(const child_t *c, const char *what) {
  if (WIFSIGNALED(c->status))
    fprintf(stderr, "  [%s] child killed by signal %d", what, WTERMSIG(c->status));
  else
    fprintf(stderr, "  [%s] child exited with %d", what, WEXITSTATUS(c->status));
  fprintf(stderr, "; its stderr (%zu bytes): \"%s\"\n", c->err_len, c->err);
}

/* ---- the bad-pointer line ---------------------------------------------------
 * Exactly one line, "mmalloc: CALL(): WHAT 0xHEX\n", where CALL is one of the
 * '|'-separated names in `calls`, WHAT contains `what`, and HEX is p.
 * Returns true, or false with the reason in why. */
HARNESS_FN bool bad_pointer_line(const char *err, const char *calls, const char *what,
                             const void *p, char *why, size_t why_size) {
  size_t len = strlen(err);
  const char *nl = strchr(err, '\n');
  if (len == 0 || !nl || nl != err + len - 1) {
    snprintf(why, why_size, "stderr is not exactly one line");
    return false;
  }
  const char *prefix = "mmalloc: ";
  if (strncmp(err, prefix, strlen(prefix)) != 0) {
    snprintf(why, why_size, "line does not start with \"%s\"", prefix);
    return false;
  }
  const char *call = err + strlen(prefix);
  const char *paren = strstr(call, "(): ");
  if (!paren) {
    snprintf(why, why_size, "no \"CALL(): \" after the prefix");
    return false;
  }
  bool call_ok = false;
  for (const char *c = calls; *c;) {
    const char *bar = strchr(c, '|');
    size_t n = bar ? (size_t)(bar - c) : strlen(c);
    if ((size_t)(paren - call) == n && strncmp(call, c, n) == 0) call_ok = true;
    c += n + (bar ? 1 : 0);
  }
  if (!call_ok) {
    snprintf(why, why_size, "CALL is \"%.*s\", expected one of \"%s\"", (int)(paren - call), call,
             calls);
    return false;
  }
  const char *rest = paren + 4;
  const char *hex = NULL;
  for (const char *s = rest; (s = strstr(s, " 0x")) != NULL; s++) hex = s;
  if (!hex) {
    snprintf(why, why_size, "no \" 0xHEX\" at the end");
    return false;
  }
  size_t what_len = (size_t)(hex - rest);
  char what_buf[512];
  snprintf(what_buf, sizeof(what_buf), "%.*s", (int)(what_len < 511 ? what_len : 511), rest);
  if (!strstr(what_buf, what)) {
    snprintf(why, why_size, "WHAT is \"%.200s\", expected it to contain \"%.50s\"", what_buf, what);
    return false;
  }
  const char *digits = hex + 3;
  size_t nd = strspn(digits, "0123456789abcdef");
  if (nd == 0 || digits + nd != nl) {
    snprintf(why, why_size, "the pointer is not lower-case hex up to the end of the line");
    return false;
  }
  char expect[32];
  snprintf(expect, sizeof(expect), "%p", p);
  if ((size_t)(nl - (hex + 1)) != strlen(expect) || strncmp(hex + 1, expect, strlen(expect))) {
    snprintf(why, why_size, "pointer printed is %.*s, the pointer passed was %s",
             (int)(nl - (hex + 1)), hex + 1, expect);
    return false;
  }
  return true;
}

/* ---- data ----------------------------------------------------------------- */

static inline unsigned char pattern_byte(size_t i, unsigned seed) {
  return (unsigned char)((i * 131u) ^ (i >> 9) ^ (seed * 0x9Du) ^ 0x5Au);
}
HARNESS_FN void pattern_fill(void *p, size_t n, unsigned seed) {
  unsigned char *b = (unsigned char *)p;
  for (size_t i = 0; i < n; i++) b[i] = pattern_byte(i, seed);
}
/* Index of the first wrong byte, or (size_t)-1 when all are right. */
HARNESS_FN size_t pattern_check(const void *p, size_t n, unsigned seed) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != pattern_byte(i, seed)) return i;
  return (size_t)-1;
}

/* Write the whole block (every byte up to 1 MiB; beyond, every 4 KiB page,
 * which is the unit of protection, and the last byte) and read it back. */
HARNESS_FN bool touch_all(void *p, size_t n) {
  volatile unsigned char *b = (volatile unsigned char *)p;
  if (n == 0) return true;
  if (n <= ((size_t)1 << 20)) {
    memset(p, 0xA5, n);
    for (size_t i = 0; i < n; i += 61)
      if (b[i] != 0xA5) return false;
    return b[n - 1] == 0xA5;
  }
  for (size_t i = 0; i < n; i += 4096) b[i] = (unsigned char)(i >> 12);
  b[n - 1] = 0x3C;
  for (size_t i = 0; i + 1 < n; i += 4096)
    if (b[i] != (unsigned char)(i >> 12)) return false;
  return b[n - 1] == 0x3C;
}

static inline bool is_aligned(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

/* ---- memory --------------------------------------------------------------- */
HARNESS_FN size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (!f) return 0;
  if (fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
  fclose(f);
  return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

#endif
