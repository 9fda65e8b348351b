/* test_sw_matrix.c — the substitution matrices and the residue codes:
 * symmetry, extremes, a few well-known entries, the letter table (both
 * cases, B Z X * U O, everything else refused) and, when parasail's headers
 * are installed (libparasail-dev; MMSW_HAVE_PARASAIL_H), every entry of
 * BLOSUM50 and BLOSUM62 against parasail's own tables.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "sw_matrix.h"

#ifdef MMSW_HAVE_PARASAIL_H
#include <parasail.h>
#include <parasail/matrices/blosum50.h>
#include <parasail/matrices/blosum62.h>

static void check_against_parasail(const sw_matrix_t *m, const parasail_matrix_t *p) {
  CHECK("parasail matrix size", p->size == SW_ALPHABET_SIZE);
  CHECK("parasail alphabet order", strcmp(p->alphabet, SW_ALPHABET) == 0);
  CHECK("parasail min", p->min == m->min);
  CHECK("parasail max", p->max == m->max);
  int diff = 0;
  for (int a = 0; a < SW_ALPHABET_SIZE; a++)
    for (int b = 0; b < SW_ALPHABET_SIZE; b++)
      if (p->matrix[a * p->size + b] != m->score[a][b]) diff++;
  CHECK("every entry equals parasail's", diff == 0);
  fprintf(stderr, "test_sw_matrix: %s checked against parasail: %d differences\n", m->name, diff);
}
#endif

static int code(char c) { return sw_residue_code((unsigned char)c); }

int main(void) {
  const sw_matrix_t *b50 = sw_matrix_lookup("blosum50");
  const sw_matrix_t *b62 = sw_matrix_lookup("BLOSUM62");
  REQUIRE("lookup", b50 && b62);
  CHECK("unknown matrix", sw_matrix_lookup("pam250") == NULL);
  const sw_matrix_t *ms[2] = {b50, b62};
  for (int k = 0; k < 2; k++) {
    const sw_matrix_t *m = ms[k];
    int mn = 100, mx = -100, asym = 0;
    for (int a = 0; a < SW_ALPHABET_SIZE; a++)
      for (int b = 0; b < SW_ALPHABET_SIZE; b++) {
        if (m->score[a][b] != m->score[b][a]) asym++;
        if (m->score[a][b] < mn) mn = m->score[a][b];
        if (m->score[a][b] > mx) mx = m->score[a][b];
      }
    CHECK("symmetric", asym == 0);
    CHECK("min field", mn == m->min);
    CHECK("max field", mx == m->max);
  }
  /* Entries anyone can look up in the NCBI files. */
  CHECK("B62 W/W", b62->score[code('W')][code('W')] == 11);
  CHECK("B62 C/C", b62->score[code('C')][code('C')] == 9);
  CHECK("B62 A/A", b62->score[code('A')][code('A')] == 4);
  CHECK("B62 I/V", b62->score[code('I')][code('V')] == 3);
  CHECK("B62 W/D", b62->score[code('W')][code('D')] == -4);
  CHECK("B50 W/W", b50->score[code('W')][code('W')] == 15);
  CHECK("B50 C/C", b50->score[code('C')][code('C')] == 13);
  CHECK("B50 H/H", b50->score[code('H')][code('H')] == 10);
  CHECK("B50 P/P", b50->score[code('P')][code('P')] == 10);
  CHECK("B50 D/B", b50->score[code('D')][code('B')] == 5);
  CHECK("B50 min", b50->min == -5 && b50->max == 15);
  CHECK("B62 min", b62->min == -4 && b62->max == 11);

  /* Residue codes. */
  for (int i = 0; i < SW_ALPHABET_SIZE; i++) {
    CHECK("upper case", code(SW_ALPHABET[i]) == i);
    if (SW_ALPHABET[i] != '*')
      CHECK("lower case", code((char)(SW_ALPHABET[i] - 'A' + 'a')) == i);
  }
  CHECK("U scores as X", code('U') == SW_CODE_X && code('u') == SW_CODE_X);
  CHECK("O scores as X", code('O') == SW_CODE_X);
  const char *bad = "JjZ-.0123456789 \t\r>;#@";
  for (const char *p = bad; *p; p++)
    if (*p != 'Z') CHECK("refused", code(*p) == -1);
  CHECK("NUL refused", sw_residue_code(0) == -1);
  CHECK("high byte refused", sw_residue_code(0xC3) == -1);

#ifdef MMSW_HAVE_PARASAIL_H
  check_against_parasail(b50, &parasail_blosum50);
  check_against_parasail(b62, &parasail_blosum62);
#else
  fprintf(stderr, "test_sw_matrix: parasail headers absent: tables checked by hand only\n");
#endif
  return check_summary("test_sw_matrix");
}
