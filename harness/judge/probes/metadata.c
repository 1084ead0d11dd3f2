/* metadata.c — the metadata probe (probes.h; research C21 "untrusted index metadata":
 * cu_seqlens, page tables and per-sequence lengths used unchecked). A backend handed the
 * metadata of a ragged (thd) or paged case must either refuse it when it is malformed
 * (decline or an error status, nothing written outside its outputs, no input changed) or
 * give the answer that the metadata actually means. The case is run again with one
 * malformation at a time (probe_md_malform, each a small change of a copy of the case and
 * of its layout plan: the ABI's token_start, page_table and seqlens):
 *
 *   thd    offsets_decreasing   token_start[k] and token_start[k + 1] swapped (both sides)
 *          offset_past_end      the last sequence shifted so that its last token is one
 *                               past the end of the buffer (both sides; the total offset
 *                               larger than the allocation)
 *          final_offset_long    token_start[B] one more than the buffer's tokens (both
 *                               sides); every sequence stays where it was: DEFINED, the
 *                               lengths are seqlens (plugin.h), so a backend that runs it
 *                               must give the judged run's outputs
 *          len_past_offsets     seqlens_kv[b] one more than its span token_start[b + 1] -
 *                               token_start[b] (the first sequence with keys)
 *          (thd with paged K/V: the query side only, K and V have no token starts, and no
 *          len_past_offsets: the key lengths are bounded by the pages, len_past_pages; thd
 *          with layout_kv padded K/V: the query side only, no len_past_offsets either)
 *   paged  page_past_end        a used page-table entry set to n_pages
 *          page_negative        the same entry set to -1
 *          page_shared          the same entry set to another sequence's first page: a page
 *                               used by two sequences. DEFINED: sharing pages is legal
 *                               (prefix caching; K and V are only read), sequence b reads
 *                               that page's keys as its own. Its expected outputs are the
 *                               backend's own on a well-formed twin: the original table with
 *                               the shared page's K and V rows copied into the page the
 *                               entry had (the same logical K and V everywhere)
 *          len_past_pages       seqlens_kv[b] one more than pages_per_seq * page_size
 *
 * Every run that returns AF_RUN_OK must leave the guards of every buffer intact
 * (out_of_bounds, af_check_guards: no layout needed), every input and the metadata it was
 * given unchanged (input_mutation, af_check_input_mutation against the template with the
 * malformed metadata) and every output element finite or still poisoned (nan_inf; LSE may
 * be -inf): the raw buffers are scanned, since under malformed metadata nothing says which
 * rows a backend should have written. The two DEFINED variants must also give their
 * expected outputs (mismatch: bitwise on a deterministic backend, else within the
 * run-to-run tolerance). A decline or an error is a clean refusal (a note).
 *
 * Crashes. A host plugin (AF_BACKEND_PLUGIN without AF_BACKEND_NEEDS_GPU) runs each
 * variant in a forked child (util/proc.h) whose buffers come back through shared memory:
 * a signal (a segfault on an unchecked offset) or a run past the deadline becomes a crash
 * or hang finding of this probe naming the variant, and the probes go on. Other backends
 * run here: CUDA does not survive a fork, and a GPU backend reports an illegal address as
 * AF_RUN_CRASH, which becomes the same finding (then the probes stop: the device state is
 * suspect); a host segfault there ends the case's own child (the case is a crash).
 *
 * Runs only for backends other than the cpu reference, on thd or paged cases without fp8
 * or mxfp8 scales' dependence on the layout (they are per tensor: no skip needed), after
 * every other probe (the history probe's schedule of runs on the instance stays). Cost:
 * 4 runs on a thd case, 5 on a paged one (page_shared's twin), fewer where a variant does
 * not apply (one sequence: no page_shared). */
#include "judge/probes/common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "judge/clone.h"
#include "judge/compare.h"
#include "judge/mutation.h"
#include "util/clock.h"
#include "util/stage_mark.h"
#include "util/proc.h"

const char *const probe_md_names[MD_COUNT] = {"offsets_decreasing", "offset_past_end", "final_offset_long",
                                              "len_past_offsets",   "page_past_end",   "page_negative",
                                              "page_shared",        "len_past_pages"};

bool probe_md_defined(probe_md_kind k) { return k == MD_FINAL_OFFSET_LONG || k == MD_PAGE_SHARED; }

/* ---- the malformations ------------------------------------------------------------------ */

/* The first sequence with keys (-1: none). */
static int first_with_keys(const af_case *c) {
    for (int b = 0; b < c->batch; b++)
        if (af_case_len_kv(c, b) > 0) return b;
    return -1;
}

static void ensure_seqlens(af_case *cc) {
    if (cc->has_seqlens) return;
    cc->has_seqlens = true;
    for (int b = 0; b < cc->batch; b++) {
        cc->seqlens_q[b] = cc->seqlen_q;
        cc->seqlens_kv[b] = cc->seqlen_kv;
    }
}

int probe_md_malform(probe_md_kind k, const af_case *c, const af_layout_plan *plan, af_case *cc, af_layout_plan *out,
                     probe_md_change *ch, char *what, size_t cap) {
    *cc = *c;
    memcpy(out, plan, sizeof *out);
    memset(ch, 0, sizeof *ch);
    ch->kind = k;
    ch->b = ch->entry = -1;
    const int B = c->batch;
    bool thd = c->layout == AF_LAYOUT_THD, paged = plan->page_size > 0;
    int b = first_with_keys(c);
    if (b < 0) return -1;
    int64_t *starts[2] = {out->token_start_q, out->token_start_kv};
    const int64_t totals[2] = {plan->total_tokens_q, plan->total_tokens_kv};
    /* thd + paged, thd + layout_kv padded: K and V have no token starts (layout.h) */
    const bool key_starts = plan->view[AF_T_K].ragged;
    const int sides = key_starts ? 2 : 1;
    const int named = sides - 1; /* the side the messages name: keys, or queries without key starts */
    const char *tokens = key_starts ? "key" : "query";
    switch (k) {
        case MD_OFFSETS_DECREASING: {
            if (!thd) return -1;
            int changed = 0;
            for (int side = 0; side < sides; side++)
                for (int j = 0; j < B; j++)
                    if (starts[side][j] < starts[side][j + 1]) {
                        int64_t t = starts[side][j];
                        starts[side][j] = starts[side][j + 1];
                        starts[side][j + 1] = t;
                        if (!changed++) ch->b = j;
                        break;
                    }
            if (!changed) return -1;
            snprintf(what, cap, "token_start[%d] and [%d] swapped (not monotonic)", ch->b, ch->b + 1);
            return 0;
        }
        case MD_OFFSET_PAST_END: {
            if (!thd) return -1;
            for (int side = 0; side < sides; side++) {
                int last = -1;
                for (int j = 0; j < B; j++)
                    if ((side ? af_case_len_kv(c, j) : af_case_len_q(c, j)) > 0) last = j;
                if (last < 0) continue;
                int len = side ? af_case_len_kv(c, last) : af_case_len_q(c, last);
                int64_t delta = totals[side] - (starts[side][last] + len) + 1;
                for (int j = last; j <= B; j++) starts[side][j] += delta;
                if (side == named) ch->b = last;
            }
            if (ch->b < 0) return -1;
            snprintf(what, cap,
                     "the last sequence's last token one past the end of the buffer (token_start[%d] = %lld "
                     "of %lld %s tokens)",
                     ch->b, (long long)starts[named][ch->b], (long long)totals[named], tokens);
            return 0;
        }
        case MD_FINAL_OFFSET_LONG:
            if (!thd) return -1;
            for (int side = 0; side < sides; side++) starts[side][B] = totals[side] + 1;
            ch->b = B;
            snprintf(what, cap, "token_start[%d] = %lld, one more than the buffer's %lld %s tokens", B,
                     (long long)starts[named][B], (long long)totals[named], tokens);
            return 0;
        case MD_LEN_PAST_OFFSETS: {
            if (!thd || !key_starts) return -1; /* paged keys: len_past_pages; padded keys: none */
            ensure_seqlens(cc);
            int64_t span = plan->token_start_kv[b + 1] - plan->token_start_kv[b];
            cc->seqlens_kv[b] = (int)(span + 1);
            ch->b = b;
            snprintf(what, cap, "seqlens_kv[%d] = %d, one more than its offsets' span %lld", b, cc->seqlens_kv[b],
                     (long long)span);
            return 0;
        }
        case MD_PAGE_PAST_END:
        case MD_PAGE_NEGATIVE:
        case MD_PAGE_SHARED: {
            if (!paged) return -1;
            int pps = plan->pages_per_seq;
            ch->b = b;
            ch->entry = (af_case_len_kv(c, b) - 1) / plan->page_size; /* its last used page */
            int32_t *slot = &out->page_table[b * pps + ch->entry];
            ch->was = *slot;
            if (k == MD_PAGE_SHARED) {
                int other = -1;
                for (int j = 0; j < B && other < 0; j++)
                    if (j != b && af_case_len_kv(c, j) > 0) other = j;
                if (other < 0) return -1; /* one sequence: no other sequence to share with */
                *slot = plan->page_table[other * pps];
                ch->now = *slot;
                snprintf(what, cap, "page_table[%d][%d] = %d, sequence %d's first page (a page used twice)", b,
                         ch->entry, *slot, other);
                return 0;
            }
            *slot = k == MD_PAGE_NEGATIVE ? -1 : plan->n_pages;
            ch->now = *slot;
            snprintf(what, cap, "page_table[%d][%d] = %d of %d pages", b, ch->entry, *slot, plan->n_pages);
            return 0;
        }
        case MD_LEN_PAST_PAGES: {
            if (!paged) return -1;
            ensure_seqlens(cc);
            cc->seqlens_kv[b] = plan->pages_per_seq * plan->page_size + 1;
            ch->b = b;
            snprintf(what, cap, "seqlens_kv[%d] = %d, one more than its %d pages of %d hold", b, cc->seqlens_kv[b],
                     plan->pages_per_seq, plan->page_size);
            return 0;
        }
        case MD_COUNT:
            break;
    }
    return -1;
}

/* The metadata arrays of src into dst (the rest of the plans is the same case's). */
static void copy_metadata(af_layout_plan *dst, const af_layout_plan *src) {
    memcpy(dst->token_start_q, src->token_start_q, sizeof dst->token_start_q);
    memcpy(dst->token_start_kv, src->token_start_kv, sizeof dst->token_start_kv);
    memcpy(dst->page_table, src->page_table, sizeof dst->page_table);
}

/* ---- one run, isolated for a host plugin ------------------------------------------------- */

typedef struct {
    af_run_status status;
    char why[512];
    af_run_info info;
    bool crashed;    /* the child ended without reporting (signal, exit, deadline) */
    bool hung;       /* ... past the deadline */
    char ended[160]; /* how (af_proc_describe) */
} md_outcome;

/* What the child writes back: the header, then every buffer (guards included), dsink and
 * the plan (the metadata the backend may have written). */
typedef struct {
    af_backend *be;
    const af_case *cc;
    const char *engine;
    af_tensors *w;
    uint8_t *shared;
} md_child_job;

static size_t shared_bytes(const af_case *c, const af_tensors *w) {
    size_t n = sizeof(md_outcome) + sizeof(af_layout_plan);
    for (int i = 0; i < AF_BUF_COUNT; i++)
        if (w->alloc[i]) n += w->bytes[i] + 2 * AF_GUARD_BYTES;
    if (w->dsink) n += (size_t)c->heads_q * sizeof(float);
    return n;
}

/* Copy w's buffers, dsink and plan to (to_shared) or from the shared region. */
static void transfer(const af_case *c, af_tensors *w, uint8_t *shared, bool to_shared) {
    uint8_t *p = shared + sizeof(md_outcome);
    if (to_shared)
        memcpy(p, &w->plan, sizeof w->plan);
    else
        memcpy(&w->plan, p, sizeof w->plan);
    p += sizeof w->plan;
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        if (!w->alloc[i]) continue;
        size_t n = w->bytes[i] + 2 * AF_GUARD_BYTES;
        if (to_shared)
            memcpy(p, w->alloc[i], n);
        else
            memcpy(w->alloc[i], p, n);
        p += n;
    }
    if (w->dsink) {
        size_t n = (size_t)c->heads_q * sizeof(float);
        if (to_shared)
            memcpy(p, w->dsink, n);
        else
            memcpy(w->dsink, p, n);
    }
}

static void md_child_main(void *user) {
    md_child_job *job = user;
    md_outcome o;
    memset(&o, 0, sizeof o);
    o.info.workspace_bytes = -1;
    o.status = job->be->run(job->be, job->cc, job->engine, job->w, &o.info, o.why, sizeof o.why);
    transfer(job->cc, job->w, job->shared, true);
    memcpy(job->shared, &o, sizeof o); /* last: the header says the rest is there */
}

static bool isolate_runs(const af_backend *be) {
    return (be->flags & AF_BACKEND_PLUGIN) && !(be->flags & AF_BACKEND_NEEDS_GPU);
}

/* Run the backend on case cc (the template case's layout, w's metadata) into *o. */
static void md_run(probe_ctx *x, const af_case *cc, af_tensors *w, md_outcome *o) {
    memset(o, 0, sizeof *o);
    o->info.workspace_bytes = -1;
    af_backend *be = x->tg->be;
    const char *engine = x->tg->engine ? x->tg->engine : "";
    x->st->extra_runs++;
    double t0 = af_clock_mono();
    size_t n = isolate_runs(be) ? shared_bytes(x->c, w) : 0;
    void *shared = n ? mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
    if (shared == MAP_FAILED) { /* not isolated: here */
        o->status = af_backend_run(be, cc, engine, w, &o->info, o->why, sizeof o->why);
        x->st->run_s += af_clock_mono() - t0;
        return;
    }
    memset(shared, 0, sizeof(md_outcome));
    md_child_job job = {be, cc, engine, w, shared};
    double judged = x->tg->baseline_info ? x->tg->baseline_info->seconds : 0;
    int deadline = (int)(judged * 20 + 10); /* the judged run's time, generously */
    af_proc_opts po;
    memset(&po, 0, sizeof po);
    po.fn = md_child_main;
    po.user = &job;
    po.alarm_s = deadline;
    po.deadline_s = deadline + 2;
    af_proc p;
    if (af_proc_start(&p, &po)) {
        munmap(shared, n);
        o->status = af_backend_run(be, cc, engine, w, &o->info, o->why, sizeof o->why);
        x->st->run_s += af_clock_mono() - t0;
        return;
    }
    af_stage_mark_backend_enter(be->mark); /* the child's run is the backend's call (not marked there: a
                                              killed child would never leave it) */
    while (!af_proc_wait_for(&p, 1.0))
        if (af_proc_expired(&p)) af_proc_kill(&p, 0, true);
    af_stage_mark_backend_leave(be->mark);
    af_proc_end e = af_proc_ended(&p);
    if (e.how == AF_PROC_EXITED && e.exit_status == 0) {
        memcpy(o, shared, sizeof *o);
        transfer(x->c, w, shared, false);
    } else {
        o->crashed = true;
        o->hung = e.how == AF_PROC_DEADLINE;
        o->status = o->hung ? AF_RUN_HANG : AF_RUN_CRASH;
        af_proc_describe(&p, o->ended, sizeof o->ended);
        snprintf(o->why, sizeof o->why, "the probe's run ended: %s", o->ended);
    }
    munmap(shared, n);
    x->st->run_s += af_clock_mono() - t0;
}

/* ---- the checks ------------------------------------------------------------------------- */

/* A finding of this probe: detail = "metadata <variant> (<what>): <msg>". */
static void md_finding(probe_ctx *x, const af_finding *src, const char *name, const char *what) {
    af_finding f = *src;
    char d[sizeof f.detail];
    snprintf(d, sizeof d, "metadata %s (%s): %s", name, what, src->detail);
    snprintf(f.detail, sizeof f.detail, "%s", d);
    f.repeat = 0;
    af_verdict_add(x->v, &f);
}

/* The first output element (raw buffers, gaps included) that is neither poison (not
 * written) nor finite (-inf allowed in LSE). true with its buffer, element and value. */
static bool nonfinite_output(const af_case *c, const af_tensors *w, af_buffer_id *bid, int64_t *e, double *value) {
    const af_buffer_id outs[5] = {AF_BUF_O, AF_BUF_LSE, AF_BUF_DQ, AF_BUF_DK, AF_BUF_DV};
    for (int k = 0; k < (c->backward ? 5 : 2); k++) {
        af_buffer_id b = outs[k];
        if (!w->buf[b]) continue;
        af_storage st = w->plan.buffer_storage[b];
        int nb = af_storage_bytes(st);
        uint8_t poison[4]; /* one element of poison, as af_tensors_poison_outputs writes it */
        uint32_t p32 = AF_POISON_F32;
        uint16_t p16 = st == AF_ST_F16 ? AF_POISON_F16 : AF_POISON_BF16;
        if (st == AF_ST_F32)
            memcpy(poison, &p32, 4);
        else if (st == AF_ST_E4M3)
            poison[0] = AF_POISON_E4M3;
        else if (st == AF_ST_E5M2)
            poison[0] = AF_POISON_E5M2;
        else
            memcpy(poison, &p16, 2);
        for (int64_t i = 0; i < w->plan.buffer_elems[b]; i++) {
            const uint8_t *ptr = (const uint8_t *)w->buf[b] + i * nb;
            if (memcmp(ptr, poison, (size_t)nb) == 0) continue;
            double v = af_storage_load(st, w->buf[b], i);
            if (isfinite(v) || (b == AF_BUF_LSE && isinf(v) && v < 0)) continue;
            *bid = b, *e = i, *value = v;
            return true;
        }
    }
    return false;
}

/* The first judged output element where run a differs from run b (both in the case's own
 * layout); the count in *moved. */
static bool first_difference(probe_ctx *x, const af_tensors *a, const af_tensors *b, af_finding *f, long long *moved) {
    *moved = 0;
    for (int t = 0; t < n_outs(x->c); t++) {
        af_tensor_id id = probe_outputs[t];
        const af_tensor_view *v = &a->plan.view[id];
        for (int bb = 0; bb < v->B; bb++)
            for (int h = 0; h < v->H; h++)
                for (int r = 0; r < judged_rows(x, id, bb); r++) {
                    if (probe_row_same_bits(a, b, id, bb, h, r)) continue;
                    for (int d = 0; d < v->D; d++) {
                        double va, vb;
                        if (!probe_moved(x, a, b, id, offset_of(a, id, bb, h, r, d), &va, &vb)) continue;
                        if ((*moved)++ == 0) {
                            *f = af_finding_at(AF_V_MISMATCH, id, bb, h, r, id == AF_T_LSE ? -1 : d, "");
                            f->kernel_value = vb;
                            f->baseline_value = va;
                            f->error = isnan(va) || isnan(vb) ? INFINITY : fabs(vb - va);
                            f->allowed = x->exact ? 0 : x->tol[id];
                            f->ratio = f->allowed > 0 ? f->error / f->allowed : 0;
                        }
                    }
                }
    }
    return *moved > 0;
}

/* page_shared's twin: the original metadata, and the shared page's K and V rows copied
 * into the page the entry had, so that every sequence reads the keys it reads through the
 * shared entry. 0, or -1 (a note). */
static int shared_twin(probe_ctx *x, const probe_md_change *ch, af_tensors *twin) {
    if (probe_work_begin(x, x->c, twin)) return -1;
    const af_tensor_id kv[2] = {AF_T_K, AF_T_V};
    for (int k = 0; k < 2; k++) {
        const af_tensor_view *v = &twin->plan.view[kv[k]];
        size_t page = (size_t)v->stride_b * (size_t)af_storage_bytes(v->storage);
        uint8_t *buf = twin->buf[v->buffer];
        memcpy(buf + (size_t)ch->was * page, buf + (size_t)ch->now * page, page);
    }
    return 0;
}

static void md_variant(probe_ctx *x, probe_md_kind k) {
    const char *name = probe_md_names[k];
    const af_tensors *tmpl = x->tg->template_tensors;
    af_case cc;
    probe_md_change ch;
    char what[160];
    af_layout_plan *bad = malloc(sizeof *bad);
    af_tensors *before = malloc(sizeof *before);
    af_verdict *scratch = malloc(sizeof *scratch);
    if (!bad || !before || !scratch) {
        probe_note(x, "%s", "metadata: out of memory");
        goto out;
    }
    if (probe_md_malform(k, x->c, &tmpl->plan, &cc, bad, &ch, what, sizeof what)) goto out;
    af_tensors w;
    if (probe_work_begin(x, x->c, &w)) goto out;
    copy_metadata(&w.plan, bad);
    md_outcome o;
    md_run(x, &cc, &w, &o);
    char msg[256];
    af_finding f;
    if (o.status == AF_RUN_CRASH || o.status == AF_RUN_HANG) {
        snprintf(msg, sizeof msg, "%s", o.why[0] ? o.why : "the run crashed");
        f = af_finding_at(o.status == AF_RUN_HANG ? AF_V_HANG : AF_V_CRASH, AF_T_NONE, -1, -1, -1, -1, msg);
        md_finding(x, &f, name, what);
        if (!o.crashed) x->stop = true; /* in this process: its state is suspect */
        probe_work_end(x, &w);
        goto out;
    }
    if (o.status != AF_RUN_OK) { /* a clean refusal, if nothing was written */
        x->st->failed_runs++;
        snprintf(msg, sizeof msg, "metadata %s: refused (status %d: %.160s)", name, (int)o.status, o.why);
        probe_note(x, "%s", msg);
    }
    x->st->metadata_runs++;
    af_verdict_init(scratch, x->tg->be->name);
    af_check_guards(&w, ~0u, scratch);
    *before = *tmpl;
    copy_metadata(&before->plan, bad);
    af_check_input_mutation(x->c, before, NULL, &w, &o.info, 0, scratch);
    for (int i = 0; i < scratch->n_findings && i < AF_MAX_FINDINGS; i++)
        md_finding(x, &scratch->findings[i], name, what);
    copy_metadata(&w.plan, &tmpl->plan); /* the case's own layout again: only raw scans and judged rows below */
    af_buffer_id bid;
    int64_t e;
    double value;
    if (o.status == AF_RUN_OK && nonfinite_output(x->c, &w, &bid, &e, &value)) {
        snprintf(msg, sizeof msg, "the run returned OK and wrote %g at element %lld of buffer %s", value, (long long)e,
                 af_buffer_name(bid));
        const af_tensor_id of[AF_BUF_COUNT] = {AF_T_Q,  AF_T_K,  AF_T_V,  AF_T_O, AF_T_LSE,
                                               AF_T_DO, AF_T_DQ, AF_T_DK, AF_T_DV};
        f = af_finding_at(AF_V_NAN_INF, of[bid], -1, -1, -1, -1, msg);
        f.kernel_value = value;
        md_finding(x, &f, name, what);
    } else if (o.status == AF_RUN_OK && probe_md_defined(k)) {
        af_tensors twin;
        const af_tensors *expect = x->tg->baseline;
        bool have = true;
        if (k == MD_PAGE_SHARED) {
            have = shared_twin(x, &ch, &twin) == 0;
            md_outcome ot;
            if (have) md_run(x, x->c, &twin, &ot);
            if (have && ot.status != AF_RUN_OK) {
                snprintf(msg, sizeof msg, "metadata page_shared: the well-formed twin did not run (status %d: %.160s)",
                         (int)ot.status, ot.why);
                probe_note(x, "%s", msg);
                probe_work_end(x, &twin);
                have = false;
            }
            expect = &twin;
        }
        long long moved;
        if (have && first_difference(x, expect, &w, &f, &moved)) {
            snprintf(msg, sizeof msg,
                     "well-formed in meaning, the run gave %s b%d h%d row %d = %.6g where the same keys through "
                     "well-formed metadata give %.6g; %lld elements differ",
                     af_tensor_name(f.tensor), f.b, f.h, f.row, f.kernel_value, f.baseline_value, moved);
            snprintf(f.detail, sizeof f.detail, "%s", msg);
            md_finding(x, &f, name, what);
        }
        if (have && k == MD_PAGE_SHARED) probe_work_end(x, &twin);
    }
    probe_work_end(x, &w);
out:
    free(bad);
    free(before);
    free(scratch);
}

void probe_metadata(probe_ctx *x) {
    const af_case *c = x->c;
    if (c->layout != AF_LAYOUT_THD && c->page_size == 0) return; /* no metadata: nothing to malform */
    /* no promise to hold it to: the cpu reference, most kernels (undefined behaviour for
     * malformed metadata, documented), the worker package's dense tensors */
    if (!(x->tg->be->flags & AF_BACKEND_CHECKS_METADATA)) {
        probe_note(x, "%s", "metadata: skipped (the backend does not promise to refuse malformed metadata)");
        return;
    }
    for (int k = 0; k < MD_COUNT && !x->stop; k++) md_variant(x, (probe_md_kind)k);
}
