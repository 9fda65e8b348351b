/* sw_kernel_body.h — the striped Smith-Waterman column loop, written once
 * and included by each instruction-set file (sw_kernel_sse2.c,
 * sw_kernel_avx2.c), which first defines the vector type, the primitive
 * operations (swk_*) and the two function names (SWK_KERNEL8,
 * SWK_KERNEL16).  No include guard: included once per instruction set.
 *
 * Per subject residue (a column), with the layout of sw_kernel.h, o = open,
 * e = extend:
 *
 *   main pass, t = 0 .. seglen-1, all lanes at once:
 *     H = max(Hdiag + profile[s_j][t], E[t], F, 0)
 *     E[t] = max(E[t] - e, H - o)        (for the next column)
 *     F    = max(F - e, H - o)           (for vector t+1)
 *   The F carried from the last vector of lane k into the first vector of
 *   lane k+1 is not known during the pass (lanes run side by side), so
 *   F starts at -inf and:
 *
 *   lazy-F pass (Farrar's correction): shift F up one lane and walk the
 *   vectors again from t = 0 (wrapping round with another shift) while some
 *   lane's F could still matter, i.e. while F > H[t] - d for some lane, with
 *   g = min(o, e) and d = o - g = max(o - e, 0):
 *     - F <= H[t] - d means F can neither raise H[t] (F <= H) nor beat the
 *       H[t] - o the main pass already sent to vector t+1 (F - g <= H - o);
 *       if every lane is like that, no later cell changes either: stop.
 *     - otherwise H[t] = max(H[t], F), E[t] = max(E[t], H[t] - o), and
 *       F = F - g goes on to t+1.  (If H[t] rose to F, the true next F is
 *       max(F - e, F - o) = F - g; if it did not, F - g is still a lower
 *       bound of the true next F, since F - o <= H[t] - o was sent by the
 *       main pass.  H[t] - o itself is never re-injected: the main pass
 *       already sent it, and sending it again each lap would never stop.)
 *   F only decays and each wrap shifts in -inf at lane 0, so the pass ends
 *   after at most lanes laps even when g = 0.  A gap value <= 0 never
 *   matters (H >= 0), so the 16-bit test also stops once every F <= 0.
 *
 * 8-bit: unsigned saturated lanes.  The profile holds score + bias, so
 * "H + score" is adds(H, profile) then subs(bias): the floor at 0 is the
 * Smith-Waterman floor for free, and 0 plays -inf for E and F (a gap value
 * <= 0 can never raise a cell above 0).  A sum that saturates at 255 leaves
 * 255 - bias in H, so best >= 255 - bias flags every possibly wrong score.
 * 16-bit: signed saturated lanes, INT16_MIN is -inf, an explicit max with 0
 * is the floor; best >= INT16_MAX - matrix max flags saturation.
 */

/* ---- 8-bit unsigned lanes ------------------------------------------- */
int SWK_KERNEL8(const sw_kernel_args_t *a, bool *saturated) {
  const size_t seglen = a->seglen;
  const SWK_VEC *profile = (const SWK_VEC *)a->profile;
  SWK_VEC *hprev = (SWK_VEC *)a->h0; /* H of the previous column */
  SWK_VEC *hcur = (SWK_VEC *)a->h1;  /* H of this column */
  SWK_VEC *ev = (SWK_VEC *)a->e;     /* E for the next column */
  const int o = a->open > 255 ? 255 : a->open;
  const int e = a->extend > 255 ? 255 : a->extend;
  const int g = o < e ? o : e;
  const SWK_VEC vzero = swk_zero();
  const SWK_VEC vbias = swk_set1_8(a->bias);
  const SWK_VEC vopen = swk_set1_8(o);
  const SWK_VEC vext = swk_set1_8(e);
  const SWK_VEC vd = swk_set1_8(o - g);
  const SWK_VEC vg = swk_set1_8(g);
  SWK_VEC vbest = vzero;

  for (size_t t = 0; t < seglen; t++) {
    swk_store(&hprev[t], vzero);
    swk_store(&ev[t], vzero);
  }
  for (size_t j = 0; j < a->slen; j++) {
    const SWK_VEC *prof = profile + (size_t)a->s[j] * seglen;
    SWK_VEC vf = vzero;
    /* H(i-1, j-1) for vector 0: the last vector of the previous column,
     * one lane up; lane 0 gets the border H(-1, j-1) = 0. */
    SWK_VEC vh = swk_shift_lane8(swk_load(&hprev[seglen - 1]));
    for (size_t t = 0; t < seglen; t++) {
      vh = swk_adds_u8(vh, swk_load(&prof[t]));
      vh = swk_subs_u8(vh, vbias);
      SWK_VEC ve = swk_load(&ev[t]);
      vh = swk_max_u8(vh, ve);
      vh = swk_max_u8(vh, vf);
      vbest = swk_max_u8(vbest, vh);
      swk_store(&hcur[t], vh);
      SWK_VEC vho = swk_subs_u8(vh, vopen);
      swk_store(&ev[t], swk_max_u8(swk_subs_u8(ve, vext), vho));
      vf = swk_max_u8(swk_subs_u8(vf, vext), vho);
      vh = swk_load(&hprev[t]);
    }
    /* Lazy F. */
    vf = swk_shift_lane8(vf);
    size_t t = 0;
    for (;;) {
      SWK_VEC vh2 = swk_load(&hcur[t]);
      if (!swk_any_gt_u8(vf, swk_subs_u8(vh2, vd))) break;
      vh2 = swk_max_u8(vh2, vf);
      swk_store(&hcur[t], vh2);
      vbest = swk_max_u8(vbest, vh2);
      swk_store(&ev[t], swk_max_u8(swk_load(&ev[t]), swk_subs_u8(vh2, vopen)));
      vf = swk_subs_u8(vf, vg);
      if (++t == seglen) {
        t = 0;
        vf = swk_shift_lane8(vf);
      }
    }
    SWK_VEC *tmp = hprev;
    hprev = hcur;
    hcur = tmp;
  }
  int best = swk_hmax_u8(vbest);
  *saturated = best >= a->limit;
  return best;
}

/* ---- 16-bit signed lanes -------------------------------------------- */
int SWK_KERNEL16(const sw_kernel_args_t *a, bool *saturated) {
  const size_t seglen = a->seglen;
  const SWK_VEC *profile = (const SWK_VEC *)a->profile;
  SWK_VEC *hprev = (SWK_VEC *)a->h0;
  SWK_VEC *hcur = (SWK_VEC *)a->h1;
  SWK_VEC *ev = (SWK_VEC *)a->e;
  const int o = a->open;
  const int e = a->extend;
  const int g = o < e ? o : e;
  const SWK_VEC vzero = swk_zero();
  const SWK_VEC vneg = swk_set1_16(INT16_MIN);
  /* INT16_MIN in lane 0 only: ORed into a lane shift, it shifts in -inf. */
  const SWK_VEC vneg0 = swk_lane0_16(INT16_MIN);
  const SWK_VEC vopen = swk_set1_16(o);
  const SWK_VEC vext = swk_set1_16(e);
  const SWK_VEC vd = swk_set1_16(o - g);
  const SWK_VEC vg = swk_set1_16(g);
  SWK_VEC vbest = vzero;

  for (size_t t = 0; t < seglen; t++) {
    swk_store(&hprev[t], vzero);
    swk_store(&ev[t], vneg);
  }
  for (size_t j = 0; j < a->slen; j++) {
    const SWK_VEC *prof = profile + (size_t)a->s[j] * seglen;
    SWK_VEC vf = vneg;
    SWK_VEC vh = swk_shift_lane16(swk_load(&hprev[seglen - 1]));
    for (size_t t = 0; t < seglen; t++) {
      vh = swk_adds_i16(vh, swk_load(&prof[t]));
      SWK_VEC ve = swk_load(&ev[t]);
      vh = swk_max_i16(vh, ve);
      vh = swk_max_i16(vh, vf);
      vh = swk_max_i16(vh, vzero);
      vbest = swk_max_i16(vbest, vh);
      swk_store(&hcur[t], vh);
      SWK_VEC vho = swk_subs_i16(vh, vopen);
      swk_store(&ev[t], swk_max_i16(swk_subs_i16(ve, vext), vho));
      vf = swk_max_i16(swk_subs_i16(vf, vext), vho);
      vh = swk_load(&hprev[t]);
    }
    vf = swk_or(swk_shift_lane16(vf), vneg0);
    size_t t = 0;
    for (;;) {
      SWK_VEC vh2 = swk_load(&hcur[t]);
      if (!swk_any_gt_i16(vf, swk_max_i16(swk_subs_i16(vh2, vd), vzero))) break;
      vh2 = swk_max_i16(vh2, vf);
      swk_store(&hcur[t], vh2);
      vbest = swk_max_i16(vbest, vh2);
      swk_store(&ev[t], swk_max_i16(swk_load(&ev[t]), swk_subs_i16(vh2, vopen)));
      vf = swk_subs_i16(vf, vg);
      if (++t == seglen) {
        t = 0;
        vf = swk_or(swk_shift_lane16(vf), vneg0);
      }
    }
    SWK_VEC *tmp = hprev;
    hprev = hcur;
    hcur = tmp;
  }
  int best = swk_hmax_i16(vbest);
  *saturated = best >= a->limit;
  return best;
}
