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

typedef struct {
    af_layout_plan plan;
    uint8_t *alloc[AF_BUF_COUNT];   /* guard | data | guard, NULL when unused */
    void *buf[AF_BUF_COUNT];        /* start of data */
    size_t bytes[AF_BUF_COUNT];     /* data bytes (without guards) */
    /* fp8_e4m3 (per-tensor current scaling): logical = stored * descale.
     * 1.0 for other dtypes. */
    float descale_q, descale_k, descale_v, descale_do;
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
/* Read the outputs of a run from the buffers into dense form (dequantised). */
void af_outputs_read(const af_tensors *t, const af_case *c, af_outputs *out);

#endif
