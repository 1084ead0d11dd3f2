/* inclusion.c — the inclusion probe (AF_V_INERT, probes.h): perturb a visible V row
 * (and a Q row) so much that every correct kernel's rounded O (and LSE) must move. The
 * row and key are the ones of largest weight P_ij among a few rows; the required move
 * comes from expect.h's bounds. */
#include "judge/probes/expect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/clone.h"

/* Logical value = stored * factor for element (b, h, s, d) of input tensor id. */
static double dequant_factor(const af_tensors *t, const af_case *c, af_tensor_id id, int b, int h, int s, int d) {
    if (c->dtype != AF_DT_MXFP8) return af_input_descale(t, c, id, b, h); /* per-tensor fp8, kv_dtype's K and V */
    const af_tensor_view *v = &t->plan.view[id];
    bool along_s = id == AF_T_V;
    int nblk_d = along_s ? v->D : (v->D + 31) / 32, nblk_s = along_s ? (v->S + 31) / 32 : v->S;
    const uint8_t *sc = id == AF_T_Q   ? t->mx_scale_q
                        : id == AF_T_K ? t->mx_scale_k
                        : id == AF_T_V ? t->mx_scale_v
                                       : NULL;
    if (!sc) return 1.0;
    int bs = along_s ? s / 32 : s, bd = along_s ? d : d / 32;
    return ldexp(1.0, (int)sc[(((size_t)b * v->H + h) * nblk_s + bs) * nblk_d + bd] - 127);
}

/* Store logical value y into input element (b, h, s, d), clamped to the format's range.
 * Returns the logical value actually stored. */
static double store_logical(af_tensors *t, const af_case *c, af_tensor_id id, int b, int h, int s, int d, double y) {
    const af_tensor_view *v = &t->plan.view[id];
    double f = dequant_factor(t, c, id, b, h, s, d), lim = probe_storage_max(v->storage) / 2, stored = y / f;
    if (stored > lim) stored = lim;
    if (stored < -lim) stored = -lim;
    int64_t off = offset_of(t, id, b, h, s, d);
    af_storage_store(v->storage, t->buf[v->buffer], off, (float)stored);
    return af_storage_load(v->storage, t->buf[v->buffer], off) * f;
}

static bool row_has_keys(const probe_ctx *x, int i) {
    int lo, hi;
    return probe_visible_range(x, x->fb, i, &lo, &hi) > 0;
}

void probe_inclusion(probe_ctx *x) {
    const af_case *c = x->c;
    const af_inputs *in = x->tg->inputs;
    int Dv = c->head_dim_v, b = x->fb, h = x->fh, g = x->fg, lq = len_q(x, b);
    double scale = af_case_scale(c);
    double *o = calloc((size_t)Dv, sizeof(double)), *mass = calloc((size_t)Dv, sizeof(double));
    double *p = calloc((size_t)c->seqlen_kv + 1, sizeof(double));
    double *o2 = calloc((size_t)Dv, sizeof(double)), *mass2 = calloc((size_t)Dv, sizeof(double));
    double *delta = calloc((size_t)Dv, sizeof(double));
    unsigned char *must = calloc((size_t)Dv, 1);
    af_tensors w;
    memset(&w, 0, sizeof w);
    bool have_w = false;
    if (!o || !mass || !p || !o2 || !mass2 || !delta || !must || lq <= 0) goto done;
    /* the row and key with the largest weight P_ij among a few rows: prefer rows that
     * see few keys (first rows, window rows) and add random ones */
    int best_i = -1, best_j = -1;
    double best_p = 0;
    row_stats best_rs = {0, 0, 0};
    int cand[12], nc = 0;
    for (int i = 0; i < lq && nc < 4; i++)
        if (row_has_keys(x, i)) cand[nc++] = i;
    for (int t = 0; t < 8; t++) {
        int i = probe_pick_row(x, row_has_keys);
        if (i >= 0) cand[nc++] = i;
    }
    for (int k = 0; k < nc; k++) {
        int lo, hi;
        probe_visible_range(x, b, cand[k], &lo, &hi);
        row_stats rs;
        if (probe_row_fp64(x, &x->rule, in, b, h, cand[k], lo, hi, scale, o, mass, p, &rs) || !probe_row_checkable(&rs))
            continue;
        for (int j = 0; j <= hi - lo; j++)
            if (p[j] > best_p) {
                best_p = p[j];
                best_i = cand[k];
                best_j = lo + j;
                best_rs = rs;
            }
    }
    if (best_i < 0 || best_p < 1e-6) {
        probe_note(x, "%s", "inclusion: no row with a key of usable weight");
        goto done;
    }
    int lo, hi;
    probe_visible_range(x, b, best_i, &lo, &hi);
    row_stats rs;
    probe_row_fp64(x, &x->rule, in, b, h, best_i, lo, hi, scale, o, mass, NULL, &rs);
    double eps = probe_eps(c, best_rs.score_err), ulp = probe_ulp(c), tol = x->exact ? 0 : x->tol[AF_T_O];
    if (probe_work_begin(x, c, &w)) goto done;
    have_w = true;
    /* V row j: a change so large that O_d must move: P * |dv| (1 - eps - ulp) exceeds
     * 2 (eps * mass + ulp |O|) + tol with a factor 4 to spare */
    const double *vrow = in->v + (((size_t)b * in->Hkv + g) * in->Skv + best_j) * Dv;
    for (int d = 0; d < Dv; d++) {
        double need = 4 * (2 * (eps * mass[d] + ulp * fabs(o[d])) + tol + 0x1p-20) / (best_p * (1 - eps - ulp));
        double plain = (mass[d] + fabs(o[d])) / best_p; /* at least the output's own size */
        if (need < plain) need = plain;
        double sign = vrow[d] >= o[d] ? 1.0 : -1.0; /* push away from the average */
        double stored = store_logical(&w, c, AF_T_V, b, g, best_j, d, vrow[d] + sign * need);
        delta[d] = stored - vrow[d];
        double moved_exact = best_p * fabs(delta[d]);
        double err_after = eps * (mass[d] + best_p * fabs(delta[d])) + ulp * (fabs(o[d]) + moved_exact);
        must[d] = moved_exact >
                  eps * mass[d] + ulp * fabs(o[d]) + err_after + tol + 2 * probe_out_abs(c, x->tg->baseline) + 0x1p-24;
    }
    /* LSE: scale q of another row (another head when there is one) by 8 */
    int lh = c->heads_q > 1 ? (h + 1) % c->heads_q : h, li = -1;
    if (lh == h) {
        for (int i = 0; i < lq; i++)
            if (i != best_i && row_has_keys(x, i)) {
                li = i;
                break;
            }
    } else {
        li = best_i;
    }
    bool lse_must = false;
    double lse_before = 0, lse_after = 0;
    if (li >= 0) {
        int llo, lhi;
        probe_visible_range(x, b, li, &llo, &lhi);
        row_stats r1, r2;
        probe_row_fp64(x, &x->rule, in, b, lh, li, llo, lhi, scale, o2, mass2, NULL, &r1);
        /* the perturbed inputs: the template's, with q row li of head lh as stored */
        size_t q_elems = (size_t)in->B * in->Hq * in->Sq * in->Dqk, row = ((size_t)b * in->Hq + lh) * in->Sq + li;
        double *pq = malloc(q_elems * sizeof *pq); /* (B, Hq, Sq, Dqk) */
        if (pq) {
            memcpy(pq, in->q, q_elems * sizeof *pq);
            const double *q = in->q + row * in->Dqk;
            for (int d = 0; d < c->head_dim_qk; d++)
                pq[row * in->Dqk + d] = store_logical(&w, c, AF_T_Q, b, lh, li, d, q[d] * 8);
            af_inputs pin = *in;
            pin.q = pq;
            probe_row_fp64(x, &x->rule, &pin, b, lh, li, llo, lhi, scale, o2, mass2, NULL, &r2);
            free(pq);
            double ltol = x->exact ? 0 : x->tol[AF_T_LSE];
            double margin =
                2 * (0x1p-10 * (1 + fabs(r1.lse) + fabs(r2.lse)) + 2 * (r1.score_err + r2.score_err)) + ltol;
            lse_before = r1.lse;
            lse_after = r2.lse;
            lse_must = probe_row_checkable(&r1) && probe_row_checkable(&r2) && fabs(r2.lse - r1.lse) > margin;
        }
    }
    if (probe_work_run(x, c, &w, "inclusion")) goto done;
    const af_tensors *base = x->tg->baseline;
    int first_bad = -1, n_must = 0, n_bad = 0;
    double bva = 0, bvb = 0;
    for (int d = 0; d < Dv; d++) {
        if (!must[d]) continue;
        n_must++;
        double va, vb;
        if (!probe_moved(x, base, &w, AF_T_O, offset_of(&w, AF_T_O, b, h, best_i, d), &va, &vb)) {
            if (first_bad < 0) {
                first_bad = d;
                bva = va;
                bvb = vb;
            }
            n_bad++;
        }
    }
    x->st->inclusion_checked += n_must;
    if (first_bad >= 0) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "V key %d of b%d h%d (weight P=%.3g for row %d, visible keys %d..%d) changed by %.4g: "
                 "O must move by about %.4g but stayed %.6g (%d of %d elements)",
                 best_j, b, g, best_p, best_i, lo, hi, delta[first_bad], best_p * delta[first_bad], bva, n_bad, n_must);
        probe_finding(x, AF_V_INERT, AF_T_O, b, h, best_i, first_bad, bva, bvb, tol, msg);
    }
    if (lse_must) {
        x->st->inclusion_checked++;
        double va, vb;
        if (!probe_moved(x, base, &w, AF_T_LSE, offset_of(&w, AF_T_LSE, b, lh, li, 0), &va, &vb)) {
            char msg[256];
            snprintf(msg, sizeof msg,
                     "q row %d of b%d h%d scaled by 8: LSE must move from %.6g to %.6g but stayed %.6g", li, b, lh,
                     lse_before, lse_after, va);
            probe_finding(x, AF_V_INERT, AF_T_LSE, b, lh, li, -1, va, vb, x->exact ? 0 : x->tol[AF_T_LSE], msg);
        }
    }
done:
    if (have_w) probe_work_end(x, &w);
    free(o);
    free(mass);
    free(p);
    free(o2);
    free(mass2);
    free(delta);
    free(must);
}
