/* test_sw_fasta.c — the strict FASTA reader: good files (multi-line
 * records, lower case, blank lines, CRLF, a description after the name,
 * B Z X U O *) and every error the format names, each with its line number:
 * no '>' first, an empty name, an invalid character (with its column), an
 * empty sequence (in the middle and at the end), an empty file, a file made
 * of blank lines, a missing file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sw_fasta.h"
#include "sw_matrix.h"

static char path[64];

static void write_file(const char *text) {
  FILE *f = fopen(path, "wb");
  REQUIRE("temp file", f != NULL);
  fputs(text, f);
  fclose(f);
}

/* Letters of the record, back from codes. */
static void letters(const sw_record_t *r, char *out) {
  for (size_t i = 0; i < r->len; i++) out[i] = SW_ALPHABET[r->codes[i]];
  out[r->len] = '\0';
}

/* Parses text fully; returns the number of records, or -1 with the error
 * text (after "PATH:") in err. */
static int parse_all(const char *text, char *err, size_t errlen) {
  write_file(text);
  char e[600];
  sw_fasta_t *f = sw_fasta_open(path, e, sizeof e);
  REQUIRE("open", f != NULL);
  sw_record_t r;
  int n = 0, rc;
  while ((rc = sw_fasta_next(f, &r)) == 1) n++;
  if (rc < 0) {
    const char *msg = sw_fasta_error(f);
    size_t plen = strlen(path);
    CHECK("error starts with the path", strncmp(msg, path, plen) == 0 && msg[plen] == ':');
    snprintf(err, errlen, "%s", msg + plen + 1);
    CHECK("a later call fails again", sw_fasta_next(f, &r) == -1);
    n = -1;
  }
  sw_fasta_close(f);
  return n;
}

static void expect_error(const char *what, const char *text, const char *want) {
  char err[600] = "";
  int n = parse_all(text, err, sizeof err);
  CHECK(what, n == -1);
  CHECK(what, strstr(err, want) == err || strstr(err, want) != NULL);
  if (n != -1 || strstr(err, want) == NULL)
    fprintf(stderr, "  %s: got n=%d err '%s', want '%s'\n", what, n, err, want);
}

int main(void) {
  snprintf(path, sizeof path, "/tmp/test_sw_fasta.%d.fa", (int)getpid());

  /* A good file. */
  write_file("\n>sp|P1|ONE first protein\nACDEFGHIK\nlmnpqrstvwy\r\n\n"
             ">two\tdesc\nBZXUO*  \n>three\nW\n");
  char e[600], buf[64];
  sw_fasta_t *f = sw_fasta_open(path, e, sizeof e);
  REQUIRE("open good", f != NULL);
  sw_record_t r;
  CHECK("rec 1", sw_fasta_next(f, &r) == 1);
  letters(&r, buf);
  CHECK("rec 1 name is the first word", strcmp(r.name, "sp|P1|ONE") == 0 && r.name_len == 9);
  CHECK("rec 1 residues, lines joined, lower case raised", strcmp(buf, "ACDEFGHIKLMNPQRSTVWY") == 0);
  CHECK("rec 1 header line", r.line == 2);
  CHECK("rec 2", sw_fasta_next(f, &r) == 1);
  letters(&r, buf);
  CHECK("rec 2 name before a tab", strcmp(r.name, "two") == 0);
  CHECK("rec 2: U and O read as X, trailing blanks dropped", strcmp(buf, "BZXXX*") == 0);
  CHECK("rec 2 header line", r.line == 6);
  CHECK("rec 3", sw_fasta_next(f, &r) == 1);
  CHECK("rec 3 one residue", r.len == 1 && r.codes[0] == sw_residue_code('W'));
  CHECK("rec 3 header line", r.line == 8);
  CHECK("end", sw_fasta_next(f, &r) == 0);
  CHECK("end again", sw_fasta_next(f, &r) == 0);
  sw_fasta_close(f);

  /* A long line (beyond any fixed buffer). */
  {
    size_t n = 100000;
    char *big = malloc(n + 16);
    REQUIRE("alloc", big != NULL);
    strcpy(big, ">big\n");
    memset(big + 5, 'L', n);
    strcpy(big + 5 + n, "\n");
    char err[600];
    CHECK("long line", parse_all(big, err, sizeof err) == 1);
    free(big);
  }

  /* Errors, each with its line. */
  expect_error("no '>' first", "ACDE\n>x\nAC\n", "1: not a FASTA file");
  expect_error("no '>' first after blank lines", "\n\nACDE\n", "3: not a FASTA file");
  expect_error("empty name", ">a\nAC\n>\nAC\n", "3: empty sequence name");
  expect_error("empty name, blanks only", ">   \nAC\n", "1: empty sequence name");
  expect_error("invalid character", ">a\nACDE\nAC1E\n", "3: invalid character '1' at column 3 of sequence 'a'");
  expect_error("gap character", ">a\nAC-DE\n", "2: invalid character '-' at column 3");
  expect_error("J is not accepted", ">a\nACJ\n", "2: invalid character 'J' at column 3");
  expect_error("space inside a line", ">a\nAC DE\n", "2: invalid character a space at column 3");
  expect_error("control byte", ">a\nAC\x01\n", "2: invalid character byte 0x01 at column 3");
  expect_error("empty sequence in the middle", ">a\nAC\n>b\n\n>c\nAC\n", "3: sequence 'b' is empty");
  expect_error("empty sequence at the end", ">a\nAC\n>b\n", "3: sequence 'b' is empty");
  expect_error("empty file", "", "no FASTA record");
  expect_error("blank lines only", "\n\n  \n", "no FASTA record");

  /* A missing file. */
  f = sw_fasta_open("/nonexistent/dir/db.fa", e, sizeof e);
  CHECK("missing file", f == NULL);
  CHECK("missing file message", strstr(e, "/nonexistent/dir/db.fa: cannot open: ") == e);

  unlink(path);
  return check_summary("test_sw_fasta");
}
