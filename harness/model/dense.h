/* model/dense.h — the dense logical inputs and outputs of one case: all the oracle
 * reads and all the comparison needs. No case struct, no layout: exact stored values
 * as doubles, row-major in the order of each shape comment. Filled by gen.c (inputs)
 * and af_outputs_read (outputs) in model/tensors.h.
 */
#ifndef ATTNFUZZ_MODEL_DENSE_H
#define ATTNFUZZ_MODEL_DENSE_H

#include <stdbool.h>
#include <stdint.h>

/* A nonlinear score modifier, one of torch Flex's test score_mods by name (a case names a
 * form, never code; oracle/feature_spec.h has the formulas): with r = scale * q.k the
 * score becomes squared r * r, trig sin(cos(r)) + tan(b), trig2 cos(r) sin(r) + tan(b)
 * (b the batch index), before bias and ALiBi. Not with softcap. */
typedef enum { AF_SCORE_MOD_NONE = 0, AF_SCORE_MOD_SQUARED, AF_SCORE_MOD_TRIG, AF_SCORE_MOD_TRIG2 } af_score_mod;

/* The features of the case (oracle/feature_spec.h states what they mean). All zero /
 * false: plain attention. */
typedef struct {
    double softcap;                        /* 0 = none; else scores s -> softcap * tanh(s / softcap) */
    int sink;                              /* 0 = no sink, 1 = fixed sink logits (off_by_one), 2 = learnable */
    int bias_b, bias_h;                    /* bias extents (1 or B, 1 or Hq); 0, 0 = no bias */
    bool alibi;                            /* ALiBi slopes in alibi_slope */
    bool lse_base2;                        /* the LSE output is in base 2 (dlse is its gradient) */
    double dropout_p;                      /* drop probability of P's elements, 0 = none (model/dropout.h) */
    uint64_t dropout_seed, dropout_offset; /* the Philox key and block offset */
    int bias_q;                            /* bias query extent (1 or Sq; 0 = no bias) */
    int alibi_b;                           /* slope table's batch extent (1 or B) */
    bool alibi_signed;                     /* ALiBi distance signed (else -|distance|) */
    int outputs;                           /* extra score statistics: 0 none, 1 row max and
                                              sum-exp, 2 max_logit (af_outputs_kind) */
    /* (B, Hq, Sq, Skv) a kernel's own keep mask (dropout_rng = kernel; 1 = kept): the
     * oracle takes M_ij from it instead of regenerating the Philox mask. NULL = Philox. */
    const uint8_t *dropout_keep;
    af_score_mod score_mod; /* none, or the score's nonlinear modifier (not with softcap) */
} af_features;

/* Dense logical arrays, row-major in the order of their shape comment.
 * Rows past a sequence's actual length are 0 in inputs and ignored in outputs. */
typedef struct {
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv;
    double *q;           /* (B, Hq,  Sq,  Dqk) */
    double *k;           /* (B, Hkv, Skv, Dqk) */
    double *v;           /* (B, Hv,  Skv, Dv)  Hv: see below */
    double *dout;        /* (B, Hq,  Sq,  Dv)  NULL when the case has no backward */
    double *sink;        /* (Hq) sink logits; NULL when feat.sink == 0 */
    double *bias;        /* (bias_b, bias_h, bias_q, Skv); NULL without bias */
    double *alibi_slope; /* (alibi_b, Hq); NULL without ALiBi */
    double *dlse;        /* (B, Hq, Sq) incoming gradient of the LSE output; NULL = 0 */
    af_features feat;    /* last, so positional initialisers of the arrays above still work */
    int Hv;              /* V's heads (cuDNN's h_v); 0 = Hkv. Query head h reads K head
                            h / (Hq / Hkv) and V head h / (Hq / Hv) */
} af_inputs;

typedef struct {
    int B, Hq, Hkv, Sq, Skv, Dqk, Dv;
    double *o;     /* (B, Hq,  Sq,  Dv)  */
    double *lse;   /* (B, Hq,  Sq)       natural log (a base-2 output is read back
                                        times ln 2); -inf for fully masked rows */
    double *dq;    /* (B, Hq,  Sq,  Dqk) NULL without backward */
    double *dk;    /* (B, Hkv, Skv, Dqk) */
    double *dv;    /* (B, Hv,  Skv, Dv)  */
    double *dsink; /* (Hq) gradient of learnable sink logits; NULL otherwise */
    int Hv;        /* V's and dV's heads; 0 = Hkv */
    /* The score statistics (oracle/feature_spec.h), NULL unless the case asks for them:
     * outputs = max_sumexp: */
    double *row_max;    /* (B, Hq, Sq) max of the row's visible scores; -inf fully masked */
    double *row_sumexp; /* (B, Hq, Sq) sum of exp(score - row_max); 0 fully masked   */
    /* outputs = max_logit: */
    double *max_logit; /* (B, Hq) max of the visible scores of (b, h); -inf when none */
    /* A device copy of o, lse, dq, dk, dv equal to them bit for bit, or NULL: the GPU
     * tiers leave their outputs on the device for the judge's row summaries
     * (af_outputs_dev). Owned by whoever filled the arrays; never set on a kernel's
     * outputs. Last, for positional initialisers. */
    const struct af_outputs_dev *dev;
} af_outputs;

/* Dense arrays in device memory with the shapes of af_outputs' (o (B,Hq,Sq,Dv),
 * lse (B,Hq,Sq), dq (B,Hq,Sq,Dqk), dk (B,Hkv,Skv,Dqk), dv (B,Hv,Skv,Dv); NULL: not kept)
 * and of af_inputs' (q, k, v, dout). The device-resident half of a prepared case: the
 * GPU oracle tier keeps its exact inputs and outputs there, the GPU reference its
 * outputs, and the judge's row summaries read them without a transfer. */
typedef struct af_outputs_dev {
    const double *o, *lse, *dq, *dk, *dv;
} af_outputs_dev;
typedef struct {
    const double *q, *k, *v, *dout;
} af_inputs_dev;

/* V's head count of inputs and outputs (Hv, or Hkv when Hv is 0). */
static inline int af_inputs_hv(const af_inputs *in) { return in->Hv ? in->Hv : in->Hkv; }
static inline int af_outputs_hv(const af_outputs *out) { return out->Hv ? out->Hv : out->Hkv; }

#endif
