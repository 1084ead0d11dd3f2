/* judge/mutation.h — the input-mutation check (verdict kind input_mutation).
 *
 * A backend call may write its outputs only. Everything it is given as input must come
 * back bitwise unchanged: Q, K, V, dO (their whole buffers, stride and thd gaps
 * included), the page table, the thd sequence offsets, the fp8 descales, the mxfp8 E8M0
 * scales, and the feature inputs (sinks, bias, ALiBi slopes, dLSE, the actual lengths).
 * A kernel that writes one corrupts its caller: SageAttention 1.0.6 smooths K in place
 * (`k -= km`), apex #1587 wrote its input gradient; research C26.
 *
 * How, per judged run (run 0 and the repeats; not the probes' perturbed runs):
 *   - the laid-out buffers and the layout arrays: every run works on a copy of the case's
 *     template (clone.h), so the template is the exact image of the inputs before the
 *     call. After the call the run's input bytes are compared with it: one pass over the
 *     input bytes (a hash before and after would be two passes and could not say where),
 *     and the first changed element is named (tensor, b, h, s, d, old and new value).
 *   - the mxfp8 scale arrays are shared with the template (clone.h), so they are copied
 *     before the call (af_input_snapshot) and compared with that copy after it; a run
 *     that wrote them gets them restored (af_input_snapshot_restore), so the template the
 *     probes and later runs copy stays the case's.
 *   - inputs only the backend holds (the plugin adapter's feature arrays, a worker's kernel
 *     arguments, device-only metadata) the backend checks and reports in
 *     af_run_info.input_writes (backend.h); each becomes a finding here.
 * Device buffers: a GPU backend whose run copies the laid-out buffers back (cudnn and
 * device plugins download every buffer, guards included: kernels/af_gpu.h) is checked
 * through that host copy; see AF_MUTATION_DEVICE_TODO for what is not.
 *
 * One finding per changed input (tensor), added after the run's other findings; a repeat
 * that writes an input already reported adds none.
 */
#ifndef ATTNFUZZ_JUDGE_MUTATION_H
#define ATTNFUZZ_JUDGE_MUTATION_H

#include <stddef.h>
#include <stdint.h>

#include "judge/verdict.h"
#include "model/tensors.h"

/* TODO(input-mutation, device buffers): when the judge keeps a case's buffers on the GPU
 * (no host copy after the run), the check needs the device's bytes: a comparison kernel
 * against the device template (first differing element, per buffer), or a digest of each
 * input buffer before and after the call. Until then these are not checked: the cudnn
 * backend's device-only side tables (sequence offsets, ragged offsets, page table) and
 * feature block (bias, sinks, dropout seed), which it uploads and never reads back. */
#define AF_MUTATION_DEVICE_TODO 1

/* Copies of the input arrays a run shares with the template (the mxfp8 scales), taken
 * before the call. */
typedef struct {
    uint8_t *mx_scale[3]; /* Q, K, V; NULL when absent */
    size_t mx_bytes[3];
} af_input_snapshot;

/* Take the snapshot of t (a run's copy). 0, or -1 when out of memory (s then holds
 * nothing and the scales go unchecked). */
int af_input_snapshot_take(af_input_snapshot *s, const af_case *c, const af_tensors *t);
/* Put the shared scale arrays back as the snapshot holds them (after a run wrote them). */
void af_input_snapshot_restore(const af_input_snapshot *s, af_tensors *t);
void af_input_snapshot_free(af_input_snapshot *s);

/* Compare run (a copy of before, after the backend's call) with before (the template),
 * and the shared arrays with snap (NULL: not checked); add an input_mutation finding to v
 * for each changed input and for each of info's input_writes, marked with repeat (0 the
 * judged run, k a repeat). Returns the findings added. */
int af_check_input_mutation(const af_case *c, const af_tensors *before, const af_input_snapshot *snap,
                            const af_tensors *run, const af_run_info *info, int repeat, af_verdict *v);

#endif
