/* sw_fasta.h — a strict, streaming FASTA reader for protein sequences.
 *
 * Owns: reading one record at a time from a file (the emitter reads the
 * database while workers align), residue letters -> codes (sw_matrix.h), and
 * the error text "FILE:LINE: what is wrong".
 *
 * The format accepted:
 *   - the first line that is not blank starts with '>';
 *   - a header is '>' then the name (the first word: no spaces or tabs
 *     inside), then optionally whitespace and a free description;
 *   - sequence lines hold residue letters only (20 amino acids, B Z X U O *,
 *     either case); trailing spaces, tabs and '\r' are dropped;
 *   - blank lines are allowed anywhere;
 *   - every record has at least one residue.
 * Anything else is an error: no '>' first, an empty name, an invalid
 * character (with its column), an empty sequence, an unreadable file, an
 * empty file.
 *
 * Invariants: a record returned by sw_fasta_next stays valid until the next
 * call or sw_fasta_close; rec.len >= 1; every code < SW_ALPHABET_SIZE.
 */
#ifndef MM_SW_FASTA_H
#define MM_SW_FASTA_H

#include <stddef.h>
#include <stdint.h>

typedef struct sw_fasta sw_fasta_t;

typedef struct sw_record {
  const char *name;     /* NUL-terminated first word of the header */
  size_t name_len;
  const uint8_t *codes; /* residue codes */
  size_t len;           /* >= 1 */
  size_t line;          /* line number of the header */
} sw_record_t;

/* Opens path for reading ("-" is standard input).  NULL if it cannot: the
 * reason is written into err (at most errlen bytes, "PATH: reason"). */
sw_fasta_t *sw_fasta_open(const char *path, char *err, size_t errlen);

/* The next record: 1 (filled in rec), 0 at the end of the file, -1 on an
 * error, whose text sw_fasta_error() then gives ("PATH:LINE: reason"). */
int sw_fasta_next(sw_fasta_t *f, sw_record_t *rec);

const char *sw_fasta_error(const sw_fasta_t *f);

/* Line the reader has reached (for "more than one sequence" messages). */
size_t sw_fasta_line(const sw_fasta_t *f);

void sw_fasta_close(sw_fasta_t *f);

#endif
