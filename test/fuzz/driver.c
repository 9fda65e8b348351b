/* driver.c — fuzz_driver: runs the fuzz target (fuzz_ops.c) without
 * libFuzzer, for gcc builds and ctest.
 *
 *   fuzz_driver [--diff] PATH...
 *       run every input once: each file, and each regular file of each
 *       directory (in name order)
 *   fuzz_driver [--diff] [--max-len N] --random SECONDS [SEED] [PATH...]
 *       for SECONDS, run inputs made by an xorshift generator seeded with
 *       SEED (from the clock when absent or 0; printed either way): random
 *       bytes, or, when PATHs are given, mostly mutations of those files (bit
 *       flips, byte changes, inserted, deleted and repeated runs, splices of
 *       two files).  The same SEED gives the same sequence of inputs.
 *
 * --diff sets MMFUZZ_DIFFERENTIAL=1 (every call is compared with glibc).
 * The target aborts on the first failure; the driver's signal handler first
 * names the input and the step (a crash inside a block the allocator handed
 * out is a SIGSEGV, not an abort): the file, or in random mode the input
 * saved as crash-<seed>-<n> in the current directory, to replay with
 * `fuzz_driver crash-...` or `build-fuzz/fuzz_ops crash-...`.  A failure may
 * need the allocator state left by the inputs before it: when the input
 * alone passes, replay the whole run (same SEED, or the same files).  One summary
 * line at the end; exit 0 when every input passed, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"

#define MAX_LEN_DEFAULT 1024

typedef struct input_s {
  uint8_t *data;
  size_t size;
  char *name;
} input_t;

typedef struct corpus_s {
  input_t *items;
  size_t n, cap;
} corpus_t;

/* The input being run, for the signal handler. */
static struct {
  const uint8_t *data;
  size_t size;
  char name[512];
  bool save; /* random mode: write it out as name */
} current;

static void say(const char *s) {
  ssize_t unused = write(2, s, strlen(s));
  (void)unused;
}

static void on_fatal_signal(int sig) {
  if (current.save) {
    int fd = open(current.name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ssize_t unused = fd >= 0 ? write(fd, current.data, current.size) : -1;
    (void)unused;
    if (fd >= 0) close(fd);
    say("fuzz_driver: the failing input is saved as ");
  } else {
    say("fuzz_driver: the failing input is ");
  }
  say(current.name);
  say("\nfuzz_driver: the step being run: ");
  say(mmfuzz_step());
  say("\n");
  raise(sig); /* SA_RESETHAND: the default action now */
}

static void catch_fatal_signals(void) {
  static const int sigs[] = {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE};
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_fatal_signal;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "fuzz_driver: out of memory\n");
    exit(2);
  }
  return p;
}

/* ---- loading inputs ------------------------------------------------------- */

static void corpus_add(corpus_t *c, uint8_t *data, size_t size, const char *name) {
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 64;
    c->items = realloc(c->items, c->cap * sizeof c->items[0]);
    if (!c->items) exit(2);
  }
  c->items[c->n++] = (input_t){data, size, strdup(name)};
}

static bool load_file(corpus_t *c, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t cap = 4096, n = 0;
  uint8_t *data = xmalloc(cap);
  for (size_t got; (got = fread(data + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) {
      data = realloc(data, cap *= 2);
      if (!data) exit(2);
    }
  }
  fclose(f);
  corpus_add(c, data, n, path);
  return true;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool load_dir(corpus_t *c, const char *path) {
  DIR *d = opendir(path);
  if (!d) return false;
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    char full[4096];
    struct stat sb;
    snprintf(full, sizeof full, "%s/%s", path, e->d_name);
    if (stat(full, &sb) || !S_ISREG(sb.st_mode)) continue;
    if (n == cap) names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
    if (!names) exit(2);
    names[n++] = strdup(full);
  }
  closedir(d);
  qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    if (!load_file(c, names[i])) fprintf(stderr, "fuzz_driver: cannot read %s\n", names[i]);
    free(names[i]);
  }
  free(names);
  return true;
}

static void load_path(corpus_t *c, const char *path) {
  struct stat sb;
  bool ok = !stat(path, &sb) && (S_ISDIR(sb.st_mode) ? load_dir(c, path) : load_file(c, path));
  if (!ok) {
    fprintf(stderr, "fuzz_driver: cannot read %s\n", path);
    exit(2);
  }
}

/* ---- running ------------------------------------------------------------------ */

static size_t total_bytes;

static void run_input(const uint8_t *data, size_t size) {
  current.data = data;
  current.size = size;
  LLVMFuzzerTestOneInput(data, size);
  total_bytes += size;
}

static int run_files(const corpus_t *c) {
  double start = now_seconds();
  for (size_t i = 0; i < c->n; i++) {
    snprintf(current.name, sizeof current.name, "%s", c->items[i].name);
    run_input(c->items[i].data, c->items[i].size);
  }
  printf("fuzz_driver: %zu inputs (%zu bytes) in %.1f s: all passed\n", c->n, total_bytes,
         now_seconds() - start);
  return 0;
}

/* ---- random inputs ------------------------------------------------------------ */

static uint64_t rng;

static uint64_t rng_next(void) { /* xorshift64* */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

static size_t rng_below(size_t n) { return n ? (size_t)(rng_next() % n) : 0; }

static size_t make_random(uint8_t *buf, size_t max_len) {
  size_t len = 1 + rng_below(rng_below(2) ? 64 : max_len);
  for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)rng_next();
  return len;
}

/* Open a gap of n bytes at pos (len + n <= max_len). */
static void open_gap(uint8_t *buf, size_t len, size_t pos, size_t n) {
  memmove(buf + pos + n, buf + pos, len - pos);
}

static size_t mutate_once(uint8_t *buf, size_t len, size_t max_len, const corpus_t *c) {
  static const uint8_t interesting[] = {0x00, 0x0b, 0x3f, 0x40, 0x7f, 0x80, 0xbf, 0xc0,
                                        0xd3, 0xe8, 0xec, 0xf0, 0xf3, 0xff};
  size_t pos = rng_below(len), room = max_len - len;
  switch (rng_below(7)) {
  case 0: if (len) buf[pos] ^= (uint8_t)(1u << rng_below(8)); return len;
  case 1: if (len) buf[pos] = (uint8_t)rng_next(); return len;
  case 2: if (len) buf[pos] = interesting[rng_below(sizeof interesting)]; return len;
  case 3: { /* insert random bytes */
    size_t n = 1 + rng_below(8);
    if (n > room) return len;
    open_gap(buf, len, pos, n);
    for (size_t i = 0; i < n; i++) buf[pos + i] = (uint8_t)rng_next();
    return len + n;
  }
  case 4: { /* delete a run */
    size_t n = 1 + rng_below(16);
    if (n > len - pos) n = len - pos;
    memmove(buf + pos, buf + pos + n, len - pos - n);
    return len - n;
  }
  case 5: { /* repeat a run of this input */
    size_t from = rng_below(len), n = 1 + rng_below(32);
    if (n > len - from) n = len - from;
    if (n > room) return len;
    open_gap(buf, len, pos, n);
    memmove(buf + pos, buf + (from >= pos ? from + n : from), n);
    return len + n;
  }
  default: { /* splice in a run of another input */
    const input_t *o = &c->items[rng_below(c->n)];
    if (!o->size) return len;
    size_t from = rng_below(o->size), n = 1 + rng_below(o->size - from);
    if (n > room) n = room;
    open_gap(buf, len, pos, n);
    memcpy(buf + pos, o->data + from, n);
    return len + n;
  }
  }
}

static size_t make_mutant(uint8_t *buf, size_t max_len, const corpus_t *c) {
  const input_t *base = &c->items[rng_below(c->n)];
  size_t len = base->size < max_len ? base->size : max_len;
  memcpy(buf, base->data, len);
  for (size_t rounds = 1 + rng_below(4); rounds > 0; rounds--)
    len = mutate_once(buf, len, max_len, c);
  return len;
}

static int run_random(double seconds, uint64_t seed, size_t max_len, const corpus_t *c) {
  if (!seed) seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
  rng = seed ? seed : 1;
  printf("fuzz_driver: random inputs for %.0f s, seed %llu, %zu corpus inputs\n", seconds,
         (unsigned long long)seed, c->n);
  fflush(stdout);
  uint8_t *buf = xmalloc(max_len);
  current.save = true;
  double start = now_seconds(), end = start + seconds;
  size_t n = 0;
  for (; now_seconds() < end; n++) {
    size_t len = c->n && rng_below(8) ? make_mutant(buf, max_len, c) : make_random(buf, max_len);
    snprintf(current.name, sizeof current.name, "crash-%llu-%zu", (unsigned long long)seed, n);
    run_input(buf, len);
  }
  free(buf);
  printf("fuzz_driver: %zu random inputs (%zu bytes) in %.1f s, seed %llu: all passed\n", n,
         total_bytes, now_seconds() - start, (unsigned long long)seed);
  return 0;
}

/* ---- main ---------------------------------------------------------------------- */

static int usage(void) {
  fprintf(stderr,
          "usage: fuzz_driver [--diff] PATH...\n"
          "       fuzz_driver [--diff] [--max-len N] --random SECONDS [SEED] [PATH...]\n");
  return 2;
}

static bool is_number(const char *s) { return *s && strspn(s, "0123456789") == strlen(s); }

int main(int argc, char **argv) {
  double seconds = -1;
  uint64_t seed = 0;
  size_t max_len = MAX_LEN_DEFAULT;
  corpus_t corpus = {0};
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "--diff")) {
      setenv("MMFUZZ_DIFFERENTIAL", "1", 1);
    } else if (!strcmp(argv[i], "--max-len") && i + 1 < argc && is_number(argv[i + 1])) {
      max_len = strtoull(argv[++i], NULL, 10);
    } else if (!strcmp(argv[i], "--random") && i + 1 < argc && is_number(argv[i + 1])) {
      seconds = strtod(argv[++i], NULL);
      if (i + 1 < argc && is_number(argv[i + 1])) seed = strtoull(argv[++i], NULL, 10);
    } else {
      return usage();
    }
  }
  if (max_len == 0 || (seconds < 0 && i == argc)) return usage();
  for (; i < argc; i++) load_path(&corpus, argv[i]);
  catch_fatal_signals();
  return seconds >= 0 ? run_random(seconds, seed, max_len, &corpus) : run_files(&corpus);
}
