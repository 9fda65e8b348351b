/* sw_scan_ref.c — the test oracle for whole scans: the same input and
 * output as mmsw ("score<TAB>name" per database sequence, in order), computed
 * by the plain scalar sw_ref_score, one sequence at a time, no SIMD, no
 * threads.  Used by test_mmsw.py.  Not a benchmark.
 *
 * usage: sw_scan_ref QUERY.fa DB.fa MATRIX OPEN EXTEND
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sw_fasta.h"
#include "sw_matrix.h"
#include "sw_ref.h"

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: sw_scan_ref QUERY.fa DB.fa MATRIX OPEN EXTEND\n");
    return 2;
  }
  const sw_matrix_t *m = sw_matrix_lookup(argv[3]);
  int open = atoi(argv[4]), extend = atoi(argv[5]);
  char err[600];
  sw_fasta_t *qf = sw_fasta_open(argv[1], err, sizeof err);
  sw_fasta_t *df = sw_fasta_open(argv[2], err, sizeof err);
  if (m == NULL || qf == NULL || df == NULL) {
    fprintf(stderr, "sw_scan_ref: bad arguments\n");
    return 2;
  }
  sw_record_t r;
  if (sw_fasta_next(qf, &r) != 1) return 2;
  uint8_t *q = malloc(r.len);
  size_t qlen = r.len;
  memcpy(q, r.codes, qlen);
  int rc;
  while ((rc = sw_fasta_next(df, &r)) == 1)
    printf("%d\t%s\n", sw_ref_score(q, qlen, r.codes, r.len, m, open, extend), r.name);
  free(q);
  sw_fasta_close(qf);
  sw_fasta_close(df);
  return rc < 0 ? 2 : 0;
}
