/* reader_fuzz.c — the trace reader against damaged files.  Given a good
 * trace, every way of cutting it and every single flipped byte must give
 * one error that names the file and a byte offset inside it, never a crash
 * and never a silent success; then seeded random damage (several bytes
 * changed, inserted or deleted) must not crash it either (under ASan in
 * the sanitizer trees).
 *
 *   reader_fuzz TRACE WORKDIR [RANDOM_ROUNDS]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"

static char tmp[4096];
static unsigned long failures;

static void put_file(const unsigned char *p, size_t n) {
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
    perror(tmp);
    exit(2);
  }
}

/* Reads tmp to the end: 1 all read, 0 an error (message in err), with the
 * event count in *events. */
static int read_all(bool partial, char *err, size_t errlen, uint64_t *events) {
  mmt_reader_t *r = mmt_reader_open(tmp, err, errlen);
  *events = 0;
  if (!r) return 0;
  mmt_reader_allow_partial(r, partial);
  mmt_event_t e;
  int k;
  while ((k = mmt_reader_next(r, &e)) > 0) (*events)++;
  if (k < 0) snprintf(err, errlen, "%s", mmt_reader_error(r));
  mmt_reader_close(r);
  return k == 0;
}

/* The error must name the file and a byte offset below size. */
static void expect_error(const char *what, size_t at, size_t size) {
  char err[700];
  uint64_t events;
  if (read_all(false, err, sizeof err, &events)) {
    if (failures++ < 10) printf("FAIL: %s at byte %zu: read without an error (%" PRIu64 " events)\n", what, at, events);
    return;
  }
  char want[4200];
  snprintf(want, sizeof want, "mmtrace: %s: byte ", tmp);
  const char *b = strstr(err, want);
  unsigned long long off = b ? strtoull(b + strlen(want), NULL, 10) : ~0ull;
  if (!b || off > size) {
    if (failures++ < 10) printf("FAIL: %s at byte %zu: the error does not name the file and an offset: %s\n", what, at, err);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: reader_fuzz TRACE WORKDIR [RANDOM_ROUNDS]\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) { perror(argv[1]); return 2; }
  static unsigned char good[1 << 22], bad[(1 << 22) + 64];
  size_t n = fread(good, 1, sizeof good, f);
  fclose(f);
  if (n == 0 || n == sizeof good) {
    fprintf(stderr, "reader_fuzz: %s: empty or over %zu bytes\n", argv[1], sizeof good);
    return 2;
  }
  snprintf(tmp, sizeof tmp, "%s/reader_fuzz.mmtrace", argv[2]);
  unsigned long rounds = argc > 3 ? strtoul(argv[3], NULL, 10) : 20000;

  char err[700];
  uint64_t events, good_events;
  put_file(good, n);
  if (!read_all(false, err, sizeof err, &good_events)) {
    printf("FAIL: the undamaged trace does not read: %s\n", err);
    return 1;
  }

  /* every cut: an error without --partial; with it, never more events */
  size_t partial_ok = 0;
  for (size_t cut = 0; cut < n; cut++) {
    put_file(good, cut);
    expect_error("cut", cut, cut);
    if (read_all(true, err, sizeof err, &events)) {
      partial_ok++;
      if (events > good_events && failures++ < 10) printf("FAIL: cut at %zu read more events than the whole\n", cut);
    }
  }

  /* every byte flipped three ways */
  static const unsigned char masks[] = {0x01, 0x80, 0xff};
  for (size_t i = 0; i < n; i++) {
    for (size_t m = 0; m < sizeof masks; m++) {
      memcpy(bad, good, n);
      bad[i] ^= masks[m];
      put_file(bad, n);
      expect_error("flip", i, n);
    }
  }

  /* seeded random damage: any outcome but a crash */
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  unsigned long errors = 0;
  for (unsigned long r = 0; r < rounds; r++) {
    size_t len = n;
    memcpy(bad, good, n);
    unsigned edits = 1 + (unsigned)((seed >> 33) % 8);
    for (unsigned e = 0; e < edits; e++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      size_t at = (size_t)((seed >> 20) % len);
      unsigned kind = (unsigned)(seed >> 60) % 3;
      if (kind == 0) bad[at] = (unsigned char)(seed >> 8);
      else if (kind == 1 && len + 1 < sizeof bad) {
        memmove(bad + at + 1, bad + at, len - at);
        bad[at] = (unsigned char)(seed >> 8);
        len++;
      } else if (len > 1) {
        memmove(bad + at, bad + at + 1, len - at - 1);
        len--;
      }
    }
    put_file(bad, len);
    if (!read_all(r & 1, err, sizeof err, &events)) errors++;
  }
  printf("%zu bytes, %" PRIu64 " events: %zu cuts and %zu flips all rejected with the offset named%s; "
         "%zu cuts readable with --partial; %lu random damages, %lu rejected, none crashed\n",
         n, good_events, n, 3 * n, failures ? " (NOT: see above)" : "", partial_ok, rounds, errors);
  return failures ? 1 : 0;
}
