/* backends/cudnn/cudnn_backend.h — extras of the cudnn backend beyond backend.h.
 *
 * Engine names of the cudnn backend (what `--engine NAME` and engines() use):
 *   forward-only case:  eng<idx>[_k<knob>=<v>...]            composite forward graph
 *                       unified_eng<idx>[...]                one SDPA_FWD operation
 *   backward case:      <forward name>+bwd_eng<idx>[...]      nondeterministic bwd graph
 *                       <forward name>+bwd_det_eng<idx>[...]  deterministic bwd graph
 * A missing part (e.g. "eng2_k24=7" for a backward case) takes the default: the first
 * config of heuristics mode A that finalizes, nondeterministic backward graph.
 */
#ifndef ATTNFUZZ_CUDNN_BACKEND_H
#define ATTNFUZZ_CUDNN_BACKEND_H

#include <stdio.h>
#include "backends/backend.h"
#include "model/case.h"

/* `attnfuzz engines FILE.case`: for each graph of the case (forward composite and
 * unified, backward nondeterministic and deterministic), every candidate engine config
 * with where it came from (heuristics A / FALLBACK ranks, enumeration), whether its
 * plan finalizes (else cuDNN's message), workspace, numerical and behaviour notes.
 * be must be the cudnn backend. Returns 0, 3 when the backend is unavailable
 * (why says why), 1 on other errors. */
int af_cudnn_engines_report(af_backend *be, const af_case *c, FILE *out, char *why, size_t cap);

/* fp8_e4m3 forward: the graph's amax outputs of the last successful run() (amax_s =
 * max P before scale_s, in [0, 1]; amax_o = max |O| before scale_o, logical units).
 * Returns 0, or -1 when the last run was not an fp8 run that finished. */
int af_cudnn_last_fp8_amax(af_backend *be, float *amax_s, float *amax_o);

/* fp8_e4m3 backward: the backward graph's amax outputs of the last successful run(),
 * each before its output scale, logical units: amax[0] = max |dS| (Amax_dP, dS including
 * attn_scale), amax[1..3] = max |dQ|, |dK|, |dV| (Amax_dQ/dK/dV). Returns 0, or -1 when
 * the last run was not an fp8 backward run that finished. */
int af_cudnn_last_fp8_bwd_amax(af_backend *be, float amax[4]);

/* "cuDNN 9.19.0 (/path/libcudnn.so.9), NVIDIA H200 sm90" or why it is unavailable. */
void af_cudnn_describe(af_backend *be, char *buf, size_t cap);

#endif
