/* test_cpu_backend.c — the cpu backend (the low-precision reference), as a
 * Longer than 600 lines on purpose: the reference's specification as tests, one section per
 * rule of cpu.c's header comment.
 * specification:
 *   - closed forms: equal keys give the mean of V; one visible key gives that V row
 *     exactly (and, backward, dV = dO, dQ = dK = 0 exactly);
 *   - it agrees with an independent double-precision attention written here, for every
 *     mask kind, alignment and window, within the rounding of the case dtype;
 *   - its gradients agree with central finite differences of sum(dO * O) in double;
 *   - every layout (bshd, sbhd, bhsd, thd with gaps, kv/qkv packing, stride gaps, paged
 *     KV) gives bit-identical logical outputs;
 *   - GQA equals MHA with K/V replicated;
 *   - fully masked rows give O = 0, LSE = -inf, dQ = 0, and move no gradient;
 *   - every valid output element is written, padding rows hold 0 / -inf, and gaps,
 *     guards and inputs are left untouched;
 *   - bit-identical results with 1 and 3 threads;
 *   - fp8_e4m3 forward follows cuDNN's FP8 recipe (model/tensors.h) bit for bit:
 *     scores from the stored E4M3 values times scale, descale_q, descale_k; P = E/Z
 *     cast to E4M3 after * 448; O descaled by 1/448 and descale_v, scaled by scale_o and
 *     stored E4M3; the output scale is the largest power of two that keeps
 *     max|V| * scale_o <= 448, and af_outputs_read dequantises O exactly;
 *   - serves fp8_e4m3 backward (its recipe: test_fp8_backward.c) and mxfp8 backward
 *     backward and context parallelism.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "model/case.h"
#include "model/case_mask.h"
#include "model/gen.h"
#include "model/layout.h"
#include "oracle/mask_spec.h"
#include "model/tensors.h"
#include "model/mathf.h"
#include "util/check.h"

/* ---- one prepared run ------------------------------------------------------------ */

typedef struct {
    af_case c;
    af_tensors t;
    af_inputs in;   /* dense logical inputs (exact stored values) */
    af_outputs out; /* dense outputs after execute() */
    af_run_info info;
} cpu_run;

static void parse_case(af_case *c, const char *text) {
    af_error e;
    if (af_case_parse(text, "test", c, &e) != 0) {
        char msg[1024];
        af_error_format(&e, msg, sizeof msg);
        CHECK_MSG(false, "case does not parse: %s\n%s", msg, text);
    }
}

/* Parse, allocate, generate inputs. */
static void prepare(cpu_run *r, const char *text) {
    memset(r, 0, sizeof *r);
    parse_case(&r->c, text);
    char why[512] = "";
    CHECK_MSG(af_tensors_alloc(&r->t, &r->c, why, sizeof why) == 0, "%s", why);
    CHECK(af_inputs_alloc(&r->in, &r->c) == 0);
    CHECK(af_inputs_generate(&r->c, &r->t, &r->in) == 0);
    CHECK(af_outputs_alloc(&r->out, &r->c) == 0);
}

/* Poison the outputs, run the backend (must succeed), read the outputs back. */
static void execute(af_backend *be, cpu_run *r) {
    char why[512] = "";
    af_tensors_poison_outputs(&r->t, &r->c);
    CHECK_MSG(be->supports(be, &r->c, why, sizeof why) == AF_RUN_OK, "%s", why);
    af_run_status st = be->run(be, &r->c, "", &r->t, &r->info, why, sizeof why);
    CHECK_MSG(st == AF_RUN_OK, "run failed (%d): %s", (int)st, why);
    CHECK(r->info.engine[0] == '\0' && r->info.workspace_bytes == 0 && r->info.seconds >= 0);
    af_outputs_read(&r->t, &r->c, &r->out);
}

static void release(cpu_run *r) {
    af_tensors_free(&r->t);
    af_inputs_free(&r->in);
    af_outputs_free(&r->out);
}

/* Dense index of (b, h, s, d) in a (B, H, S, D) array. */
static int64_t di(int H, int S, int D, int b, int h, int s, int d) { return (((int64_t)b * H + h) * S + s) * D + d; }

/* Store value into logical element (b, h, s, d) of input tensor tid (rounded to storage). */
static void poke(cpu_run *r, af_tensor_id tid, int b, int h, int s, int d, double value) {
    const af_tensor_view *v = &r->t.plan.view[tid];
    af_storage_store(v->storage, r->t.buf[v->buffer], af_layout_offset(&r->t.plan, tid, b, h, s, d), (float)value);
}
static double peek(const cpu_run *r, af_tensor_id tid, int b, int h, int s, int d) {
    const af_tensor_view *v = &r->t.plan.view[tid];
    return af_storage_load(v->storage, r->t.buf[v->buffer], af_layout_offset(&r->t.plan, tid, b, h, s, d));
}

/* ---- an independent double-precision attention ----------------------------------- */

/* Does query row i of sequence b see key j? The spec, one element at a time. */
static bool sees(const af_case *c, int b, int i, int j) {
    int lq = af_case_len_q(c, b), lk = af_case_len_kv(c, b);
    if (i < 0 || i >= lq || j < 0 || j >= lk) return false;
    long diag = c->align == AF_ALIGN_TOP_LEFT ? i : (long)i + lk - lq;
    if (c->mask == AF_MASK_CAUSAL && j > diag) return false;
    if (c->window_left >= 0 && j < diag - c->window_left) return false;
    if (c->window_right >= 0 && j > diag + c->window_right) return false;
    if (c->attention_chunk > 0) { /* the same chunk number (floor division) */
        long n = c->attention_chunk, cd = diag, cj = j;
        while (cd < 0) cd += n, cj += n; /* both moved by whole chunks: the same chunks */
        if (cd / n != cj / n) return false;
    }
    if (c->n_documents > 0) { /* the same document: count the ends at or before each */
        if (diag < 0) return false;
        int dd = 0, dj = 0;
        for (int k = 0, end = 0; k < c->n_documents; k++) {
            end += c->documents[k];
            dd += end <= diag;
            dj += end <= j;
        }
        if (dd != dj) return false;
    }
    return true;
}

/* The global keys come on top of everything above. */
static bool sees_all(const af_case *c, int b, int i, int j) {
    int lq = af_case_len_q(c, b), lk = af_case_len_kv(c, b);
    if (i >= 0 && i < lq && j >= 0 && j < lk && j < c->global_keys) return true;
    return sees(c, b, i, j);
}

/* This test's mask predicate says what the specification (mask_spec.h, owned by the
 * oracle) says, over a grid of lengths, alignments and windows. (The backend itself
 * has its own code and never calls the specification.) */
static void test_test_mask_agrees_with_spec(void) {
    int windows[] = {-1, 0, 1, 3}, chunks[] = {0, 1, 2, 3};
    /* documents (lengths) and global keys: none; G 1; 1,2; 3 and G 2; 2,2 */
    static const int docs[5][3] = {{0}, {0}, {1, 2}, {3}, {2, 2}}, n_docs[5] = {0, 0, 2, 1, 2},
                     globals[5] = {0, 1, 0, 2, 0};
    for (int e = 0; e < 5; e++)
        for (int chunk = 0; chunk < 4; chunk++)
            for (int causal = 0; causal < 2; causal++)
                for (int br = 0; br < 2; br++)
                    for (int wl = 0; wl < 4; wl++)
                        for (int wr = 0; wr < 4; wr++)
                            for (int lq = 0; lq <= 6; lq++)
                                for (int lk = 0; lk <= 6; lk++) {
                                    af_case c;
                                    af_case_defaults(&c);
                                    c.has_seqlens = true;
                                    c.seqlens_q[0] = lq;
                                    c.seqlens_kv[0] = lk;
                                    c.mask = causal ? AF_MASK_CAUSAL : AF_MASK_NONE;
                                    c.align = br ? AF_ALIGN_BOTTOM_RIGHT : AF_ALIGN_TOP_LEFT;
                                    c.window_left = windows[wl];
                                    c.window_right = windows[wr];
                                    c.attention_chunk = chunks[chunk];
                                    c.global_keys = globals[e];
                                    c.n_documents = n_docs[e];
                                    for (int k = 0; k < n_docs[e]; k++) c.documents[k] = docs[e][k];
                                    af_mask_rule rule = af_mask_rule_of_case(&c);
                                    for (int i = -1; i <= 7; i++)
                                        for (int j = -1; j <= 7; j++)
                                            CHECK_MSG(
                                                sees_all(&c, 0, i, j) == af_mask_visible(&rule, lq, lk, i, j),
                                                "extra %d chunk %d causal %d br %d window %d,%d lens %d,%d: row %d "
                                                "key %d",
                                                e, chunks[chunk], causal, br, windows[wl], windows[wr], lq, lk, i, j);
                                }
}

/* Attention in double on dense inputs q (B,Hq,Sq,Dqk), k (B,Hkv,Skv,Dqk),
 * v (B,Hkv,Skv,Dv). Writes o (B,Hq,Sq,Dv) and lse (B,Hq,Sq) when not NULL, and
 * returns sum over valid rows of dout . o when dout (B,Hq,Sq,Dv) is not NULL. */
static double ref_attention(const af_case *c, const double *q, const double *k, const double *v, const double *dout,
                            double *o, double *lse) {
    int B = c->batch, Hq = c->heads_q, Hkv = c->heads_kv, Sq = c->seqlen_q, Skv = c->seqlen_kv;
    int Dqk = c->head_dim_qk, Dv = c->head_dim_v;
    double scale = (double)af_case_scale(c), f = 0;
    double *s = malloc(sizeof(double) * (size_t)Skv), *orow = malloc(sizeof(double) * (size_t)Dv);
    CHECK(s && orow);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < Hq; h++)
            for (int i = 0; i < af_case_len_q(c, b); i++) {
                int hk = h / (Hq / Hkv);
                double m = -INFINITY, l = 0;
                for (int j = 0; j < Skv; j++) {
                    if (!sees_all(c, b, i, j)) continue;
                    double acc = 0;
                    for (int d = 0; d < Dqk; d++)
                        acc += q[di(Hq, Sq, Dqk, b, h, i, d)] * k[di(Hkv, Skv, Dqk, b, hk, j, d)];
                    s[j] = acc * scale;
                    if (s[j] > m) m = s[j];
                }
                for (int d = 0; d < Dv; d++) orow[d] = 0;
                for (int j = 0; j < Skv; j++) {
                    if (!sees_all(c, b, i, j)) continue;
                    double p = exp(s[j] - m);
                    l += p;
                    for (int d = 0; d < Dv; d++) orow[d] += p * v[di(Hkv, Skv, Dv, b, hk, j, d)];
                }
                for (int d = 0; d < Dv; d++) {
                    double x = l > 0 ? orow[d] / l : 0.0;
                    if (o) o[di(Hq, Sq, Dv, b, h, i, d)] = x;
                    if (dout) f += dout[di(Hq, Sq, Dv, b, h, i, d)] * x;
                }
                if (lse) lse[di(Hq, Sq, 1, b, h, i, 0)] = l > 0 ? m + log(l) : -INFINITY;
            }
    free(s);
    free(orow);
    return f;
}

/* Gradient of sum(dO * O) with respect to every valid element of x (one of in->q,
 * in->k, in->v; shape (B, H, S, D)) by central differences in double. */
static void finite_differences(const af_case *c, af_inputs *in, double *x, int H, int S, int D, bool kv_side,
                               double *grad) {
    memset(grad, 0, sizeof(double) * (size_t)c->batch * H * S * D);
    for (int b = 0; b < c->batch; b++) {
        int len = kv_side ? af_case_len_kv(c, b) : af_case_len_q(c, b);
        for (int h = 0; h < H; h++)
            for (int s = 0; s < len; s++)
                for (int d = 0; d < D; d++) {
                    int64_t idx = di(H, S, D, b, h, s, d);
                    double x0 = x[idx], eps = 1e-4 * (fabs(x0) > 1 ? fabs(x0) : 1.0);
                    x[idx] = x0 + eps;
                    double fp = ref_attention(c, in->q, in->k, in->v, in->dout, NULL, NULL);
                    x[idx] = x0 - eps;
                    double fm = ref_attention(c, in->q, in->k, in->v, in->dout, NULL, NULL);
                    x[idx] = x0;
                    grad[idx] = (fp - fm) / (2 * eps);
                }
    }
}

/* max |a - b| and max |b| over the valid rows of a (B, H, S, D) tensor. */
static void diff_stats(const af_case *c, bool kv_side, int H, int S, int D, const double *a, const double *b_,
                       double *max_err, double *max_ref) {
    *max_err = 0;
    *max_ref = 0;
    for (int b = 0; b < c->batch; b++) {
        int len = kv_side ? af_case_len_kv(c, b) : af_case_len_q(c, b);
        for (int h = 0; h < H; h++)
            for (int s = 0; s < len; s++)
                for (int d = 0; d < D; d++) {
                    int64_t idx = di(H, S, D, b, h, s, d);
                    double e = fabs(a[idx] - b_[idx]);
                    if (!(e <= *max_err)) *max_err = e; /* NaN propagates */
                    if (fabs(b_[idx]) > *max_ref) *max_ref = fabs(b_[idx]);
                }
    }
}

/* Bitwise equality over the valid rows of two dense (B, H, S, D) tensors. */
static bool same_bits(const af_case *c, bool kv_side, int H, int S, int D, const double *a, const double *b_) {
    for (int b = 0; b < c->batch; b++) {
        int len = kv_side ? af_case_len_kv(c, b) : af_case_len_q(c, b);
        for (int h = 0; h < H; h++)
            for (int s = 0; s < len; s++)
                for (int d = 0; d < D; d++) {
                    int64_t idx = di(H, S, D, b, h, s, d);
                    if (memcmp(&a[idx], &b_[idx], sizeof(double)) != 0) {
                        fprintf(stderr, "differ at b%d h%d s%d d%d: %.17g vs %.17g\n", b, h, s, d, a[idx], b_[idx]);
                        return false;
                    }
                }
    }
    return true;
}

/* All five outputs of two runs of the same logical case are bit-identical. */
static bool same_outputs(const cpu_run *x, const cpu_run *y) {
    const af_case *c = &x->c;
    int Hq = c->heads_q, Hkv = c->heads_kv, Sq = c->seqlen_q, Skv = c->seqlen_kv;
    int Dqk = c->head_dim_qk, Dv = c->head_dim_v;
    bool ok =
        same_bits(c, false, Hq, Sq, Dv, x->out.o, y->out.o) && same_bits(c, false, Hq, Sq, 1, x->out.lse, y->out.lse);
    if (ok && c->backward)
        ok = same_bits(c, false, Hq, Sq, Dqk, x->out.dq, y->out.dq) &&
             same_bits(c, true, Hkv, Skv, Dqk, x->out.dk, y->out.dk) &&
             same_bits(c, true, Hkv, Skv, Dv, x->out.dv, y->out.dv);
    return ok;
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_interface(af_backend *be) {
    char why[512];
    CHECK(strcmp(be->name, "cpu") == 0);
    CHECK(be->flags & AF_BACKEND_DETERMINISTIC);
    CHECK(!(be->flags & AF_BACKEND_NEEDS_GPU));
    CHECK(be->engines == NULL);
    CHECK(be->available(be, why, sizeof why) == 0);
    af_case c;
    parse_case(&c, "dtype = bf16\nbackward = yes\n");
    CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_OK);
    parse_case(&c, "dtype = fp8_e4m3\n");
    CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_OK);
    parse_case(&c, "dtype = mxfp8\n");
    CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_OK);

    parse_case(&c, "dtype = fp8_e4m3\nbackward = yes\n"); /* test_fp8_backward.c */
    CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_OK);
    parse_case(&c, "dtype = mxfp8\nbackward = yes\n"); /* test_mxfp8_backward.c */
    CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_OK);

    parse_case(&c, "seqlen = 32\ncp = 2 p2p\n");
    CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_DECLINED);
    CHECK_MSG(strstr(why, "context parallel"), "%s", why);
    /* run() declines what supports() declines */
    af_run_info info;
    af_tensors t;
    char why2[512] = "";
    CHECK(af_tensors_alloc(&t, &c, why2, sizeof why2) == 0);
    CHECK(be->run(be, &c, "", &t, &info, why, sizeof why) == AF_RUN_DECLINED);
    af_tensors_free(&t);
}

/* All keys equal: every score of a row is the same, so P = 1 and O is the plain mean
 * of the visible V rows (up to fp32 summation and the final fp16 rounding). */
static void test_equal_keys_give_mean_of_v(af_backend *be) {
    cpu_run r;
    prepare(&r, "heads = 2\nseqlen_q = 8\nseqlen_kv = 40\nhead_dim_qk = 64\nhead_dim_v = 32\n"
                "seed = 11\n");
    const af_case *c = &r.c;
    for (int h = 0; h < c->heads_kv; h++)
        for (int j = 1; j < c->seqlen_kv; j++)
            for (int d = 0; d < c->head_dim_qk; d++) poke(&r, AF_T_K, 0, h, j, d, peek(&r, AF_T_K, 0, h, 0, d));
    af_inputs_read(c, &r.t, &r.in);
    execute(be, &r);
    int n = c->seqlen_kv, Dv = c->head_dim_v, Dqk = c->head_dim_qk;
    for (int h = 0; h < c->heads_q; h++)
        for (int i = 0; i < c->seqlen_q; i++) {
            double qk = 0;
            for (int d = 0; d < Dqk; d++)
                qk +=
                    r.in.q[di(c->heads_q, c->seqlen_q, Dqk, 0, h, i, d)] * r.in.k[di(c->heads_kv, n, Dqk, 0, h, 0, d)];
            double lse = qk * (double)af_case_scale(c) + log((double)n);
            double got_lse = r.out.lse[di(c->heads_q, c->seqlen_q, 1, 0, h, i, 0)];
            CHECK_MSG(fabs(got_lse - lse) <= 1e-5 * fmax(1.0, fabs(lse)), "LSE %g vs %g", got_lse, lse);
            for (int d = 0; d < Dv; d++) {
                double mean = 0, sum_abs = 0;
                for (int j = 0; j < n; j++) {
                    double x = r.in.v[di(c->heads_kv, n, Dv, 0, h, j, d)];
                    mean += x / n;
                    sum_abs += fabs(x);
                }
                double got = r.out.o[di(c->heads_q, c->seqlen_q, Dv, 0, h, i, d)];
                double tol = 0x1p-11 * fabs(mean) + 64 * 0x1p-24 * sum_abs / n + 0x1p-24;
                CHECK_MSG(fabs(got - mean) <= tol, "h%d i%d d%d: O %.8g vs mean %.8g", h, i, d, got, mean);
            }
        }
    release(&r);
}

/* causal + window_left 0: row i sees only key diag(i). Then O is exactly that V row,
 * LSE is that one score, dV_j = dO of the one row that sees key j, dQ = dK = 0. */
static void test_one_visible_key(af_backend *be) {
    const char *cases[] = {
        "heads = 2\nseqlen = 24\nhead_dim = 32\nmask = causal\nwindow = 0,-1\nbackward = yes\n",
        ("heads = 2\nseqlen_q = 16\nseqlen_kv = 24\nhead_dim = 32\nmask = causal_bottom_right\n"
         "window = 0,-1\nbackward = yes\ndtype = bf16\n"),
        /* no causal bit: window (0, 0) alone pins the diagonal */
        ("heads = 1\nseqlen_q = 20\nseqlen_kv = 12\nhead_dim_qk = 16\nhead_dim_v = 8\nwindow = 0,0\n"
         "align = bottom_right\nbackward = yes\n"),
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        cpu_run r;
        prepare(&r, cases[ci]);
        execute(be, &r);
        const af_case *c = &r.c;
        int H = c->heads_q, Sq = c->seqlen_q, Skv = c->seqlen_kv, Dqk = c->head_dim_qk, Dv = c->head_dim_v;
        int shift = c->align == AF_ALIGN_BOTTOM_RIGHT ? Skv - Sq : 0;
        for (int h = 0; h < H; h++) {
            for (int i = 0; i < Sq; i++) {
                int j = i + shift;
                if (j < 0 || j >= Skv) continue; /* fully masked rows: another test */
                for (int d = 0; d < Dv; d++)
                    CHECK_MSG(r.out.o[di(H, Sq, Dv, 0, h, i, d)] == r.in.v[di(H, Skv, Dv, 0, h, j, d)],
                              "case %zu h%d i%d d%d", ci, h, i, d);
                double qk = 0;
                for (int d = 0; d < Dqk; d++)
                    qk += r.in.q[di(H, Sq, Dqk, 0, h, i, d)] * r.in.k[di(H, Skv, Dqk, 0, h, j, d)];
                qk *= (double)af_case_scale(c);
                CHECK(fabs(r.out.lse[di(H, Sq, 1, 0, h, i, 0)] - qk) <= 1e-6 * fmax(1.0, fabs(qk)));
                for (int d = 0; d < Dqk; d++) CHECK(r.out.dq[di(H, Sq, Dqk, 0, h, i, d)] == 0.0);
            }
            for (int j = 0; j < Skv; j++) {
                int i = j - shift; /* the one row that sees key j, if any */
                for (int d = 0; d < Dqk; d++) CHECK(r.out.dk[di(H, Skv, Dqk, 0, h, j, d)] == 0.0);
                for (int d = 0; d < Dv; d++) {
                    double want = i >= 0 && i < Sq ? r.in.dout[di(H, Sq, Dv, 0, h, i, d)] : 0.0;
                    CHECK_MSG(r.out.dv[di(H, Skv, Dv, 0, h, j, d)] == want, "case %zu h%d j%d d%d", ci, h, j, d);
                }
            }
        }
        release(&r);
    }
}

/* Round a float to the storage type and back (the case dtype's rounding). */
static float to_storage(af_storage st, float x) {
    uint8_t tmp[4];
    af_storage_store(st, tmp, 0, x);
    return (float)af_storage_load(st, tmp, 0);
}

/* The reference's exact fp32 recipe, restated here for one small GQA case and checked
 * bit for bit: the floor of every case depends on these roundings, so a change to them
 * must be deliberate. Also checks that the roundings matter (a recipe without the
 * rounding of P and dS gives different bits), so this test has teeth. */
static void test_follows_the_fp32_recipe(af_backend *be) {
    const char *cases[] = {
        ("dtype = fp16\nheads_q = 2\nheads_kv = 1\nseqlen_q = 5\nseqlen_kv = 9\nhead_dim_qk = 12\nhead_dim_v = 6\n"
         "mask = causal_bottom_right\nwindow = 5,-1\nbackward = yes\nseed = 31\ndata = normal:2\n"),
        ("dtype = bf16\nheads_q = 2\nheads_kv = 1\nseqlen_q = 7\nseqlen_kv = 7\nhead_dim_qk = 12\nhead_dim_v = 6\n"
         "mask = none\nbackward = yes\nseed = 32\ndata = normal:2\n"),
    };
    for (size_t ci = 0; ci < 2; ci++) {
        cpu_run r;
        prepare(&r, cases[ci]);
        execute(be, &r);
        const af_case *c = &r.c;
        enum { HQ = 2, SQ_MAX = 8, SKV_MAX = 16, DQK = 12, DV = 6 };
        int Sq = c->seqlen_q, Skv = c->seqlen_kv;
        CHECK(c->heads_q == HQ && c->head_dim_qk == DQK && c->head_dim_v == DV && Sq <= SQ_MAX && Skv <= SKV_MAX);
        af_storage st = c->dtype == AF_DT_FP16 ? AF_ST_F16 : AF_ST_BF16;
        float scale = af_case_scale(c);
        float q[HQ][SQ_MAX][DQK], k[SKV_MAX][DQK], v[SKV_MAX][DV], dout[HQ][SQ_MAX][DV];
        for (int j = 0; j < Skv; j++) {
            for (int d = 0; d < DQK; d++) k[j][d] = (float)r.in.k[di(1, Skv, DQK, 0, 0, j, d)];
            for (int d = 0; d < DV; d++) v[j][d] = (float)r.in.v[di(1, Skv, DV, 0, 0, j, d)];
        }
        float dk[2][SKV_MAX][DQK] = {{{0}}}, dv[2][SKV_MAX][DV] = {{{0}}}; /* [0] recipe, [1] unrounded */
        bool rounding_matters = false;
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < Sq; i++) {
                for (int d = 0; d < DQK; d++) q[h][i][d] = (float)r.in.q[di(HQ, Sq, DQK, 0, h, i, d)];
                for (int d = 0; d < DV; d++) dout[h][i][d] = (float)r.in.dout[di(HQ, Sq, DV, 0, h, i, d)];
            }
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < Sq; i++) {
                float s[SKV_MAX], m = -INFINITY, l = 0, acc[DV] = {0}, acc_exact[DV] = {0};
                int n = 0;
                for (int j = 0; j < Skv; j++) {
                    if (!sees(c, 0, i, j)) continue;
                    n++;
                    float dotqk = 0.0f;
                    for (int d = 0; d < DQK; d++) dotqk += q[h][i][d] * k[j][d];
                    s[j] = dotqk * scale;
                    m = s[j] > m ? s[j] : m;
                }
                CHECK(n > 0);
                for (int j = 0; j < Skv; j++) {
                    if (!sees(c, 0, i, j)) continue;
                    float p = af_expf(s[j] - m);
                    l += p;
                    for (int d = 0; d < DV; d++) {
                        acc[d] += to_storage(st, p) * v[j][d];
                        acc_exact[d] += p * v[j][d];
                    }
                }
                float o[DV];
                for (int d = 0; d < DV; d++) {
                    o[d] = to_storage(st, acc[d] / l);
                    CHECK_MSG(o[d] == (float)r.out.o[di(HQ, Sq, DV, 0, h, i, d)], "case %zu O h%d i%d d%d", ci, h, i,
                              d);
                    rounding_matters |= o[d] != to_storage(st, acc_exact[d] / l);
                }
                float lse = m + af_logf(l);
                CHECK_MSG(lse == (float)r.out.lse[di(HQ, Sq, 1, 0, h, i, 0)], "case %zu LSE h%d i%d", ci, h, i);
                /* backward of this row */
                float delta = 0.0f;
                for (int d = 0; d < DV; d++) delta += dout[h][i][d] * o[d];
                float dq[2][DQK] = {{0}};
                for (int j = 0; j < Skv; j++) {
                    if (!sees(c, 0, i, j)) continue;
                    float p = af_expf(s[j] - lse), dp = 0.0f;
                    for (int d = 0; d < DV; d++) dp += dout[h][i][d] * v[j][d];
                    float ds = p * (dp - delta);
                    for (int u = 0; u < 2; u++) {
                        float pr = u ? p : to_storage(st, p), dsr = u ? ds : to_storage(st, ds);
                        for (int d = 0; d < DV; d++) dv[u][j][d] += pr * dout[h][i][d];
                        for (int d = 0; d < DQK; d++) dk[u][j][d] += dsr * q[h][i][d];
                        for (int d = 0; d < DQK; d++) dq[u][d] += dsr * k[j][d];
                    }
                }
                for (int d = 0; d < DQK; d++) {
                    CHECK_MSG(to_storage(st, dq[0][d] * scale) == (float)r.out.dq[di(HQ, Sq, DQK, 0, h, i, d)],
                              "case %zu dQ h%d i%d d%d", ci, h, i, d);
                    rounding_matters |= to_storage(st, dq[0][d] * scale) != to_storage(st, dq[1][d] * scale);
                }
            }
        for (int j = 0; j < Skv; j++) {
            for (int d = 0; d < DQK; d++) {
                CHECK_MSG(to_storage(st, dk[0][j][d] * scale) == (float)r.out.dk[di(1, Skv, DQK, 0, 0, j, d)],
                          "case %zu dK j%d d%d", ci, j, d);
                rounding_matters |= to_storage(st, dk[0][j][d] * scale) != to_storage(st, dk[1][j][d] * scale);
            }
            for (int d = 0; d < DV; d++) {
                CHECK_MSG(to_storage(st, dv[0][j][d]) == (float)r.out.dv[di(1, Skv, DV, 0, 0, j, d)],
                          "case %zu dV j%d d%d", ci, j, d);
                rounding_matters |= to_storage(st, dv[0][j][d]) != to_storage(st, dv[1][j][d]);
            }
        }
        CHECK_MSG(rounding_matters, "case %zu: too easy, P/dS rounding changes no output", ci);
        release(&r);
    }
}

/* fp8_e4m3: the output semantics (O stored E4M3 with the harness's power-of-two
 * output scale) and the recipe of model/tensors.h restated here in plain fp32 for
 * small GQA cases and checked bit for bit (O as stored bytes, LSE). Also: the E4M3
 * cast of P matters (a recipe without it gives other bytes), so the test has teeth. */
static void test_fp8_follows_the_recipe(af_backend *be) {
    CHECK(AF_FP8_SCALE_S == 448.0f && AF_FP8_DESCALE_S == 1.0f / 448.0f);
    /* the output scale rule */
    CHECK(af_fp8_output_scale(448.0) == 1.0f);
    CHECK(af_fp8_output_scale(447.0) == 1.0f);
    CHECK(af_fp8_output_scale(449.0) == 0.5f);
    CHECK(af_fp8_output_scale(1.0) == 256.0f);
    CHECK(af_fp8_output_scale(3.5) == 128.0f);
    CHECK(af_fp8_output_scale(0.0) == 1.0f);
    const char *cases[] = {
        ("dtype = fp8_e4m3\nheads_q = 2\nheads_kv = 1\nseqlen_q = 5\nseqlen_kv = 9\nhead_dim_qk = 16\n"
         "head_dim_v = 16\nmask = causal_bottom_right\nwindow = 5,-1\nseed = 41\ndata = normal:2\n"),
        ("dtype = fp8_e4m3\nheads_q = 2\nheads_kv = 1\nseqlen_q = 7\nseqlen_kv = 16\nhead_dim_qk = 16\n"
         "head_dim_v = 16\nmask = none\nseed = 42\ndata = normal:1 outlier_channels:2:8\n"),
        ("dtype = fp8_e4m3\nheads_q = 2\nheads_kv = 1\nseqlen_q = 8\nseqlen_kv = 12\nhead_dim_qk = 16\n"
         "head_dim_v = 16\nmask = causal\nseed = 43\ndata = uniform:0.01\n"),
    };
    bool rounding_matters = false;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        cpu_run r;
        prepare(&r, cases[ci]);
        const af_case *c = &r.c;
        enum { HQ = 2, SQ_MAX = 8, SKV_MAX = 16, D = 16 };
        int Sq = c->seqlen_q, Skv = c->seqlen_kv;
        CHECK(c->heads_q == HQ && c->head_dim_qk == D && c->head_dim_v == D && Sq <= SQ_MAX && Skv <= SKV_MAX);
        /* storage and output scale */
        const af_tensor_view *ov = &r.t.plan.view[AF_T_O];
        CHECK(ov->storage == AF_ST_E4M3 && r.t.plan.view[AF_T_LSE].storage == AF_ST_F32);
        CHECK(r.t.plan.view[AF_T_DO].storage == AF_ST_E4M3 && r.t.plan.view[AF_T_DQ].storage == AF_ST_E4M3);
        double vmax = 0;
        for (int j = 0; j < Skv; j++)
            for (int d = 0; d < D; d++) vmax = fmax(vmax, fabs(peek(&r, AF_T_V, 0, 0, j, d)) * r.t.descale_v);
        float scale_o = 1.0f / r.t.descale_o;
        int e;
        CHECK_MSG(frexpf(scale_o, &e) == 0.5f, "scale_o %g is not a power of two", scale_o);
        CHECK_MSG(vmax * scale_o <= 448.0 && vmax * scale_o * 2 > 448.0, "max|V| %g scale_o %g", vmax, scale_o);
        execute(be, &r);
        float scale = af_case_scale(c);
        float q[HQ][SQ_MAX][D], k[SKV_MAX][D], v[SKV_MAX][D];
        for (int j = 0; j < Skv; j++)
            for (int d = 0; d < D; d++) {
                k[j][d] = (float)peek(&r, AF_T_K, 0, 0, j, d); /* stored E4M3 values */
                v[j][d] = (float)peek(&r, AF_T_V, 0, 0, j, d);
            }
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < Sq; i++)
                for (int d = 0; d < D; d++) q[h][i][d] = (float)peek(&r, AF_T_Q, 0, h, i, d);
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < Sq; i++) {
                float sc[SKV_MAX], m = -INFINITY, z = 0;
                int n = 0;
                for (int j = 0; j < Skv; j++) {
                    if (!sees(c, 0, i, j)) continue;
                    n++;
                    float acc = 0.0f;
                    for (int d = 0; d < D; d++) acc += q[h][i][d] * k[j][d];
                    sc[j] = ((acc * scale) * r.t.descale_q) * r.t.descale_k;
                    m = sc[j] > m ? sc[j] : m;
                }
                int64_t lidx = di(HQ, Sq, 1, 0, h, i, 0);
                if (n == 0) {
                    CHECK(isinf(r.out.lse[lidx]) && r.out.lse[lidx] < 0);
                    for (int d = 0; d < D; d++) CHECK(r.out.o[di(HQ, Sq, D, 0, h, i, d)] == 0.0);
                    continue;
                }
                float ex[SKV_MAX];
                for (int j = 0; j < Skv; j++)
                    if (sees(c, 0, i, j)) {
                        ex[j] = af_expf(sc[j] - m);
                        z += ex[j];
                    }
                float o8[D] = {0}, o_exact[D] = {0};
                for (int j = 0; j < Skv; j++) {
                    if (!sees(c, 0, i, j)) continue;
                    float p = ex[j] / z;
                    float p8 = to_storage(AF_ST_E4M3, p * 448.0f);
                    for (int d = 0; d < D; d++) {
                        o8[d] += p8 * v[j][d];
                        o_exact[d] += (p * 448.0f) * v[j][d];
                    }
                }
                for (int d = 0; d < D; d++) {
                    float want = to_storage(AF_ST_E4M3, ((o8[d] * (1.0f / 448.0f)) * r.t.descale_v) * scale_o);
                    float stored = (float)af_storage_load(ov->storage, r.t.buf[ov->buffer],
                                                          af_layout_offset(&r.t.plan, AF_T_O, 0, h, i, d));
                    CHECK_MSG(want == stored, "case %zu O h%d i%d d%d: %g vs %g", ci, h, i, d, stored, want);
                    /* af_outputs_read: stored * descale_o, exactly */
                    CHECK(r.out.o[di(HQ, Sq, D, 0, h, i, d)] == (double)stored * (double)r.t.descale_o);
                    rounding_matters |=
                        want != to_storage(AF_ST_E4M3, ((o_exact[d] * (1.0f / 448.0f)) * r.t.descale_v) * scale_o);
                }
                CHECK_MSG((float)r.out.lse[lidx] == m + af_logf(z), "case %zu LSE h%d i%d", ci, h, i);
            }
        release(&r);
    }
    CHECK_MSG(rounding_matters, "%s", "too easy: the E4M3 cast of P changes no output byte");
}

/* Forward against the independent double attention, for every mask shape: the gap
 * must be within the rounding of P and O to the case dtype. */
static void test_forward_matches_double_reference(af_backend *be) {
    const char *masks[] = {
        "mask = none\n",
        "mask = causal\n",
        "mask = causal_bottom_right\n",
        "mask = causal\nwindow = 3,-1\n",
        "mask = none\nwindow = 2,5\n",
        "mask = none\nwindow = -1,0\nalign = bottom_right\n",
        "mask = causal_bottom_right\nwindow = 7,-1\n",
        "mask = causal\nattention_chunk = 8\n",                                   /* fp16 / bf16 only: */
        "mask = none\nwindow = 2,5\nattention_chunk = 5\nalign = bottom_right\n", /* a feature */
        "mask = causal\ndocuments = 1,4,3\n",
        "mask = causal_bottom_right\nwindow = 3,-1\nglobal_keys = 2\n",
        "mask = none\ndocuments = 5,2\nglobal_keys = 3\nalign = bottom_right\n",
    };
    const char *shapes[] = {
        "batch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 19\nseqlen_kv = 33\nhead_dim_qk = 40\nhead_dim_v = 24\n",
        "batch = 1\nheads_q = 3\nheads_kv = 1\nseqlen_q = 30\nseqlen_kv = 9\nhead_dim_qk = 16\nhead_dim_v = 48\n",
    };
    const char *dtypes[] = {"dtype = fp16\n", "dtype = bf16\n", "dtype = fp8_e4m3\n", "dtype = mxfp8\n"};
    for (size_t ti = 0; ti < 4; ti++)
        for (size_t si = 0; si < 2; si++)
            for (size_t mi = 0; mi < sizeof masks / sizeof masks[0]; mi++) {
                if (ti >= 2 && (strstr(masks[mi], "attention_chunk") || strstr(masks[mi], "documents") ||
                                strstr(masks[mi], "global_keys")))
                    continue;
                char text[1024];
                snprintf(text, sizeof text, "%s%s%sseed = %zu\ndata = normal:1.5\n", dtypes[ti], shapes[si], masks[mi],
                         100 + mi);
                cpu_run r;
                prepare(&r, text);
                execute(be, &r);
                const af_case *c = &r.c;
                int Hq = c->heads_q, Sq = c->seqlen_q, Dv = c->head_dim_v;
                double *o = calloc((size_t)c->batch * Hq * Sq * Dv, sizeof(double));
                double *lse = calloc((size_t)c->batch * Hq * Sq, sizeof(double));
                CHECK(o && lse);
                ref_attention(c, r.in.q, r.in.k, r.in.v, NULL, o, lse);
                double err, ref, vmax, dummy;
                diff_stats(c, true, c->heads_kv, c->seqlen_kv, Dv, r.in.v, r.in.v, &dummy, &vmax);
                diff_stats(c, false, Hq, Sq, Dv, r.out.o, o, &err, &ref);
                /* P rounded (2^-11 fp16, 2^-8 bf16 and mxfp8, 2^-4 fp8_e4m3's E4M3 P) plus
                 * O rounded to its storage (E4M3 for fp8_e4m3) */
                double unit = c->dtype == AF_DT_FP16 ? 0x1p-11 : c->dtype == AF_DT_FP8_E4M3 ? 0x1p-4 : 0x1p-8;
                CHECK_MSG(err <= 3 * unit * vmax, "%s: O error %g (max|V| %g)", text, err, vmax);
                /* LSE: fully masked rows must agree exactly (-inf), others to fp32 */
                for (int b = 0; b < c->batch; b++)
                    for (int h = 0; h < Hq; h++)
                        for (int i = 0; i < af_case_len_q(c, b); i++) {
                            int64_t idx = di(Hq, Sq, 1, b, h, i, 0);
                            double want = lse[idx], got = r.out.lse[idx];
                            if (isinf(want))
                                CHECK_MSG(got == want, "%s: LSE %g vs -inf", text, got);
                            else
                                CHECK_MSG(fabs(got - want) <= 1e-5 * fmax(1.0, fabs(want)),
                                          "%s: b%d h%d i%d LSE %.9g vs %.9g", text, b, h, i, got, want);
                        }
                free(o);
                free(lse);
                release(&r);
            }
}

/* Backward against central finite differences of sum(dO * O) in double. */
static void test_backward_matches_finite_differences(af_backend *be) {
    const char *cases[] = {
        ("dtype = fp16\nbatch = 2\nheads_q = 2\nheads_kv = 1\nseqlen_q = 12\nseqlen_kv = 20\nhead_dim_qk = 16\n"
         "head_dim_v = 8\nmask = padding_causal_bottom_right\nwindow = 5,-1\nseqlens_q = 12,7\n"
         "seqlens_kv = 20,9\nbackward = yes\nseed = 5\n"),
        "dtype = bf16\nheads = 2\nseqlen_q = 10\nseqlen_kv = 14\nhead_dim = 16\nbackward = yes\nseed = 6\n",
        ("dtype = fp16\nheads = 1\nseqlen_q = 16\nseqlen_kv = 16\nhead_dim = 24\nmask = causal\nwindow = 4,2\n"
         "backward = yes\nscale = 0.5\ndata = normal:1 sink:6\nseed = 7\n"),
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        cpu_run r;
        prepare(&r, cases[ci]);
        execute(be, &r);
        af_case *c = &r.c;
        int Hq = c->heads_q, Hkv = c->heads_kv, Sq = c->seqlen_q, Skv = c->seqlen_kv;
        int Dqk = c->head_dim_qk, Dv = c->head_dim_v;
        size_t nq = (size_t)c->batch * Hq * Sq * Dqk, nk = (size_t)c->batch * Hkv * Skv * Dqk;
        size_t nv = (size_t)c->batch * Hkv * Skv * Dv;
        double *gq = malloc(nq * sizeof(double)), *gk = malloc(nk * sizeof(double));
        double *gv = malloc(nv * sizeof(double));
        CHECK(gq && gk && gv);
        finite_differences(c, &r.in, r.in.q, Hq, Sq, Dqk, false, gq);
        finite_differences(c, &r.in, r.in.k, Hkv, Skv, Dqk, true, gk);
        finite_differences(c, &r.in, r.in.v, Hkv, Skv, Dv, true, gv);
        /* fp16: P, dS rounded to 11 bits; bf16: to 8 bits; and every output rounded */
        double tol = c->dtype == AF_DT_FP16 ? 3e-3 : 1.5e-2;
        struct {
            const char *name;
            bool kv;
            int H, S, D;
            const double *got, *fd;
        } t[3] = {
            {"dQ", false, Hq, Sq, Dqk, r.out.dq, gq},
            {"dK", true, Hkv, Skv, Dqk, r.out.dk, gk},
            {"dV", true, Hkv, Skv, Dv, r.out.dv, gv},
        };
        for (int k = 0; k < 3; k++) {
            double err, ref;
            diff_stats(c, t[k].kv, t[k].H, t[k].S, t[k].D, t[k].got, t[k].fd, &err, &ref);
            printf("  case %zu %s: max|fd| %.4g, max err %.3g (%.2g of max)\n", ci, t[k].name, ref, err, err / ref);
            CHECK_MSG(ref > 1e-3, "case %zu %s: gradient is trivially small", ci, t[k].name);
            CHECK_MSG(err <= tol * ref, "case %zu %s: error %g > %g * %g", ci, t[k].name, err, tol, ref);
        }
        free(gq);
        free(gk);
        free(gv);
        release(&r);
    }
}

/* The same logical case in different layouts gives bit-identical logical outputs. */
static void check_layouts_agree(af_backend *be, const char *base, const char *const *variants, int n) {
    cpu_run ref;
    char text[2048];
    snprintf(text, sizeof text, "%s%s", base, variants[0]);
    prepare(&ref, text);
    execute(be, &ref);
    for (int k = 1; k < n; k++) {
        cpu_run r;
        snprintf(text, sizeof text, "%s%s", base, variants[k]);
        prepare(&r, text);
        execute(be, &r);
        CHECK_MSG(same_outputs(&ref, &r), "layout variant differs from '%s':\n%s", variants[0], variants[k]);
        release(&r);
    }
    release(&ref);
}

static void test_layout_independence(af_backend *be) {
    /* padded / ragged GQA case with a zero-length query sequence */
    const char *base = "batch = 3\nheads_q = 4\nheads_kv = 2\nseqlen_q = 37\nseqlen_kv = 45\nhead_dim = 40\n"
                       "seqlens_q = 37,20,0\nseqlens_kv = 45,33,12\nwindow = 9,-1\nbackward = yes\nseed = 3\n";
    const char *variants[] = {
        "mask = padding_causal_bottom_right\nlayout = bshd\n",
        "mask = padding_causal_bottom_right\nlayout = sbhd\n",
        "mask = padding_causal_bottom_right\nlayout = bhsd\n",
        "mask = causal_bottom_right\nlayout = thd\n",
        "mask = causal_bottom_right\nlayout = thd\nthd_gap = 3\n",
        "mask = causal_bottom_right\nlayout = thd\nthd_gap = 2\nstride_gap = 5\npacking = kv\n",
        "mask = padding_causal_bottom_right\nlayout = bshd\npacking = kv\n",
        "mask = padding_causal_bottom_right\nlayout = bhsd\nstride_gap = 3\n",
        "mask = padding_causal_bottom_right\nlayout = sbhd\nstride_gap = 1\npacking = kv\n",
    };
    check_layouts_agree(be, base, variants, (int)(sizeof variants / sizeof variants[0]));

    const char *base_qkv = "batch = 2\nheads = 3\nseqlen = 40\nhead_dim = 32\nseqlens_q = 40,17\n"
                           "seqlens_kv = 40,17\nbackward = yes\ndtype = bf16\nseed = 4\n";
    const char *variants_qkv[] = {
        "mask = padding_causal\nlayout = bshd\n",
        "mask = padding_causal\nlayout = bshd\npacking = qkv\n",
        "mask = padding_causal\nlayout = sbhd\npacking = qkv\nstride_gap = 2\n",
        "mask = padding_causal\nlayout = bhsd\npacking = qkv\n",
        "mask = causal\nlayout = thd\npacking = qkv\nthd_gap = 1\n",
        "mask = causal\nlayout = thd\npacking = kv\nstride_gap = 7\n",
    };
    check_layouts_agree(be, base_qkv, variants_qkv, (int)(sizeof variants_qkv / sizeof variants_qkv[0]));

    /* paged KV (forward only): pages in a seed-dependent permutation */
    const char *base_paged = "batch = 2\nheads_q = 4\nheads_kv = 1\nseqlen_q = 20\nseqlen_kv = 70\nhead_dim = 32\n"
                             "seqlens_q = 20,5\nseqlens_kv = 70,38\nmask = padding_causal_bottom_right\nseed = 9\n";
    const char *variants_paged[] = {
        "layout = bshd\n",
        "layout = bshd\npage_size = 16\n",
        "layout = bshd\npage_size = 8\nstride_gap = 4\n",
        "layout = sbhd\npage_size = 32\n",
        "layout = bhsd\npage_size = 1\n",
    };
    check_layouts_agree(be, base_paged, variants_paged, (int)(sizeof variants_paged / sizeof variants_paged[0]));
}

/* Copy logical rows of an input tensor between two runs: dst head dh <- src head sh. */
static void copy_head(cpu_run *dst, cpu_run *src, af_tensor_id tid, int dh, int sh) {
    const af_tensor_view *v = &src->t.plan.view[tid];
    for (int b = 0; b < src->c.batch; b++) {
        bool kv = tid == AF_T_K || tid == AF_T_V;
        int len = kv ? af_case_len_kv(&src->c, b) : af_case_len_q(&src->c, b);
        for (int s = 0; s < len; s++)
            for (int d = 0; d < v->D; d++) poke(dst, tid, b, dh, s, d, peek(src, tid, b, sh, s, d));
    }
}

/* GQA (6 query heads on 2 kv heads) equals MHA with each kv head replicated 3 times:
 * O, LSE, dQ bit for bit; dK, dV of a kv head = the sum over its group's MHA heads
 * (up to the rounding of the MHA per-head results). */
static void test_gqa_equals_replicated_mha(af_backend *be) {
    const char *common = "batch = 2\nseqlen_q = 21\nseqlen_kv = 29\nhead_dim_qk = 24\nhead_dim_v = 16\n"
                         "mask = padding_causal\nseqlens_q = 21,13\nseqlens_kv = 29,18\nbackward = yes\nseed = 8\n";
    char text[1024];
    cpu_run gqa, mha;
    snprintf(text, sizeof text, "%sheads_q = 6\nheads_kv = 2\n", common);
    prepare(&gqa, text);
    snprintf(text, sizeof text, "%sheads_q = 6\nheads_kv = 6\n", common);
    prepare(&mha, text);
    for (int h = 0; h < 6; h++) {
        copy_head(&mha, &gqa, AF_T_Q, h, h);
        copy_head(&mha, &gqa, AF_T_DO, h, h);
        copy_head(&mha, &gqa, AF_T_K, h, h / 3);
        copy_head(&mha, &gqa, AF_T_V, h, h / 3);
    }
    af_inputs_read(&mha.c, &mha.t, &mha.in);
    execute(be, &gqa);
    execute(be, &mha);
    const af_case *c = &gqa.c;
    int Sq = c->seqlen_q, Skv = c->seqlen_kv, Dqk = c->head_dim_qk, Dv = c->head_dim_v;
    CHECK(same_bits(c, false, 6, Sq, Dv, gqa.out.o, mha.out.o));
    CHECK(same_bits(c, false, 6, Sq, 1, gqa.out.lse, mha.out.lse));
    CHECK(same_bits(c, false, 6, Sq, Dqk, gqa.out.dq, mha.out.dq));
    for (int t = 0; t < 2; t++) {
        int D = t == 0 ? Dqk : Dv;
        const double *g = t == 0 ? gqa.out.dk : gqa.out.dv, *m = t == 0 ? mha.out.dk : mha.out.dv;
        double worst = 0, biggest = 0;
        for (int b = 0; b < c->batch; b++)
            for (int hk = 0; hk < 2; hk++)
                for (int j = 0; j < af_case_len_kv(c, b); j++)
                    for (int d = 0; d < D; d++) {
                        double sum = 0, sum_abs = 0;
                        for (int h = 3 * hk; h < 3 * hk + 3; h++) {
                            sum += m[di(6, Skv, D, b, h, j, d)];
                            sum_abs += fabs(m[di(6, Skv, D, b, h, j, d)]);
                        }
                        double got = g[di(2, Skv, D, b, hk, j, d)];
                        double tol = 4 * 0x1p-11 * sum_abs + 0x1p-24;
                        CHECK_MSG(fabs(got - sum) <= tol, "%s b%d hk%d j%d d%d: %g vs %g", t ? "dV" : "dK", b, hk, j, d,
                                  got, sum);
                        if (fabs(got - sum) > worst) worst = fabs(got - sum);
                        if (fabs(sum) > biggest) biggest = fabs(sum);
                    }
        CHECK(biggest > 0);
    }
    release(&gqa);
    release(&mha);
}

/* Rows that see no key: O = 0, LSE = -inf, dQ = 0, and their Q and dO move nothing. */
static void test_fully_masked_rows(af_backend *be) {
    const char *cases[] = {
        /* bottom right with len_q > len_kv: rows i < len_q - len_kv see nothing */
        ("heads_q = 2\nheads_kv = 1\nseqlen_q = 24\nseqlen_kv = 10\nhead_dim = 16\nmask = causal_bottom_right\n"
         "backward = yes\nseed = 21\n"),
        /* top left window (0, 0) past the last key */
        "heads = 2\nseqlen_q = 24\nseqlen_kv = 10\nhead_dim = 16\nwindow = 0,0\nbackward = yes\ndtype = bf16\n",
        /* a sequence with no keys at all */
        ("batch = 2\nheads = 1\nseqlen = 12\nhead_dim = 8\nmask = padding\nseqlens_q = 12,12\nseqlens_kv = 12,0\n"
         "backward = yes\n"),
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        cpu_run r, p;
        prepare(&r, cases[ci]);
        prepare(&p, cases[ci]);
        const af_case *c = &r.c;
        int Hq = c->heads_q, Sq = c->seqlen_q, Dqk = c->head_dim_qk, Dv = c->head_dim_v;
        int masked = 0;
        /* perturb Q and dO of every fully masked row in the second copy */
        for (int b = 0; b < c->batch; b++)
            for (int i = 0; i < af_case_len_q(c, b); i++) {
                bool any = false;
                for (int j = 0; j < c->seqlen_kv; j++) any = any || sees_all(c, b, i, j);
                if (any) continue;
                masked++;
                for (int h = 0; h < Hq; h++) {
                    for (int d = 0; d < Dqk; d++) poke(&p, AF_T_Q, b, h, i, d, 3.0 + d);
                    for (int d = 0; d < Dv; d++) poke(&p, AF_T_DO, b, h, i, d, -7.0);
                }
            }
        CHECK(masked > 0);
        execute(be, &r);
        execute(be, &p);
        CHECK_MSG(same_outputs(&r, &p), "case %zu: masked rows' inputs moved an output", ci);
        for (int b = 0; b < c->batch; b++)
            for (int i = 0; i < af_case_len_q(c, b); i++) {
                bool any = false;
                for (int j = 0; j < c->seqlen_kv; j++) any = any || sees_all(c, b, i, j);
                for (int h = 0; h < Hq; h++) {
                    double lse = r.out.lse[di(Hq, Sq, 1, b, h, i, 0)];
                    if (any) {
                        CHECK(isfinite(lse));
                        continue;
                    }
                    CHECK_MSG(isinf(lse) && lse < 0, "case %zu b%d h%d i%d: LSE %g", ci, b, h, i, lse);
                    for (int d = 0; d < Dv; d++) CHECK(r.out.o[di(Hq, Sq, Dv, b, h, i, d)] == 0.0);
                    for (int d = 0; d < Dqk; d++) CHECK(r.out.dq[di(Hq, Sq, Dqk, b, h, i, d)] == 0.0);
                }
            }
        release(&r);
        release(&p);
    }
}

/* ---- buffer integrity ---- */

static bool is_poison(af_storage st, const uint8_t *p) {
    switch (st) {
        case AF_ST_F16: {
            uint16_t v;
            memcpy(&v, p, 2);
            return v == AF_POISON_F16;
        }
        case AF_ST_BF16: {
            uint16_t v;
            memcpy(&v, p, 2);
            return v == AF_POISON_BF16;
        }
        case AF_ST_E4M3:
            return *p == AF_POISON_E4M3;
        case AF_ST_E5M2:
            return *p == AF_POISON_E5M2;
        case AF_ST_F32: {
            uint32_t v;
            memcpy(&v, p, 4);
            return v == AF_POISON_F32;
        }
    }
    return false;
}

/* Every valid output element written (finite, not poison), padding rows 0 / -inf,
 * every other byte of every buffer (gaps, guards, all inputs) unchanged by the run. */
static void check_integrity(af_backend *be, const char *text) {
    cpu_run r;
    prepare(&r, text);
    const af_case *c = &r.c;
    af_tensors_poison_outputs(&r.t, c);
    uint8_t *before[AF_BUF_COUNT] = {0};
    for (int k = 0; k < AF_BUF_COUNT; k++) {
        if (!r.t.alloc[k]) continue;
        size_t n = r.t.bytes[k] + 2 * AF_GUARD_BYTES;
        before[k] = malloc(n);
        CHECK(before[k]);
        memcpy(before[k], r.t.alloc[k], n);
    }
    execute(be, &r); /* poisons again: same bytes */
    af_tensor_id outs[] = {AF_T_O, AF_T_LSE, AF_T_DQ, AF_T_DK, AF_T_DV};
    int n_outs = c->backward ? 5 : 2;
    for (int k = 0; k < AF_BUF_COUNT; k++) {
        if (!r.t.alloc[k]) continue;
        af_storage st = r.t.plan.buffer_storage[k];
        int w = af_storage_bytes(st);
        int64_t elems = r.t.plan.buffer_elems[k];
        uint8_t *owned = calloc((size_t)elems + 1, 1);
        CHECK(owned);
        for (int o = 0; o < n_outs; o++) {
            af_tensor_id tid = outs[o];
            const af_tensor_view *v = &r.t.plan.view[tid];
            if ((int)v->buffer != k) continue;
            bool kv = tid == AF_T_DK || tid == AF_T_DV;
            for (int b = 0; b < c->batch; b++) {
                int len = kv ? af_case_len_kv(c, b) : af_case_len_q(c, b);
                int rows = v->ragged ? len : v->S;
                for (int h = 0; h < v->H; h++)
                    for (int s = 0; s < rows; s++)
                        for (int d = 0; d < v->D; d++) {
                            int64_t off = af_layout_offset(&r.t.plan, tid, b, h, s, d);
                            CHECK(off >= 0 && off < elems && !owned[off]);
                            owned[off] = 1;
                            const uint8_t *p = (const uint8_t *)r.t.buf[k] + off * w;
                            CHECK_MSG(!is_poison(st, p), "%s b%d h%d s%d d%d unwritten", af_tensor_name(tid), b, h, s,
                                      d);
                            double x = af_storage_load(st, r.t.buf[k], off);
                            if (s < len) {
                                CHECK_MSG(!isnan(x) && (tid == AF_T_LSE || isfinite(x)), "%s b%d h%d s%d d%d = %g",
                                          af_tensor_name(tid), b, h, s, d, x);
                            } else if (tid == AF_T_LSE) {
                                CHECK_MSG(isinf(x) && x < 0, "padding LSE b%d h%d s%d = %g", b, h, s, x);
                            } else {
                                CHECK_MSG(x == 0.0, "padding %s b%d h%d s%d d%d = %g", af_tensor_name(tid), b, h, s, d,
                                          x);
                            }
                        }
            }
        }
        const uint8_t *now = r.t.alloc[k];
        for (size_t i = 0; i < AF_GUARD_BYTES; i++) {
            CHECK_MSG(now[i] == AF_GUARD_BYTE, "guard before buffer %s changed", af_buffer_name((af_buffer_id)k));
            CHECK_MSG(now[AF_GUARD_BYTES + r.t.bytes[k] + i] == AF_GUARD_BYTE, "guard after buffer %s changed",
                      af_buffer_name((af_buffer_id)k));
        }
        for (int64_t e = 0; e < elems; e++) {
            if (owned[e]) continue;
            size_t at = AF_GUARD_BYTES + (size_t)e * (size_t)w;
            CHECK_MSG(memcmp(now + at, before[k] + at, (size_t)w) == 0,
                      "buffer %s element %lld (not an output) changed", af_buffer_name((af_buffer_id)k), (long long)e);
        }
        free(owned);
        free(before[k]);
    }
    release(&r);
}

static void test_writes_exactly_its_outputs(af_backend *be) {
    check_integrity(be, "batch = 3\nheads_q = 4\nheads_kv = 2\nseqlen_q = 19\nseqlen_kv = 23\nhead_dim = 16\n"
                        "seqlens_q = 19,4,0\nseqlens_kv = 23,0,11\nmask = padding_causal\nstride_gap = 3\n"
                        "packing = kv\nbackward = yes\n");
    check_integrity(be, "batch = 3\nheads_q = 4\nheads_kv = 2\nseqlen_q = 19\nseqlen_kv = 23\nhead_dim_qk = 16\n"
                        "head_dim_v = 8\nseqlens_q = 19,4,0\nseqlens_kv = 23,0,11\nlayout = thd\nthd_gap = 2\n"
                        "stride_gap = 1\nmask = causal_bottom_right\nbackward = yes\n");
    check_integrity(be, "batch = 2\nheads = 2\nseqlen = 33\nhead_dim = 8\nseqlens_q = 33,20\nseqlens_kv = 33,20\n"
                        "layout = thd\nthd_gap = 3\npacking = qkv\nstride_gap = 2\nbackward = yes\ndtype = bf16\n");
    check_integrity(be, "batch = 2\nheads = 2\nseqlen = 33\nhead_dim = 8\nseqlens_q = 33,20\nseqlens_kv = 33,20\n"
                        "layout = sbhd\npacking = qkv\nmask = padding\nwindow = 4,4\nbackward = yes\n");
    check_integrity(be, "batch = 2\nheads_q = 2\nheads_kv = 1\nseqlen_q = 9\nseqlen_kv = 50\nhead_dim = 32\n"
                        "seqlens_q = 9,3\nseqlens_kv = 50,17\nmask = padding\npage_size = 8\nstride_gap = 2\n");
    check_integrity(be, "batch = 2\nheads = 2\nseqlen = 40\nhead_dim = 40\nseqlens_q = 40,21\nseqlens_kv = 40,30\n"
                        "mask = padding_causal\nlayout = bhsd\ndtype = fp8_e4m3\n");
    check_integrity(be, "batch = 2\nheads_q = 4\nheads_kv = 2\nseqlen = 40\nhead_dim = 40\nseqlens_q = 40,21\n"
                        "seqlens_kv = 40,30\nmask = padding_causal\nlayout = sbhd\ndtype = fp8_e4m3\nbackward = yes\n");
    check_integrity(be, "batch = 2\nheads = 2\nseqlen = 40\nhead_dim = 40\nseqlens_q = 40,21\nseqlens_kv = 40,30\n"
                        "layout = thd\nthd_gap = 4\ndtype = mxfp8\n");
}

/* Same bits with 1 and 3 threads, and run to run. */
static void test_deterministic_across_threads(void) {
    setenv("ATTNFUZZ_CPU_THREADS", "1", 1);
    af_backend *one = af_backend_cpu_new();
    setenv("ATTNFUZZ_CPU_THREADS", "3", 1);
    af_backend *three = af_backend_cpu_new();
    unsetenv("ATTNFUZZ_CPU_THREADS");
    CHECK(one && three);
    const char *text = "batch = 2\nheads_q = 4\nheads_kv = 1\nseqlen_q = 150\nseqlen_kv = 200\nhead_dim = 48\n"
                       "mask = causal_bottom_right\nwindow = 70,-1\nbackward = yes\nlayout = sbhd\nstride_gap = 1\n";
    cpu_run a, b;
    prepare(&a, text);
    prepare(&b, text);
    execute(one, &a);
    execute(three, &b);
    for (int k = 0; k < AF_BUF_COUNT; k++)
        if (a.t.alloc[k]) CHECK(memcmp(a.t.alloc[k], b.t.alloc[k], a.t.bytes[k] + 2 * AF_GUARD_BYTES) == 0);
    execute(three, &b);
    for (int k = 0; k < AF_BUF_COUNT; k++)
        if (a.t.alloc[k]) CHECK(memcmp(a.t.alloc[k], b.t.alloc[k], a.t.bytes[k] + 2 * AF_GUARD_BYTES) == 0);
    release(&a);
    release(&b);
    one->destroy(one);
    three->destroy(three);
}

#if defined(__SANITIZE_ADDRESS__)
#define CPU_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CPU_TEST_SANITIZED 1
#endif
#endif

int main(void) {
    af_backend *be = af_backend_cpu_new();
    CHECK(be);
    test_interface(be);
    test_test_mask_agrees_with_spec();
    test_equal_keys_give_mean_of_v(be);
    test_one_visible_key(be);
    test_follows_the_fp32_recipe(be);
    test_fp8_follows_the_recipe(be);
    test_forward_matches_double_reference(be);
    test_backward_matches_finite_differences(be);
    test_layout_independence(be);
    test_gqa_equals_replicated_mha(be);
    test_fully_masked_rows(be);
    test_writes_exactly_its_outputs(be);
    test_deterministic_across_threads();
    be->destroy(be);
    CHECK_DONE("test_cpu_backend");
}
