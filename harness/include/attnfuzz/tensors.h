/* attnfuzz/tensors.h — the host buffers one case runs on, with guard margins.
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
#include "attnfuzz/case.h"
#include "attnfuzz/layout.h"

#define AF_GUARD_BYTES 256
#define AF_GUARD_BYTE 0xA5u
/* Poison bit patterns: NaNs with a payload nobody computes by accident. */
#define AF_POISON_F16 0x7E5Au
#define AF_POISON_BF16 0x7FDAu
#define AF_POISON_E4M3 0x7Fu
#define AF_POISON_F32 0x7FC0DEADu

/* fp8_e4m3 forward semantics (per-tensor current scaling; docs/fp8.md), the one place
 * the cpu backend, the cudnn backend and the tests take them from:
 *
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
 *            and af_outputs_read returns stored * descale_o. LSE stays fp32. dO and the
 *            gradients would be bf16 (fp8 backward is not served by any backend yet).
 * mxfp8 keeps O in bf16 (descale_o = 1). */
#define AF_FP8_E4M3_MAX 448.0f
#define AF_FP8_SCALE_S 448.0f
#define AF_FP8_DESCALE_S (1.0f / 448.0f)

typedef struct {
    af_layout_plan plan;
    uint8_t *alloc[AF_BUF_COUNT];   /* guard | data | guard, NULL when unused */
    void *buf[AF_BUF_COUNT];        /* start of data */
    size_t bytes[AF_BUF_COUNT];     /* data bytes (without guards) */
    /* fp8_e4m3 (per-tensor current scaling): logical = stored * descale.
     * 1.0 for other dtypes. descale_o is the output's: O is stored E4M3 as
     * e4m3(O / descale_o), descale_o a power of two chosen by gen.c (see above). */
    float descale_q, descale_k, descale_v, descale_do, descale_o;
    /* mxfp8: E8M0 exponent bytes, one per 32 elements along the contraction axis:
     * Q, K: (b, h, s, ceil(d/32)) blocks along d; V: (b, h, ceil(s/32), d) blocks along
     * s. logical = stored * 2^(byte - 127). NULL for other dtypes. */
    uint8_t *mx_scale_q, *mx_scale_k, *mx_scale_v;
} af_tensors;

/* Dense logical arrays, row-major in the order of their shape comment.
 * Rows past a sequence's actual length are 0 in inputs and ignored in outputs. */
typedef struct {
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv;
    double *q;    /* (B, Hq,  Sq,  Dqk) */
    double *k;    /* (B, Hkv, Skv, Dqk) */
    double *v;    /* (B, Hkv, Skv, Dv)  */
    double *dout; /* (B, Hq,  Sq,  Dv)  NULL when the case has no backward */
} af_inputs;

typedef struct {
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv;
    double *o;    /* (B, Hq,  Sq,  Dv)  */
    double *lse;  /* (B, Hq,  Sq)       natural log; -inf for fully masked rows */
    double *dq;   /* (B, Hq,  Sq,  Dqk) NULL without backward */
    double *dk;   /* (B, Hkv, Skv, Dqk) */
    double *dv;   /* (B, Hkv, Skv, Dv)  */
} af_outputs;

int af_tensors_alloc(af_tensors *t, const af_case *c, char *why, size_t cap);
void af_tensors_free(af_tensors *t);
/* Fill output buffers (O, LSE and, with backward, dQ dK dV) with poison. */
void af_tensors_poison_outputs(af_tensors *t, const af_case *c);
/* Copy every buffer (guards included) from src to dst of the same case. */
void af_tensors_copy(af_tensors *dst, const af_tensors *src);

int af_inputs_alloc(af_inputs *in, const af_case *c);
void af_inputs_free(af_inputs *in);
int af_outputs_alloc(af_outputs *out, const af_case *c);
void af_outputs_free(af_outputs *out);

/* Read one stored element as a double (exact: stored formats embed in double). */
double af_storage_load(af_storage s, const void *buf, int64_t offset);
/* Round a float to the storage type (round to nearest even) and store it. */
void af_storage_store(af_storage s, void *buf, int64_t offset, float value);
/* Read the outputs of a run from the buffers into dense form (dequantised: an E4M3
 * O is multiplied by descale_o, exactly). */
void af_outputs_read(const af_tensors *t, const af_case *c, af_outputs *out);

/* fp8_e4m3 output scale: the largest power of two s with amax_v * s <= 448 (1 when
 * amax_v is 0 or not finite). scale_o = this, descale_o = 1 / this. */
float af_fp8_output_scale(double amax_v);

#endif
