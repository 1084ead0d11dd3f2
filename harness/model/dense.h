/* model/dense.h — the dense logical inputs and outputs of one case: all the oracle
 * reads and all the comparison needs. No case struct, no layout: exact stored values
 * as doubles, row-major in the order of each shape comment. Filled by gen.c (inputs)
 * and af_outputs_read (outputs) in model/tensors.h.
 */
#ifndef ATTNFUZZ_MODEL_DENSE_H
#define ATTNFUZZ_MODEL_DENSE_H

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
    double *o;   /* (B, Hq,  Sq,  Dv)  */
    double *lse; /* (B, Hq,  Sq)       natural log; -inf for fully masked rows */
    double *dq;  /* (B, Hq,  Sq,  Dqk) NULL without backward */
    double *dk;  /* (B, Hkv, Skv, Dqk) */
    double *dv;  /* (B, Hkv, Skv, Dv)  */
} af_outputs;

#endif
