/* sw_fasta.c — the strict streaming FASTA reader (format in sw_fasta.h).
 *
 * Layer: stream/sw, above sw_matrix.
 *
 * State machine over lines (getline), one record per sw_fasta_next call.
 * Because a record ends only when the next header (or the end of the file)
 * is seen, the reader keeps that header line as `pending` for the next call.
 *
 * Invariants
 *   pending != 0  =>  line holds a header line (starting with '>') not yet
 *                     returned, read at line number pending_line;
 *   seen_record   =>  at least one record has been returned (so the end of
 *                     the file is a normal end, not an empty file);
 *   error[0] != 0 =>  every later sw_fasta_next returns -1.
 */
#include "sw_fasta.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sw_matrix.h"

struct sw_fasta {
  FILE *file;
  bool is_stdin;
  char *path;
  int8_t code[256];     /* letter -> code, -1 if not a residue */
  char *line;           /* getline buffer */
  size_t line_cap;
  size_t line_no;       /* lines read so far */
  bool pending;         /* `line` holds an unreturned header */
  size_t pending_line;
  bool seen_record;
  char *name;           /* the current record's name */
  size_t name_cap;
  uint8_t *codes;       /* the current record's residues */
  size_t codes_len, codes_cap;
  char error[512];
};

static int fasta_fail(sw_fasta_t *f, size_t line, const char *fmt, ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (line)
    snprintf(f->error, sizeof f->error, "%s:%zu: %s", f->path, line, what);
  else
    snprintf(f->error, sizeof f->error, "%s: %s", f->path, what);
  return -1;
}

sw_fasta_t *sw_fasta_open(const char *path, char *err, size_t errlen) {
  sw_fasta_t *f = calloc(1, sizeof *f);
  if (f == NULL || (f->path = strdup(path)) == NULL) {
    snprintf(err, errlen, "%s: out of memory", path);
    free(f);
    return NULL;
  }
  if (strcmp(path, "-") == 0) {
    f->file = stdin;
    f->is_stdin = true;
  } else {
    f->file = fopen(path, "r");
    if (f->file == NULL) {
      snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
      free(f->path);
      free(f);
      return NULL;
    }
  }
  for (int c = 0; c < 256; c++) f->code[c] = (int8_t)sw_residue_code((unsigned char)c);
  return f;
}

/* Reads the next line into f->line without its line end and trailing
 * blanks; its length, or -1 at the end of the file (or -2 on a read error,
 * recorded). */
static ssize_t fasta_read_line(sw_fasta_t *f) {
  errno = 0;
  ssize_t n = getline(&f->line, &f->line_cap, f->file);
  if (n < 0) {
    if (ferror(f->file)) {
      fasta_fail(f, f->line_no + 1, "read error: %s", strerror(errno ? errno : EIO));
      return -2;
    }
    return -1;
  }
  f->line_no++;
  while (n > 0 && (f->line[n - 1] == '\n' || f->line[n - 1] == '\r' ||
                   f->line[n - 1] == ' ' || f->line[n - 1] == '\t'))
    n--;
  f->line[n] = '\0';
  return n;
}

static bool fasta_grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * elem);
  if (q == NULL) return false;
  *p = q;
  *cap = c;
  return true;
}

/* Shows a byte in a message: 'x' when printable, else its hex value. */
static void fasta_describe(unsigned char c, char *buf, size_t len) {
  if (c >= 0x21 && c < 0x7F)
    snprintf(buf, len, "'%c'", c);
  else if (c == ' ')
    snprintf(buf, len, "a space");
  else if (c == '\t')
    snprintf(buf, len, "a tab");
  else
    snprintf(buf, len, "byte 0x%02X", c);
}

int sw_fasta_next(sw_fasta_t *f, sw_record_t *rec) {
  if (f->error[0]) return -1;
  ssize_t n;
  /* Find the header: the pending one, or the first non-blank line. */
  if (!f->pending) {
    for (;;) {
      n = fasta_read_line(f);
      if (n == -2) return -1;
      if (n == -1) {
        if (f->seen_record) return 0;
        return fasta_fail(f, 0, "no FASTA record (the file is empty)");
      }
      if (n > 0) break;
    }
    if (f->line[0] != '>') {
      if (f->seen_record) /* cannot happen: records end at a header or EOF */
        return fasta_fail(f, f->line_no, "expected a '>' header line");
      return fasta_fail(f, f->line_no,
                        "not a FASTA file: the first line must start with '>'");
    }
    f->pending_line = f->line_no;
  }
  f->pending = false;
  size_t header_line = f->pending_line;

  /* The name: the first word after '>'. */
  const char *p = f->line + 1;
  while (*p == ' ' || *p == '\t') p++;
  size_t name_len = strcspn(p, " \t");
  if (name_len == 0) return fasta_fail(f, header_line, "empty sequence name after '>'");
  if (!fasta_grow((void **)&f->name, &f->name_cap, name_len + 1, 1))
    return fasta_fail(f, header_line, "out of memory");
  memcpy(f->name, p, name_len);
  f->name[name_len] = '\0';

  /* Sequence lines up to the next header or the end. */
  f->codes_len = 0;
  for (;;) {
    n = fasta_read_line(f);
    if (n == -2) return -1;
    if (n == -1) break;
    if (n > 0 && f->line[0] == '>') {
      f->pending = true;
      f->pending_line = f->line_no;
      break;
    }
    if (!fasta_grow((void **)&f->codes, &f->codes_cap, f->codes_len + (size_t)n, 1))
      return fasta_fail(f, f->line_no, "out of memory");
    uint8_t *out = f->codes + f->codes_len;
    for (ssize_t i = 0; i < n; i++) {
      int8_t c = f->code[(unsigned char)f->line[i]];
      if (c < 0) {
        char what[32];
        fasta_describe((unsigned char)f->line[i], what, sizeof what);
        return fasta_fail(f, f->line_no,
                          "invalid character %s at column %zd of sequence '%s'",
                          what, i + 1, f->name);
      }
      out[i] = (uint8_t)c;
    }
    f->codes_len += (size_t)n;
  }
  if (f->codes_len == 0)
    return fasta_fail(f, header_line, "sequence '%s' is empty", f->name);

  f->seen_record = true;
  rec->name = f->name;
  rec->name_len = name_len;
  rec->codes = f->codes;
  rec->len = f->codes_len;
  rec->line = header_line;
  return 1;
}

const char *sw_fasta_error(const sw_fasta_t *f) { return f->error; }

size_t sw_fasta_line(const sw_fasta_t *f) {
  return f->pending ? f->pending_line : f->line_no;
}

void sw_fasta_close(sw_fasta_t *f) {
  if (f == NULL) return;
  if (f->file && !f->is_stdin) fclose(f->file);
  free(f->path);
  free(f->line);
  free(f->name);
  free(f->codes);
  free(f);
}
