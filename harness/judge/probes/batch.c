/* batch.c — the batch-invariance probe (AF_V_NONDETERMINISTIC, probes.h): on a
 * deterministic backend, a sequence's outputs may not depend on which other sequences
 * share its batch. The last sequence (ragged batches put the longest last, where split
 * heuristics keyed on the batch size show) is run alone, batch 1 with the same lengths
 * and the same stored input bits, and its rows must equal bitwise its rows of the full
 * batch. A kernel whose split count, tile order or reduction tree depends on the batch
 * size (a common way to fill the GPU) fails this while passing every numerical check.
 *
 * fp8 dtypes, mxfp8 and kv_dtype's fp8 K, V are skipped: their scales are per tensor, over the whole batch,
 * so a sub-batch's exact inputs would need other stored bits. */
#include "judge/probes/common.h"

#include <stdio.h>
#include <string.h>

#include "judge/clone.h"
#include "model/gen.h"

/* The sub-batch case: sequence b of c alone. 0, or -1 when the model refuses it. */
static int sub_case(const af_case *c, int b, af_case *out) {
    *out = *c;
    out->batch = 1;
    if (c->has_seqlens) {
        memset(out->seqlens_q, 0, sizeof out->seqlens_q);
        memset(out->seqlens_kv, 0, sizeof out->seqlens_kv);
        out->seqlens_q[0] = c->seqlens_q[b];
        out->seqlens_kv[0] = c->seqlens_kv[b];
    }
    af_error e;
    return af_case_validate(out, &e) == 0 ? 0 : -1;
}

/* The sub-batch's buffers: laid out for sc, inputs generated, then the valid tokens of
 * sequence b of the template copied bit for bit into sequence 0; outputs poisoned. */
static int sub_tensors(probe_ctx *x, const af_case *sc, int b, af_tensors *t) {
    char why[256];
    if (af_tensors_alloc(t, sc, why, sizeof why)) {
        probe_note(x, "batch: %s", why);
        return -1;
    }
    af_inputs in;
    memset(&in, 0, sizeof in);
    if (af_inputs_alloc(&in, sc) || af_inputs_generate(sc, t, &in)) {
        af_inputs_free(&in);
        af_tensors_free(t);
        probe_note(x, "%s", "batch: out of memory");
        return -1;
    }
    af_inputs_free(&in);
    af_tensors_poison_outputs(t, sc);
    const af_tensors *full = x->tg->template_tensors;
    af_tensor_id ins[4] = {AF_T_Q, AF_T_K, AF_T_V, AF_T_DO};
    for (int k = 0; k < (x->c->backward ? 4 : 3); k++) {
        af_tensor_id id = ins[k];
        const af_tensor_view *fv = &full->plan.view[id], *sv = &t->plan.view[id];
        int bytes = af_storage_bytes(fv->storage);
        for (int h = 0; h < fv->H; h++)
            for (int s = 0; s < judged_rows(x, id, b); s++)
                for (int d = 0; d < fv->D; d++)
                    memcpy((uint8_t *)t->buf[sv->buffer] + offset_of(t, id, 0, h, s, d) * bytes,
                           (const uint8_t *)full->buf[fv->buffer] + offset_of(full, id, b, h, s, d) * bytes,
                           (size_t)bytes);
    }
    return 0;
}

void probe_batch(probe_ctx *x) {
    const af_case *c = x->c;
    if (c->batch < 2) return;
    if (!x->exact) {
        probe_note(x, "%s", "batch invariance: skipped (the backend is not deterministic)");
        return;
    }
    if ((c->dtype != AF_DT_FP16 && c->dtype != AF_DT_BF16) || c->kv_dtype != AF_KV_SAME) {
        probe_note(x, "%s", "batch invariance: skipped (fp8 scales are per tensor, over the batch)");
        return;
    }
    if (af_case_has_features(c)) { /* bias, sink logits, dLSE: not sliced into the sub-batch (yet) */
        probe_note(x, "%s", "batch invariance: skipped (feature inputs are not sliced for the sub-batch)");
        return;
    }
    int b = c->batch - 1;
    while (b > 0 && (len_q(x, b) <= 0 || len_kv(x, b) <= 0)) b--;
    af_case sc;
    if (sub_case(c, b, &sc)) {
        probe_note(x, "%s", "batch invariance: the model refuses the sub-batch case");
        return;
    }
    af_tensors t;
    if (sub_tensors(x, &sc, b, &t)) return;
    if (probe_work_run(x, &sc, &t, "batch invariance")) {
        af_tensors_free(&t);
        return;
    }
    x->st->batch_checked = true;
    const af_tensors *full = x->tg->baseline;
    long long n_differ = 0;
    af_tensor_id fid = AF_T_O;
    int fh = 0, fs = 0, fd = 0;
    double f_full = 0, f_alone = 0;
    for (int k = 0; k < n_outs(c); k++) {
        af_tensor_id id = probe_outputs[k];
        const af_tensor_view *fv = &full->plan.view[id], *sv = &t.plan.view[id];
        int bytes = af_storage_bytes(fv->storage);
        for (int h = 0; h < fv->H; h++)
            for (int s = 0; s < judged_rows(x, id, b); s++)
                for (int d = 0; d < fv->D; d++) {
                    int64_t off_full = offset_of(full, id, b, h, s, d), off_alone = offset_of(&t, id, 0, h, s, d);
                    if (memcmp((const uint8_t *)full->buf[fv->buffer] + off_full * bytes,
                               (const uint8_t *)t.buf[sv->buffer] + off_alone * bytes, (size_t)bytes) == 0)
                        continue;
                    if (n_differ++ == 0) {
                        fid = id;
                        fh = h;
                        fs = s;
                        fd = d;
                        f_full = probe_load(full, id, off_full);
                        f_alone = probe_load(&t, id, off_alone);
                    }
                }
    }
    if (n_differ) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "not batch invariant: sequence %d alone (batch 1) differs from its rows in the batch of %d in %lld "
                 "elements (first: %s h%d %s %d c%d %.9g in the batch, %.9g alone)",
                 b, c->batch, n_differ, af_tensor_name(fid), fh, af_tensor_is_kv(fid) ? "key" : "row", fs, fd, f_full,
                 f_alone);
        probe_finding(x, AF_V_NONDETERMINISTIC, fid, b, fh, fs, fd, f_full, f_alone, 0, msg);
    }
    af_tensors_free(&t);
}
