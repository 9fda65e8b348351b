/* sw_matrix.h — the protein alphabet and the substitution matrices of the
 * Smith-Waterman test-bed (stream/sw/).
 *
 * Owns: the residue code (a letter's index in SW_ALPHABET, the NCBI matrix
 * order), the letter -> code table used by the FASTA reader, and the
 * BLOSUM50 and BLOSUM62 tables.
 *
 * Invariants
 *   codes are 0 .. SW_ALPHABET_SIZE-1; SW_ALPHABET[code] is the letter;
 *   every matrix is symmetric, SW_ALPHABET_SIZE x SW_ALPHABET_SIZE, row-major,
 *   and min <= score[a][b] <= max for all a, b (min < 0 < max);
 *   sw_residue_code() accepts the 20 standard amino acids, B, Z, X, '*' and
 *   the rare U (selenocysteine) and O (pyrrolysine), either case; U and O
 *   score as X (what BLAST does; parasail scores them as '*').
 */
#ifndef MM_SW_MATRIX_H
#define MM_SW_MATRIX_H

#include <stdint.h>

#define SW_ALPHABET "ARNDCQEGHILKMFPSTWYVBZX*"
#define SW_ALPHABET_SIZE 24
#define SW_CODE_X 22 /* the unknown residue */

typedef struct sw_matrix {
  const char *name;                                  /* "blosum50" */
  int8_t score[SW_ALPHABET_SIZE][SW_ALPHABET_SIZE];  /* const after init */
  int min;                                           /* smallest entry */
  int max;                                           /* largest entry */
} sw_matrix_t;

/* The matrix called name ("blosum50", "blosum62", any case); NULL if none. */
const sw_matrix_t *sw_matrix_lookup(const char *name);

/* The code of letter c, or -1 when c is not a residue letter. */
int sw_residue_code(unsigned char c);

#endif
