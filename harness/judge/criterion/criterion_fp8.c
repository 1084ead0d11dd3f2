/* criterion_fp8.c — the per-row rule of fp8_e4m3 O, dQ, dK, dV (verdict.h states it;
 * compare.c calls it after the per-tensor rule, from the same row summaries).
 *
 * Each query row of O, dQ and each key of dK, dV is judged against its own magnitude:
 * the per-tensor rule's one E4M3 unit at the tensor's largest |oracle| (and twice the
 * tensor's worst reference error) lets small rows be off by many of their own units. A
 * row's floor is the fp8 quantisation an ABI kernel legitimately adds to that row: one
 * E4M3 unit at the row's largest |oracle| (P, dS and the output each round to E4M3, 2^-4
 * relative at most: measured, a correct flash-style fp8 kernel stays well inside,
 * docs/criterion.md) plus half a subnormal step of the output's E4M3 encoding (2^-10
 * descale: values below 2^-6 descale round absolutely), and for dQ and dK the kernel's
 * own stored O's share of D = dO . O (af_criterion_stored_o_term: the ABI's backward
 * forms D from the E4M3 O the kernel wrote, each element off by up to half an E4M3
 * unit, and D's error reaches every dS of the row coherently, then through dS's own
 * E4M3 cast, hence (1 + u/2) times the term; measured, without it a correct kernel's
 * small dQ rows failed at ratios up to 123), and the E4M3 cast of each term's first operand
 * (cast_share: dS in dQ and dK, P in O and dV), which where a short row's terms cancel (d = 1)
 * is many of the row's own units (measured: a correct flash-style kernel's O rows failed at
 * ratios up to 5.5 without P's share), and for O the scores' FP8 accumulation error
 * (fp8_score_o, criterion.h): AF_FP8_SCORE_UNIT A_i on every score of the row (verdict.h)
 * moves its weights by up to e^(2 u A_i) and O with them, within the hull of the
 * row's V (measured: rows whose scores all sit near -2e5, the low_lse data, put O 1.9
 * row allowances off without it on every cuDNN FP8 plan, docs/cudnn-findings.md F5).
 * A row's allowance never exceeds the per-tensor one plus the largest of these shares. */
#include "judge/criterion/criterion.h"
#include "judge/problem.h"
#include "judge/verdict.h"

#include <math.h>
#include <string.h>

double af_criterion_fp8_row_floor(double unit, double maxo, double step, double cancel) {
    return fmax(unit * maxo + 0.5 * step + cancel, 0x1p-24);
}

/* Element e's share of the E4M3 cast of its terms' first operand. Without cast_sq (dS in
 * dQ and dK, cast to the gradients' own fp8 type): u/2 of the term mass. With it (P in O and
 * dV, always E4M3: 2^-4 relative): the smaller of 2^-4 of the term mass (every term's cast
 * the same way) and 5 standard deviations of the casts as independent errors uniform in
 * +-2^-4 of each term, 5 (2^-4 / sqrt 3) sqrt(sum of the squared terms): many keys do not
 * all round one way, a few (a short row that cancels, as with d = 1) may. */
static double cast_share(double unit, const double *mass, const double *sq, size_t e) {
    if (!sq) return 0.5 * unit * mass[e];
    return fmin(0x1p-4 * mass[e], 5.0 * 0x1p-4 / sqrt(3.0) * sqrt(sq[e]));
}

void af_criterion_fp8_decide(const af_case *c, af_tensor_id id, const af_row_summary *rows, bool have_ref,
                             double tensor_allowed, double unit, double step, double grad_mass, const double *stored_o,
                             const double *cast_mass, const double *cast_sq, const double *score_o,
                             af_criterion_result *out) {
    memset(out, 0, sizeof *out);
    out->ratio = -1;
    bool kvside = id == AF_T_DK || id == AF_T_DV, grad = id == AF_T_DQ || kvside;
    int H = af_tensor_heads(c, id), S = kvside ? c->seqlen_kv : c->seqlen_q;
    int D = (id == AF_T_O || id == AF_T_DV) ? c->head_dim_v : c->head_dim_qk;
    double cancel = grad ? AF_GRAD_CANCEL_UNIT * grad_mass : 0.0;
    af_mask_rule rule = af_mask_rule_of_case(c);
    /* the cap: the per-tensor allowance plus the tensor's largest ABI share (the stored
     * O's and dS's E4M3 casts), which the per-tensor rule never had */
    double extra_max = 0;
    size_t n = (size_t)c->batch * H * S * D;
    for (size_t e = 0; e < n; e++) {
        double g = (1.0 + 0.5 * unit) * (1.0 + 0.5 * unit);
        double x = (stored_o ? g * stored_o[e] : 0) + (cast_mass ? cast_share(unit, cast_mass, cast_sq, e) : 0) +
                   (score_o ? score_o[e] : 0);
        extra_max = fmax(extra_max, x);
    }
    for (int b = 0; b < c->batch; b++) {
        int nrows = kvside ? af_case_len_kv(c, b) : af_case_len_q(c, b);
        int lq = af_case_len_q(c, b), lkv = af_case_len_kv(c, b);
        for (int h = 0; h < H; h++)
            for (int s = 0; s < nrows; s++) {
                af_mask_keys keys;
                if (!kvside && af_mask_visible_keys(&rule, b, lq, lkv, s, &keys) == 0) continue;
                const af_row_summary *rs = &rows[((size_t)b * H + h) * S + s];
                if (rs->n == 0) continue;
                size_t r = ((size_t)b * H + h) * S + s;
                /* the row's largest stored-O term (dQ, dK), cast share and score-error share (O) */
                double dd = 0, cs = 0, so = 0;
                for (int d = 0; stored_o && d < D; d++) dd = fmax(dd, stored_o[r * D + d]);
                for (int d = 0; score_o && d < D; d++) so = fmax(so, score_o[r * D + d]);
                for (int d = 0; cast_mass && d < D; d++) cs = fmax(cs, cast_share(unit, cast_mass, cast_sq, r * D + d));
                double grow = (1.0 + 0.5 * unit) * (1.0 + 0.5 * unit); /* dS's cast, then the output's */
                /* dS's cast adds to the floor; P's is a draw of the roundings the reference's
                 * own error already samples (its recipe casts P too): twice the reference's
                 * error stands for it, and its 5 sigma where the reference's draw is smaller */
                double p_share = cast_sq ? cs : 0.0;
                double extra = grow * dd + (cast_sq ? 0.0 : cs) + so;
                double floor_r = af_criterion_fp8_row_floor(unit, rs->maxo, step, cancel) + extra;
                double allowed = have_ref ? fmax(2.0 * rs->err_ref, p_share) + floor_r : 8.0 * floor_r + p_share;
                if (tensor_allowed > 0 && allowed > tensor_allowed + extra_max) allowed = tensor_allowed + extra_max;
                double ratio = rs->err / allowed;
                out->elements += rs->n;
                if (!(ratio > out->ratio)) continue;
                out->check = AF_CHECK_ROW;
                out->ratio = ratio;
                out->err = rs->err;
                out->allowed = allowed;
                out->floor = floor_r;
                out->err_ref = rs->err_ref;
                out->b = b;
                out->h = h;
                out->row = s;
                out->col = rs->worst_d;
                out->kernel_value = rs->kernel_at;
                out->oracle_value = rs->exact_at;
            }
    }
    if (out->ratio < 0) out->ratio = 0; /* nothing judged */
}
