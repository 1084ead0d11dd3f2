/* judge/compare_dsink.h — judging the learnable sinks' gradient dsink (heads_q, fp32), an
 * output of backward cases with softmax = learnable (af_case_has_dsink). The rule and
 * its floor are stated in verdict.h ("dsink"). */
#ifndef ATTNFUZZ_JUDGE_COMPARE_DSINK_H
#define ATTNFUZZ_JUDGE_COMPARE_DSINK_H

#include "judge/verdict.h"
#include "model/dense.h"
#include "model/tensors.h"

/* The allowance of one head's dsink, the parts of verdict.h's rule. */
typedef struct {
    double err, err_ref; /* |kernel - oracle|, |reference - oracle| (0 without one) */
    double floor;        /* floor_h (verdict.h)                                    */
    double allowed;      /* 2 err_ref + floor, or 8 floor without a reference      */
    double mass;         /* M_h = sum_(b,i) P_sink,i (|dO_i|.|O_i| + |g'_i|)      */
} af_dsink_check;

/* floor_h of head h from the exact inputs `in` (dO, sink, dlse), the oracle's exact
 * outputs (O, LSE) and the kernel's dense O and LSE (the ABI's backward uses them: the
 * stored O's share of D_i and the stored LSE's share of P_sink,i); *mass gets M_h. */
double af_dsink_floor(const af_case *c, const af_inputs *in, const af_outputs *exact, const af_outputs *kernel, int h,
                      double *mass);

/* Judge dsink of a run: every head written (t->dsink no longer holds the poison, else
 * unwritten), finite where the oracle's is (else nan_inf), and within its allowance
 * (else mismatch); findings name tensor AF_T_DSINK, h = the head (b, row, col = -1).
 * kernel, ref (NULL: no reference), exact: dense outputs (dsink set). No-op (0) for a
 * case without dsink. Returns the number of findings added. */
int af_compare_dsink(const af_case *c, const af_tensors *t, const af_inputs *in, const af_outputs *kernel,
                     const af_outputs *ref, const af_outputs *exact, af_verdict *v);

#endif
