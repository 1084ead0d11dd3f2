/* model/tensors.h — the host buffers one case runs on, with guard margins.
 *
 * Every buffer is allocated as [guard | data | guard]; guards hold AF_GUARD_BYTE and
 * output buffers are poison-filled before a run, so that a backend that writes out
 * of bounds (guards, stride gaps, thd gaps) or leaves an element unwritten is seen.
 * Inputs and outputs are also kept in dense logical form (doubles holding the exact
 * stored values) for the oracle and the comparison.
 */
#ifndef ATTNFUZZ_TENSORS_H
#define ATTNFUZZ_TENSORS_H

#include <stdint.h>
#include "model/case.h"
#include "model/dense.h"
#include "model/layout.h"

#define AF_GUARD_BYTES 256
#define AF_GUARD_BYTE  0xA5u
/* Poison bit patterns: NaNs with a payload nobody computes by accident. */
#define AF_POISON_F16  0x7E5Au
#define AF_POISON_BF16 0x7FDAu
#define AF_POISON_E4M3 0x7Fu
#define AF_POISON_E5M2 0x7Du
#define AF_POISON_F32  0x7FC0DEADu

/* fp8_e4m3 semantics (per-tensor scaling; docs/fp8.md), the one place the cpu backend,
 * the cudnn backend and the tests take them from. Every "in that order" is the order of
 * cudnn-frontend's FP8 graphs (sdpa_fp8.h / sdpa_fp8_bwd.h + matmul_fp8.h), fp32.
 *
 * Forward:
 *   inputs   Q, K, V stored E4M3; logical = stored * descale_{q,k,v} (gen.c: descale =
 *            amax / 448 of the generated values, i.e. scale = 448 / amax).
 *   scores   S = (q_e4m3 . k_e4m3, fp32) * attn_scale * descale_q * descale_k   (fp32,
 *            multiplied in that order, as cudnn-frontend's sdpa_fp8 graph)
 *   softmax  m = max S; E = exp(S - m); Z = sum E; LSE = m + log Z (fp32, natural log);
 *            P = E / Z (normalised BEFORE the cast, as the composite graph's DIV)
 *   P cast   P8 = e4m3(P * AF_FP8_SCALE_S), P in [0,1] -> [0,448]; used as
 *            P8 * AF_FP8_DESCALE_S (descale_s = fp32(1/448), not exact)
 *   O        O_acc = sum_j P8_j * v_e4m3_j (fp32); O' = O_acc * descale_s * descale_v
 *            (fp32, in that order); stored O = e4m3(O' * scale_o) (RNE, saturating)
 *   output   O is stored E4M3 with a per-tensor output scale scale_o chosen by the
 *            harness before the run (gen.c): the largest power of two with
 *            amax(dequantised V) * scale_o <= 448 (1 when V is all zero), since
 *            |O| <= max |V| for a convex combination; descale_o = 1 / scale_o exactly,
 *            and af_outputs_read returns stored * descale_o. LSE stays fp32.
 *
 * Backward (cudnn-frontend SDPAFP8BackwardNode::expand_node, non-MXFP8 path; on SM90 the
 * gradients must be FP8: its pre_validate_node rejects HALF/BFLOAT16 dQ/dK/dV unless
 * Blackwell with cuDNN >= 9.13), per row i and visible key j, fp32:
 *   dO       stored E4M3, logical = stored * descale_do (gen.c: amax / 448, like Q/K/V;
 *            TransformerEngine quantises dO per tensor too)
 *   O        the forward's stored E4M3 O with descale_o (the graph's Descale_O)
 *   D_i      = ((sum_d do_e4m3 * o_e4m3) * descale_do) * descale_o
 *   P_ij     = exp(S_ij - LSE_i), S as in the forward, LSE the forward's stored Stats;
 *            P8 = e4m3(P * AF_FP8_SCALE_S)
 *   dV_j     = e4m3((((sum_i P8_ij * do_e4m3_i) * descale_s) * descale_do) * scale_dv)
 *   dP_ij    = ((do_e4m3_i . v_e4m3_j) * descale_do) * descale_v
 *   dS_ij    = ((dP_ij - D_i) * P_ij) * attn_scale        (P unquantised here)
 *            dS8 = e4m3(dS * scale_dp)
 *   dQ_i     = e4m3((((sum_j dS8_ij * k_e4m3_j) * descale_dp) * descale_k) * scale_dq)
 *   dK_j     = e4m3((((sum_i dS8_ij * q_e4m3_i) * descale_dp) * descale_q) * scale_dk)
 *            GQA: dK, dV sum over the query heads of the group before the descales.
 *   scales   scale_dp, scale_dq, scale_dk, scale_dv are chosen by the harness before the
 *            run, per case, from the exact values (runner.c -> af_fp8_set_bwd_scales:
 *            the oracle's dQ, dK, dV and max |dS| from the exact inputs, O and LSE):
 *            scale = af_fp8_output_scale(2 * amax|exact|), the largest power of two
 *            with 2 * amax * scale <= 448, i.e. one binade of headroom so that a correct
 *            kernel's values (off by FP8 rounding, mostly D's from the E4M3 O) do not
 *            saturate; descale = 1 / scale exactly. This is TransformerEngine's delayed
 *            scaling (scale = 448 / amax of the previous step: fused_attn_fp8.cu passes
 *            the dP and dQKV quantizers' scale, and its FP8CS recipe keeps S and dP on
 *            delayed scaling) with a perfect amax history. dS is internal to the kernel
 *            but cuDNN needs its scale before the run; a bound from the inputs alone
 *            (attn_scale * max|dO_i| max|v_j| / 2) was measured to be up to 2^9 loose on
 *            flat attention, pushing dS into E4M3 subnormals, which real training does
 *            not do. Without exact values (no oracle) the scales stay 1.
 *   outputs  dQ, dK, dV are stored E4M3; af_outputs_read returns stored * descale_dX.
 * mxfp8 keeps O, dO and the gradients in bf16 (descales 1).
 *
 * fp8_e5m2 is the same recipe with Q, K, V, O, dO, dQ, dK, dV and the internal dS8 in
 * E5M2 (max 57344: every "448" of a tensor's scale above reads 57344); P8 stays E4M3 at
 * AF_FP8_SCALE_S, as cuDNN's FP8 graphs keep their virtual P8 (and TransformerEngine's
 * HYBRID recipe its forward) in E4M3. */
#define AF_FP8_E4M3_MAX  448.0f
#define AF_FP8_SCALE_S   448.0f
#define AF_FP8_DESCALE_S (1.0f / 448.0f)

typedef struct {
    af_layout_plan plan;
    uint8_t *alloc[AF_BUF_COUNT]; /* guard | data | guard, NULL when unused */
    void *buf[AF_BUF_COUNT];      /* start of data */
    size_t bytes[AF_BUF_COUNT];   /* data bytes (without guards) */
    /* fp8_e4m3 (per-tensor current scaling): logical = stored * descale.
     * 1.0 for other dtypes. descale_o is the output's: O is stored E4M3 as
     * e4m3(O / descale_o), descale_o a power of two chosen by gen.c (see above). */
    float descale_q, descale_k, descale_v, descale_do, descale_o;
    /* descale = head (fp8_e4m3 / fp8_e5m2 forward): Q's, K's and V's descales per (batch, kv
     * head), (3, B, Hkv) floats (Q's then K's then V's; af_head_descale), chosen as the
     * per-tensor ones are but from each slice's amax (Q's slice: the query heads of the kv
     * head's group); descale_q, _k, _v are 1 then. NULL otherwise. */
    float *descale_head;
    /* fp8_e4m3 backward (see above): E4M3 gradients stored as e4m3(dX / descale_dX)
     * and the internal dS quantisation dS8 = e4m3(dS / descale_dp), powers of two the
     * runner chooses before the run (af_fp8_set_bwd_scales). 1.0 otherwise. */
    float descale_dq, descale_dk, descale_dv, descale_dp;
    /* mxfp8: E8M0 exponent bytes, one per 32 elements along the contraction axis:
     * Q, K: (b, h, s, ceil(d/32)) blocks along d; V: (b, h, ceil(s/32), d) blocks along
     * s. logical = stored * 2^(byte - 127). NULL for other dtypes. */
    uint8_t *mx_scale_q, *mx_scale_k, *mx_scale_v;
    /* (Hq) fp32 output: gradient of learnable sink logits (softmax = learnable with
     * backward), poisoned before a run; NULL otherwise. The other feature inputs are
     * functions of the case (model/features.h). */
    float *dsink;
    /* The score statistics (outputs = max_sumexp: row_max and row_sumexp, (B, Hq, Sq);
     * outputs = max_logit: max_logit, (B, Hq)), dense fp32 outputs in host memory,
     * poisoned before a run; NULL when the case does not ask for them. */
    float *row_max, *row_sumexp, *max_logit;
    /* dropout_rng = kernel: the keep mask the kernel applied, (B, Hq, Sq, Skv) bytes (the
     * case's maximum lengths), 1 = kept, 0 = dropped, as FlashAttention's returned dropout
     * mask or cuDNN's rng_dump; poisoned (AF_GUARD_BYTE) before a run. The kernel sets
     * dropout_keep_returned when it filled it. NULL (and false) for other cases. */
    uint8_t *dropout_keep;
    size_t dropout_keep_elems; /* its bytes, af_case_dropout_keep_elems */
    bool dropout_keep_returned;
    /* A bias given to the run in place of the generated one: (bb, bh, rows, Skv) floats in
     * the case's own extents (af_feature_bias_dims, af_feature_bias_rows, seqlen_kv),
     * values rounded to the dtype. NULL normally (the backends generate it from the case);
     * the CP wrapper gives each rank's call its slice of the global bias (cp_exec.c).
     * Owned: af_tensors_free frees it, af_tensors_copy copies it into a dst that has one. */
    float *bias_given;
    size_t bias_given_elems;
} af_tensors;

int af_tensors_alloc(af_tensors *t, const af_case *c, char *why, size_t cap);
/* Where af_tensors_alloc_from takes each buffer's memory (guards included: bytes[i] +
 * 2 * AF_GUARD_BYTES): take(ctx, size) gives a block of that size, or NULL for malloc's. Every
 * block is freed by free() in af_tensors_free, so take may only give malloc'd blocks. fill
 * false: the guard fill is skipped (a caller that writes every byte next, as a copy of a
 * template does). */
typedef struct {
    void *(*take)(void *ctx, size_t size);
    void *ctx;
    bool fill;
} af_tensors_mem;
int af_tensors_alloc_from(af_tensors *t, const af_case *c, const af_tensors_mem *mem, char *why, size_t cap);
/* Bytes of the mxfp8 scale array of id (Q, K or V) for t's layout (see mx_scale_q above). */
size_t af_mx_scale_bytes(const af_tensors *t, af_tensor_id id);
void af_tensors_free(af_tensors *t);
/* Fill output buffers (O, LSE and, with backward, dQ dK dV) with poison. */
void af_tensors_poison_outputs(af_tensors *t, const af_case *c);
/* The buffers a run writes, a bit per af_buffer_id: O's and LSE's, and dQ's, dK's and dV's
 * with a backward (those t holds). The ones af_tensors_poison_outputs poisons. */
unsigned af_tensors_output_buffers(const af_tensors *t, const af_case *c);
/* Copy every buffer (guards included) from src to dst of the same case. */
void af_tensors_copy(af_tensors *dst, const af_tensors *src);
/* Allocate t's given bias for case c (zeros, (bb, bh, rows, Skv): see bias_given) and
 * return it for the caller to fill; NULL when c has no bias or out of memory. */
float *af_tensors_bias_alloc(af_tensors *t, const af_case *c);
/* The bias element a backend adds at query (b, h, i), key j of case c (broadcast
 * applied): t's given bias when it has one, else af_feature_bias(c, b, h, i, j). The one
 * way every backend reads the bias. t may be NULL (a supports() check: generated). */
float af_tensors_bias_at(const af_case *c, const af_tensors *t, int b, int h, int i, int j);

int af_inputs_alloc(af_inputs *in, const af_case *c);
void af_inputs_free(af_inputs *in);
int af_outputs_alloc(af_outputs *out, const af_case *c);
void af_outputs_free(af_outputs *out);

/* Read one stored element as a double (exact: stored formats embed in double). */
double af_storage_load(af_storage s, const void *buf, int64_t offset);
/* dst[k] = scale * (element offset + k, k < n, read as af_storage_load does): one row of
 * a tensor, contiguous in every layout (model/layout.h). */
void af_storage_load_row(af_storage s, const void *buf, int64_t offset, int n, double scale, double *dst);
/* Whether elements offset .. offset + n - 1 are all finite as af_storage_load reads them
 * (decided on the stored bits: no conversion). Every AF_POISON_* pattern is a NaN, so a
 * poisoned element is not finite. */
bool af_storage_row_finite(af_storage s, const void *buf, int64_t offset, int n);
/* Round a float to the storage type (round to nearest even) and store it. */
void af_storage_store(af_storage s, void *buf, int64_t offset, float value);
/* The same for src[0..n) into elements offset .. offset + n - 1 (one row, the switch once);
 * back (may be NULL): back[k] = the stored element as af_storage_load reads it. */
void af_storage_store_row(af_storage s, void *buf, int64_t offset, int n, const float *src, double *back);
/* Read the outputs of a run from the buffers into dense form (dequantised: an E4M3
 * O is multiplied by descale_o, exactly). */
void af_outputs_read(const af_tensors *t, const af_case *c, af_outputs *out);
/* The same for the output tensors whose bit (1u << af_tensor_id) is set in `tensors`
 * (dsink is always read); the others are left as they are in out. */
void af_outputs_read_only(const af_tensors *t, const af_case *c, af_outputs *out, unsigned tensors);
/* Does the case have a dsink output (learnable sinks with backward)? */
bool af_case_has_dsink(const af_case *c);
/* Elements of the score statistics arrays of c: (B, Hq, Sq) for row_max and row_sumexp
 * (0 unless outputs = max_sumexp), (B, Hq) for max_logit (0 unless outputs = max_logit). */
size_t af_case_row_stats_elems(const af_case *c);
size_t af_case_max_logit_elems(const af_case *c);
/* Elements of the returned dropout mask: B Hq Sq Skv for dropout_rng = kernel, else 0. */
size_t af_case_dropout_keep_elems(const af_case *c);

/* fp8_e4m3 output scale: the largest power of two s with amax_v * s <= 448 (1 when
 * amax_v is 0 or not finite). scale_o = this, descale_o = 1 / this. */
float af_fp8_output_scale(double amax_v);
/* The same for fp8 storage st: its largest finite value (448 E4M3, 57344 E5M2) in place
 * of 448. */
float af_fp8_output_scale_for(af_storage st, double amax_v);
/* x rounded to fp8 storage st (E4M3 or E5M2; RNE, saturating at its largest finite). */
float af_fp8_round(af_storage st, float x);

/* Factor from a stored output element to its logical value: descale_{o,dq,dk,dv} for
 * the E4M3 outputs of fp8_e4m3 (powers of two: the product is exact), else 1. */
double af_output_descale(const af_tensors *t, af_tensor_id id);

/* Factor from a stored input element (Q, K, V, dO) of sequence b, head h (the tensor's
 * own head) to its logical value: descale_{q,k,v,do} for fp8_e4m3 / fp8_e5m2 (with
 * descale = head, Q's, K's, V's of (b, kv head of h)), descale_k / descale_v for the fp8
 * K, V of kv_dtype (powers of two), else 1 (mxfp8's blocks are the caller's). */
double af_input_descale(const af_tensors *t, const af_case *c, af_tensor_id id, int b, int h);
/* descale = head: the descale of input id (Q, K, V) for sequence b and kv head hk. */
static inline float af_head_descale(const af_tensors *t, const af_case *c, af_tensor_id id, int b, int hk) {
    int k = id == AF_T_Q ? 0 : id == AF_T_K ? 1 : 2;
    return t->descale_head[((size_t)k * c->batch + b) * c->heads_kv + hk];
}

/* fp8_e4m3 backward (fp8_scales.c): set descale_dp, descale_dq, descale_dk, descale_dv
 * from the exact values: descale = 1 / af_fp8_output_scale(2 * amax), amax = max |dS|
 * (computed here in fp64 from the exact inputs and exact's O and LSE, the oracle's mask)
 * and max |exact dX|. exact: the oracle's dense outputs. No-op for other dtypes or
 * forward-only cases. */
void af_fp8_set_bwd_scales(af_tensors *t, const af_case *c, const af_outputs *exact, double ds_amax);

#endif
