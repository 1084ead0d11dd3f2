/* clone.c — working copies of template buffers (clone.h). */
#include "judge/clone.h"

#include <stdio.h>

int af_clone_tensors(af_tensors *dst, const af_case *c, const af_tensors *template_tensors, char *why, size_t cap) {
    if (af_tensors_alloc(dst, c, why, cap)) return -1;
    if (template_tensors->bias_given && !af_tensors_bias_alloc(dst, c)) { /* the copy owns its own */
        snprintf(why, cap, "out of host memory for the given bias");
        af_tensors_free(dst);
        return -1;
    }
    af_tensors_copy(dst, template_tensors);
    dst->mx_scale_q = template_tensors->mx_scale_q;
    dst->mx_scale_k = template_tensors->mx_scale_k;
    dst->mx_scale_v = template_tensors->mx_scale_v;
    return 0;
}

void af_clone_disown_scales(af_tensors *t) { t->mx_scale_q = t->mx_scale_k = t->mx_scale_v = NULL; }

void af_clone_release(af_tensors *t) {
    af_clone_disown_scales(t);
    af_tensors_free(t);
}
