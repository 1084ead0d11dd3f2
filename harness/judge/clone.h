/* judge/clone.h — working copies of a case's template buffers: every judged run and
 * every probe run writes into its own copy, so the template (inputs laid out, outputs
 * poisoned) is never touched by a backend. */
#ifndef ATTNFUZZ_JUDGE_CLONE_H
#define ATTNFUZZ_JUDGE_CLONE_H

#include <stddef.h>
#include "model/tensors.h"

/* Allocate dst for case c (whose layout must be the template's: a case that differs in
 * mask, window, scale or alignment only) and copy the template's buffers into it. The
 * mxfp8 scale arrays are not copied: dst shares them read-only with the template. A given
 * bias (tensors.h bias_given) is copied into dst's own array.
 * Returns 0, or -1 with a reason in why. */
int af_clone_tensors(af_tensors *dst, const af_case *c, const af_tensors *template_tensors, char *why, size_t cap);

/* Forget the shared scale arrays, so that af_tensors_free(t) frees only t's own
 * buffers (for a copy handed to a caller who owns no scales). */
void af_clone_disown_scales(af_tensors *t);

/* Free a copy made by af_clone_tensors (its own buffers, never the shared scales). */
void af_clone_release(af_tensors *t);

#endif
