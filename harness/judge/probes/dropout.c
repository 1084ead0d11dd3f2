/* dropout.c — the dropout probe (probes.h), cases with dropout = P SEED OFFSET only:
 *
 * Replay (AF_V_NONDETERMINISTIC): the mask is a function of (seed, offset) alone, so the
 * case run again gives bitwise the forward outputs O and LSE, whatever the backend's
 * flags (a deterministic backend's backward bits are the determinism probe's). The
 * runner's first repeat serves when there is one, else one extra run.
 *
 * Keep rate (AF_V_FEATURE_IGNORED): the backend does not report its mask, so it is read
 * off one run with one-hot values: in the focus (sequence b, kv head g) up to Dv keys
 * j_0 .. j_(m-1) spread over the sequence get V_(j_d) = e_d and every other key V = 0,
 * so O_(h,i,d) = P_(i,j_d) w_(i,j_d) for every query head h of the group: 0 where the
 * element is dropped, P / (1 - p) where it is kept (feature_spec.h). V = one-hot rather
 * than V = I keeps every layout and Skv > Dv usable: m columns read m keys per row.
 * An element counts when its undropped P (fp64 from the exact inputs, expect.h) is at
 * least 2^-12, so that kept (>= P) and dropped (0) stay far apart after any correct
 * kernel's rounding (fp16's normal range starts at 2^-14); it is kept when O > P / 2.
 * With n counted elements of keep probability k = 1 - round(p 2^32) / 2^32 (the
 * threshold the mask applies, oracle/dropout_spec.h) the count must satisfy
 *     |kept - n k| <= 5 sqrt(n k (1 - k)) + 1
 * (a 5-sigma binomial bound: a correct kernel falls outside with probability below
 * 1e-6; a kernel that ignores dropout, keeps with probability p or drops whole rows
 * falls outside once n is a few dozen). Fewer than 16 counted elements: a note, no check.
 */
#include "judge/probes/expect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/clone.h"
#include "oracle/dropout_spec.h"

#define DROPOUT_MIN_P  0x1p-12 /* smallest undropped P an element is counted at */
#define DROPOUT_MIN_N  16      /* fewer counted elements: no check */
#define DROPOUT_SIGMAS 5.0

/* Bitwise replay of O and LSE against the baseline. */
static void replay(probe_ctx *x) {
    const af_case *c = x->c;
    af_tensors w;
    const af_tensors *again = NULL;
    bool have_w = false;
    if (x->runs && x->runs->n_repeats > 0) {
        again = x->runs->repeats[0];
    } else {
        if (probe_work_begin(x, c, &w)) return;
        have_w = true;
        x->next_run++;
        if (probe_work_run(x, c, &w, "dropout replay") == 0) again = &w;
    }
    if (again) {
        const af_tensor_id ids[2] = {AF_T_O, AF_T_LSE};
        for (int t = 0; t < 2; t++) {
            af_tensor_id id = ids[t];
            if (probe_buffer_identical(x->tg->baseline, again, id)) continue;
            for (int b = 0; b < c->batch; b++)
                for (int h = 0; h < c->heads_q; h++)
                    for (int i = 0; i < len_q(x, b); i++)
                        for (int d = 0; d < (id == AF_T_O ? c->head_dim_v : 1); d++) {
                            int64_t off = offset_of(again, id, b, h, i, d);
                            if (probe_same_bits(x->tg->baseline, again, id, off)) continue;
                            double va = probe_load(x->tg->baseline, id, off), vb = probe_load(again, id, off);
                            char msg[256];
                            snprintf(msg, sizeof msg,
                                     "dropout replay: the same case (p %g, seed %llu, offset %llu) run again gave "
                                     "other %s bits (%.9g vs %.9g): the mask is not a function of seed and offset",
                                     c->dropout_p, (unsigned long long)c->dropout_seed,
                                     (unsigned long long)c->dropout_offset, af_tensor_name(id), va, vb);
                            probe_finding(x, AF_V_NONDETERMINISTIC, id, b, h, i, d, va, vb, 0, msg);
                            goto found;
                        }
        }
    found:;
    }
    if (have_w) probe_work_end(x, &w);
}

/* Store a logical value into V element (b, g, j, d) of w (an fp8 V of kv_dtype: divided
 * by its descale, a power of two; the probe's values are 0 and 1, exact in fp8). */
static void store_v(const af_case *c, af_tensors *w, int b, int g, int j, int d, float value) {
    const af_tensor_view *v = &w->plan.view[AF_T_V];
    af_storage_store(v->storage, w->buf[v->buffer], offset_of(w, AF_T_V, b, g, j, d),
                     (float)(value / af_input_descale(w, c, AF_T_V, b, g)));
}

static void keep_rate(probe_ctx *x) {
    const af_case *c = x->c;
    int b = x->fb, g = x->fg, lq = len_q(x, b), lkv = len_kv(x, b), Dv = c->head_dim_v;
    int m = Dv < lkv ? Dv : lkv;
    if (m <= 0 || lq <= 0) return;
    int *key_of = malloc(sizeof(int) * (size_t)m); /* (m) key of one-hot column d */
    double *o = malloc(sizeof(double) * (size_t)Dv), *mass = malloc(sizeof(double) * (size_t)Dv); /* (Dv) */
    double *p = malloc(sizeof(double) * (size_t)(c->seqlen_kv > 0 ? c->seqlen_kv : 1)); /* (Skv) undropped P */
    af_tensors w;
    bool have_w = false;
    if (!key_of || !o || !mass || !p) goto done;
    for (int d = 0; d < m; d++) key_of[d] = (int)((long long)d * lkv / m);
    if (probe_work_begin(x, c, &w)) goto done;
    have_w = true;
    for (int j = 0; j < lkv; j++)
        for (int d = 0; d < Dv; d++) store_v(c, &w, b, g, j, d, 0.0f);
    for (int d = 0; d < m; d++) store_v(c, &w, b, g, key_of[d], d, 1.0f);
    x->next_run++;
    if (probe_work_run(x, c, &w, "dropout keep rate")) goto done;
    af_inputs undropped = *x->tg->inputs; /* P as the softmax gives it: no weights */
    undropped.feat.dropout_p = 0.0;
    double scale = af_case_scale(c);
    long long n = 0, kept = 0;
    int first_h = -1, first_i = -1;
    for (int h = g * x->group; h < (g + 1) * x->group; h++)
        for (int i = 0; i < lq; i++) {
            int lo, hi;
            if (probe_visible_range(x, b, i, &lo, &hi) == 0) continue;
            row_stats rs;
            if (probe_row_fp64(x, &x->rule, &undropped, b, h, i, lo, hi, scale, o, mass, p, &rs) ||
                !probe_row_checkable(&rs))
                continue;
            for (int d = 0; d < m; d++) {
                int j = key_of[d];
                if (j < lo || j > hi || p[j - lo] < DROPOUT_MIN_P) continue;
                double got = probe_load(&w, AF_T_O, offset_of(&w, AF_T_O, b, h, i, d));
                n++;
                kept += got > 0.5 * p[j - lo];
                if (first_h < 0) first_h = h, first_i = i;
            }
        }
    x->st->dropout_counted = n;
    x->st->dropout_kept = kept;
    if (n < DROPOUT_MIN_N) {
        probe_note(x, "%s", "dropout keep rate: too few elements of usable P (fewer than 16)");
        goto done;
    }
    double k = 1.0 - af_oracle_dropout_rate(c->dropout_p), mean = (double)n * k;
    double bound = DROPOUT_SIGMAS * sqrt((double)n * k * (1.0 - k)) + 1.0;
    if (fabs((double)kept - mean) > bound) {
        char msg[320];
        snprintf(msg, sizeof msg,
                 "dropout keep rate: %lld of %lld elements of P kept (%.4f), p %g expects %.1f +- %.1f "
                 "(|kept - n(1-p)| <= 5 sqrt(n p (1-p)) + 1; read with one-hot V on b%d kv head %d)",
                 kept, n, (double)kept / (double)n, c->dropout_p, mean, bound, b, g);
        probe_finding(x, AF_V_FEATURE_IGNORED, AF_T_O, b, first_h, first_i, 0, mean, (double)kept, bound, msg);
    }
done:
    if (have_w) probe_work_end(x, &w);
    free(key_of);
    free(o);
    free(mass);
    free(p);
}

void probe_dropout(probe_ctx *x) {
    if (x->c->dropout_p == 0.0) return;
    replay(x);
    if (!x->stop) keep_rate(x);
}
