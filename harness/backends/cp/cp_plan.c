/* cp_plan.c — a CP case as inner runs: the chunking, the four comm types' per-rank and
 * per-step calls, each call's mask in the case model's fields and its K/V heads
 * (cp_plan.h); the planted bugs that live in a plan (cp.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cp/cp_plan.h"

static const char *comm_name(const af_case *c) { return af_cp_comm_name(c->cp_comm); }

static af_cp_run *add_run(af_cp_plan *p) {
    if (p->count == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        af_cp_run *r = realloc(p->runs, (size_t)cap * sizeof *r);
        if (!r) return NULL;
        p->runs = r;
        p->cap = cap;
    }
    af_cp_run *r = &p->runs[p->count++];
    memset(r, 0, sizeof *r);
    return r;
}

void af_cp_plan_free(af_cp_plan *p) {
    free(p->runs);
    memset(p, 0, sizeof *p);
}

/* Chunk k of 2n of sequence b, query side (kv = false) or key side. */
static af_cp_seg chunk(const af_case *c, int b, bool kv, int k, int nchunks) {
    int len = kv ? af_case_len_kv(c, b) : af_case_len_q(c, b);
    af_cp_seg s;
    if (c->layout == AF_LAYOUT_THD) {
        int size = len / nchunks;
        s.start = k * size;
        s.size = size;
        s.valid = size;
    } else {
        int size = (kv ? c->seqlen_kv : c->seqlen_q) / nchunks;
        int valid = len - k * size;
        s.start = k * size;
        s.size = size;
        s.valid = valid < 0 ? 0 : valid > size ? size : valid;
    }
    return s;
}

/* The whole sequence b as one segment. */
static af_cp_seg whole(const af_case *c, int b, bool kv) {
    int len = kv ? af_case_len_kv(c, b) : af_case_len_q(c, b);
    int size = c->layout == AF_LAYOUT_THD ? len : kv ? c->seqlen_kv : c->seqlen_q;
    return (af_cp_seg){0, size, len};
}

/* TransformerEngine's test (context_parallel.py): a window other than (-1, 0) and
 * (-1, -1) is a sliding window. */
static bool sliding_window(const af_case *c) {
    return !(c->window_left == -1 && (c->window_right == 0 || c->window_right == -1));
}

/* Causal for the chunk steps: the causal mask, or the window (-1, 0) that is the same. */
static bool effective_causal(const af_case *c) {
    return c->mask == AF_MASK_CAUSAL || (c->window_left == -1 && c->window_right == 0);
}

/* p2p ring of n (super-)ranks over 2n chunks, for rank `rank` whose ring position is
 * ring_rank, query heads [h0, h0 + hq). */
static int add_p2p_runs(const af_case *c, af_cp_plant plant, af_cp_plan *p, int rank, int ring_rank, int n, int h0,
                        int hq) {
    bool causal = effective_causal(c);
    int nchunks = 2 * n, group = c->heads_q / c->heads_kv;
    for (int s = 0; s < n; s++) {
        int src = (ring_rank - s + n) % n;
        af_cp_run *r = add_run(p);
        if (!r) return -1;
        r->rank = rank;
        r->step = s;
        r->what = "step";
        r->h0 = h0;
        r->heads_q = hq;
        r->hk0 = h0 / group; /* heads_check: the ranks' query heads split along whole groups */
        r->heads_kv = hq / group;
        r->ring_rank = src; /* the K/V of this step belong to ring position src */
        r->self_ring = ring_rank;
        r->ring_chunks = nchunks;
        r->mask = AF_MASK_NONE;
        r->align = AF_ALIGN_TOP_LEFT;
        r->window_left = r->window_right = -1;
        int qa = ring_rank, qb = nchunks - 1 - ring_rank, ka = src, kb = nchunks - 1 - src;
        if (plant == AF_CP_PLANT_CHUNK_SWAP) { /* the bug: local order (2n-1-r, r) */
            int t = qa;
            qa = qb;
            qb = t;
            t = ka;
            ka = kb;
            kb = t;
        }
        bool q_both = true, kv_both = true;
        if (causal && s == 0) {
            r->mask = AF_MASK_CAUSAL; /* diagonal step: causal on the local sequence */
        } else if (causal && src < ring_rank) {
            kv_both = false; /* lower step: every query row sees the first K/V chunk whole */
        } else if (causal) {
            /* half step: only the second query chunk sees anything, and all of it */
            q_both = plant == AF_CP_PLANT_NO_HALF_MASK;
            if (!q_both) qa = qb;
        }
        r->nseg_q = q_both ? 2 : 1;
        r->nseg_kv = kv_both ? 2 : 1;
        for (int b = 0; b < c->batch; b++) {
            r->q[b][0] = chunk(c, b, false, qa, nchunks);
            r->q[b][1] = chunk(c, b, false, qb, nchunks);
            r->kv[b][0] = chunk(c, b, true, ka, nchunks);
            r->kv[b][1] = chunk(c, b, true, kb, nchunks);
        }
    }
    return 0;
}

/* all_gather: rank r, its query chunk qc, against the gathered K/V trimmed to the keys
 * the chunk can see. Causal (and any window whose right end is the diagonal) becomes
 * bottom-right on the trimmed range; an unmasked case keeps the whole range. */
static af_run_status add_all_gather_run(const af_case *c, af_cp_plant plant, af_cp_plan *p, int rank, int part, int qc,
                                        char *why, size_t cap) {
    int n = c->cp_size, nchunks = 2 * n;
    af_cp_run *r = add_run(p);
    if (!r) return AF_RUN_RESOURCE;
    r->rank = rank;
    r->step = part;
    r->what = "chunk";
    r->h0 = 0;
    r->heads_q = c->heads_q;
    r->hk0 = 0;
    r->heads_kv = c->heads_kv;
    r->ring_rank = -2; /* keys of every rank: the owner is found per key (cp_exec.c) */
    r->ring_chunks = nchunks;
    r->nseg_q = r->nseg_kv = 1;
    bool unmasked = c->mask == AF_MASK_NONE && c->window_left == -1 && c->window_right == -1;
    bool right_at_diagonal = c->mask == AF_MASK_CAUSAL || c->window_right == 0;
    if (!unmasked && !right_at_diagonal) {
        snprintf(why, cap,
                 "cp all_gather rank %d chunk %d: a window right of the diagonal (%d) on a non-causal mask has no "
                 "case-model form on the trimmed K/V range (neither alignment puts the diagonal there)",
                 rank, part, c->window_right);
        return AF_RUN_DECLINED;
    }
    r->mask = c->mask;
    r->align = unmasked ? AF_ALIGN_TOP_LEFT : AF_ALIGN_BOTTOM_RIGHT;
    r->window_left = c->window_left;
    r->window_right = c->window_right;
    /* the bug: the mirror chunk's call trusts the trim below to enforce the window and
     * runs causal on the trimmed range, so its later rows see keys left of their window */
    if (plant == AF_CP_PLANT_WINDOW_LEFT_DROPPED && part == 1) r->window_left = -1;
    for (int b = 0; b < c->batch; b++) {
        af_cp_seg q = chunk(c, b, false, qc, nchunks);
        r->q[b][0] = q;
        int len_q = af_case_len_q(c, b), len_kv = af_case_len_kv(c, b);
        if (unmasked) {
            r->kv[b][0] = (af_cp_seg){0, len_kv, len_kv};
            continue;
        }
        int off = c->align == AF_ALIGN_BOTTOM_RIGHT ? len_kv - len_q : 0; /* global diagonal offset */
        int lo = c->window_left >= 0 ? q.start + off - c->window_left : 0;
        if (lo < 0) lo = 0;
        int hi = q.start + q.valid + off; /* one past the diagonal of the last valid row */
        if (q.valid == 0 || hi < lo) hi = lo;
        if (hi > len_kv) {
            snprintf(
                why, cap,
                "cp all_gather rank %d chunk %d: sequence %d's diagonal passes its last key (len_q %d > len_kv %d, "
                "top-left): the trimmed K/V range has no bottom-right form",
                rank, part, b, len_q, len_kv);
            return AF_RUN_DECLINED;
        }
        r->kv[b][0] = (af_cp_seg){lo, hi - lo, hi - lo};
    }
    return AF_RUN_OK;
}

/* a2a (Ulysses): after the all-to-all rank r holds query heads [h0, h0 + hq) and K/V
 * heads [hk0, hk0 + hkv) of the whole sequence; its call is the global problem on those
 * heads. With the plant a2a_skipped the all-to-all never ran: the rank holds every head
 * of its own chunks r and 2cp-1-r and attends over them alone, as if they were the
 * sequence. */
static int add_a2a_run(const af_case *c, af_cp_plant plant, af_cp_plan *p, int rank, int h0, int hq, int hk0, int hkv) {
    af_cp_run *r = add_run(p);
    if (!r) return -1;
    r->rank = rank;
    r->step = 0;
    r->what = "step";
    r->h0 = h0;
    r->heads_q = hq;
    r->hk0 = hk0;
    r->heads_kv = hkv;
    r->ring_rank = -1;
    r->mask = c->mask;
    r->align = c->align;
    r->window_left = c->window_left;
    r->window_right = c->window_right;
    if (plant == AF_CP_PLANT_A2A_SKIPPED) {
        int n2 = 2 * c->cp_size;
        r->h0 = r->hk0 = 0;
        r->heads_q = c->heads_q;
        r->heads_kv = c->heads_kv;
        r->nseg_q = r->nseg_kv = 2;
        for (int b = 0; b < c->batch; b++) {
            r->q[b][0] = chunk(c, b, false, rank, n2);
            r->q[b][1] = chunk(c, b, false, n2 - 1 - rank, n2);
            r->kv[b][0] = chunk(c, b, true, rank, n2);
            r->kv[b][1] = chunk(c, b, true, n2 - 1 - rank, n2);
        }
        return 0;
    }
    r->nseg_q = r->nseg_kv = 1;
    for (int b = 0; b < c->batch; b++) {
        r->q[b][0] = whole(c, b, false);
        r->kv[b][0] = whole(c, b, true);
    }
    return 0;
}

/* a2a's heads: query heads split evenly across the n ranks; K/V heads too when heads_kv
 * divides by n, else (GQA / MQA, n a multiple of heads_kv) each K/V head is replicated
 * n / heads_kv times before the scatter, interleaved (0,0,1,1: torch repeat_interleave, as
 * Ulysses implementations replicate KV heads), so rank r holds one K/V head, r / (n /
 * heads_kv), the group of all its query heads. The plant kv_repeat_tiled replicates by
 * tiling (0,1,0,1: torch repeat) and rank r gets head r mod heads_kv. */
static af_run_status a2a_heads(const af_case *c, af_cp_plant plant, int rank, int *hk0, int *hkv, char *why,
                               size_t cap) {
    int n = c->cp_size, hk = c->heads_kv;
    if (c->heads_q % n == 0 && hk % n == 0) {
        *hk0 = rank * (hk / n);
        *hkv = hk / n;
        return AF_RUN_OK;
    }
    if (c->heads_q % n == 0 && n % hk == 0) {
        *hk0 = plant == AF_CP_PLANT_KV_REPEAT_TILED ? rank % hk : rank / (n / hk);
        *hkv = 1;
        return AF_RUN_OK;
    }
    snprintf(why, cap,
             "cp a2a: heads_q %d / heads_kv %d not divisible by %d (the all-to-all splits heads across %d ranks; K/V "
             "heads are replicated only when cp is a multiple of heads_kv)",
             c->heads_q, hk, n, n);
    return AF_RUN_DECLINED;
}

/* Declines shared by the comm types; AF_RUN_OK when none applies. */
static af_run_status common_checks(const af_case *c, int nchunks, char *why, size_t cap) {
    if (c->layout == AF_LAYOUT_THD && c->page_size > 0) {
        snprintf(why, cap,
                 "cp %s: thd with paged K/V is not served (the serving layout is a decode/prefill cache, not a "
                 "context-parallel training layout: TransformerEngine's CP takes no page table)",
                 comm_name(c));
        return AF_RUN_DECLINED;
    }
    if (af_case_heads_v(c) != c->heads_kv) {
        snprintf(why, cap,
                 "cp %s: heads_v = %d != heads_kv = %d is not served (the ranks' K/V exchange and head split carry one "
                 "K/V head count)",
                 comm_name(c), c->heads_v, c->heads_kv);
        return AF_RUN_DECLINED;
    }
    if (c->kv_dtype != AF_KV_SAME) {
        snprintf(why, cap,
                 "cp %s: kv_dtype = %s is not served (an fp8 KV cache is a serving layout; TransformerEngine's CP "
                 "exchanges K/V in the dtype)",
                 comm_name(c), af_kv_dtype_name(c->kv_dtype));
        return AF_RUN_DECLINED;
    }
    if (c->dtype != AF_DT_FP16 && c->dtype != AF_DT_BF16) {
        snprintf(why, cap, "cp %s: %s is not served (per-tensor fp8 scales of the ranks' calls differ from the global)",
                 comm_name(c), af_dtype_name(c->dtype));
        return AF_RUN_DECLINED;
    }
    bool non_causal = c->mask == AF_MASK_NONE && !(c->window_left == -1 && c->window_right == 0);
    if (non_causal && c->window_right != -1 && c->seqlen_q != c->seqlen_kv) {
        snprintf(why, cap,
                 "cp %s: a right-bounded window (%d,%d) on a non-causal mask with s_q %d != s_kv %d is not served "
                 "(as TransformerEngine's CP declines it)",
                 comm_name(c), c->window_left, c->window_right, c->seqlen_q, c->seqlen_kv);
        return AF_RUN_DECLINED;
    }
    if (c->layout == AF_LAYOUT_THD && nchunks > 0)
        for (int b = 0; b < c->batch; b++) {
            int lq = af_case_len_q(c, b), lk = af_case_len_kv(c, b);
            if (lq % nchunks || lk % nchunks) {
                snprintf(why, cap, "cp %s: thd sequence %d has lengths %d/%d, not divisible by 2*cp = %d", comm_name(c),
                         b, lq, lk, nchunks);
                return AF_RUN_DECLINED;
            }
        }
    return AF_RUN_OK;
}

/* p2p and a2a+p2p: TransformerEngine's sliding-window decline, and the diagonal of a
 * causal mask must lie in the diagonal chunks. */
static af_run_status ring_checks(const af_case *c, char *why, size_t cap) {
    if (sliding_window(c)) {
        snprintf(why, cap,
                 "cp %s: sliding window (%d,%d) is declined as TransformerEngine does (\"The context parallel running "
                 "configs cannot support sliding window attention\": only a2a and all_gather serve it)",
                 comm_name(c), c->window_left, c->window_right);
        return AF_RUN_DECLINED;
    }
    if (!effective_causal(c)) return AF_RUN_OK;
    if (c->seqlen_q != c->seqlen_kv) {
        snprintf(why, cap, "cp %s: causal with s_q %d != s_kv %d: the diagonal is not in the diagonal chunks",
                 comm_name(c), c->seqlen_q, c->seqlen_kv);
        return AF_RUN_DECLINED;
    }
    for (int b = 0; b < c->batch; b++) {
        bool same = af_case_len_q(c, b) == af_case_len_kv(c, b);
        if (!same && (c->align == AF_ALIGN_BOTTOM_RIGHT || c->layout == AF_LAYOUT_THD)) {
            snprintf(why, cap,
                     "cp %s: causal sequence %d has len_q %d != len_kv %d (%s): the diagonal is not in the diagonal "
                     "chunks",
                     comm_name(c), b, af_case_len_q(c, b), af_case_len_kv(c, b),
                     c->layout == AF_LAYOUT_THD ? "thd chunks by length" : "bottom-right");
            return AF_RUN_DECLINED;
        }
    }
    return AF_RUN_OK;
}

static af_run_status heads_check(const af_case *c, int ways, char *why, size_t cap) {
    if (c->heads_q % ways || c->heads_kv % ways) {
        snprintf(why, cap,
                 "cp %s: heads_q %d / heads_kv %d not divisible by %d (the all-to-all splits heads across %d ranks)",
                 comm_name(c), c->heads_q, c->heads_kv, ways, ways);
        return AF_RUN_DECLINED;
    }
    return AF_RUN_OK;
}

af_run_status af_cp_plan_make(const af_case *c, af_cp_plant plant, af_cp_plan *p, char *why, size_t cap) {
    memset(p, 0, sizeof *p);
    int n = c->cp_size;
    af_run_status st;
    if (n < 2 || c->cp_comm == AF_CP_NONE) {
        snprintf(why, cap, "cp %d %s: not a context-parallel case", n, comm_name(c));
        return AF_RUN_DECLINED;
    }
    if (c->layout_kv != AF_SIDE_SAME) { /* the ranks' K/V chunks are planned in the case's own layout */
        snprintf(why, cap,
                 "cp %d %s: layout_kv = %s (K/V in their own layout) is not planned over context-parallel ranks", n,
                 comm_name(c), af_layout_name(af_case_layout_kv(c)));
        return AF_RUN_DECLINED;
    }
    if (c->score_mod != AF_SCORE_MOD_NONE) { /* validate refuses it with cp; a built case is told so too */
        snprintf(why, cap, "cp %d %s: score_mod = %s is not planned over context-parallel ranks", n, comm_name(c),
                 af_score_mod_name(c->score_mod));
        return AF_RUN_DECLINED;
    }
    if (c->attention_chunk > 0) { /* the ranks' sub-cases would cut the chunks at their own offsets */
        snprintf(why, cap, "cp %d %s: attention_chunk is not planned over context-parallel ranks", n, comm_name(c));
        return AF_RUN_DECLINED;
    }
    if (c->n_documents > 0 || c->global_keys > 0) { /* key positions are global; the ranks' are not */
        snprintf(why, cap, "cp %d %s: %s is not planned over context-parallel ranks", n, comm_name(c),
                 c->n_documents > 0 ? "documents" : "global_keys");
        return AF_RUN_DECLINED;
    }
    if (c->block_mask_q > 0 || c->custom_mask_p != 0.0) { /* the drops hash global positions */
        snprintf(why, cap, "cp %d %s: %s is not planned over context-parallel ranks", n, comm_name(c),
                 c->block_mask_q > 0 ? "block_mask" : "custom_mask");
        return AF_RUN_DECLINED;
    }
    switch (c->cp_comm) {
        case AF_CP_P2P:
            if ((st = common_checks(c, 2 * n, why, cap)) || (st = ring_checks(c, why, cap))) return st;
            for (int r = 0; r < n; r++)
                if (add_p2p_runs(c, plant, p, r, r, n, 0, c->heads_q)) goto oom;
            return AF_RUN_OK;
        case AF_CP_ALL_GATHER:
            if ((st = common_checks(c, 2 * n, why, cap))) return st;
            for (int r = 0; r < n; r++)
                for (int part = 0; part < 2; part++) {
                    st = add_all_gather_run(c, plant, p, r, part, part == 0 ? r : 2 * n - 1 - r, why, cap);
                    if (st) {
                        af_cp_plan_free(p);
                        return st;
                    }
                }
            return AF_RUN_OK;
        case AF_CP_A2A:
            /* a2a_skipped chunks the sequence like p2p (its thd lengths must divide by 2 cp) */
            if ((st = common_checks(c, plant == AF_CP_PLANT_A2A_SKIPPED ? 2 * n : 0, why, cap))) return st;
            for (int r = 0; r < n; r++) {
                int hk0, hkv;
                if ((st = a2a_heads(c, plant, r, &hk0, &hkv, why, cap))) {
                    af_cp_plan_free(p);
                    return st;
                }
                if (add_a2a_run(c, plant, p, r, r * (c->heads_q / n), c->heads_q / n, hk0, hkv)) goto oom;
            }
            return AF_RUN_OK;
        case AF_CP_A2A_P2P: {
            /* a2a among consecutive ranks (groups of g), p2p among the n/g groups: after
             * the all-to-all, group k holds chunks [k g, (k+1) g) and their mirrors, the
             * super-chunks k and 2(n/g)-1-k of a load-balanced ring of n/g. */
            int g = n % 2 == 0 ? 2 : 1, ring = n / g;
            p->a2a_group = g;
            if ((st = common_checks(c, 2 * n, why, cap)) || (st = ring_checks(c, why, cap)) ||
                (st = heads_check(c, g, why, cap)))
                return st;
            for (int r = 0; r < n; r++) {
                int k = r / g, a = r % g;
                if (add_p2p_runs(c, plant, p, r, k, ring, a * (c->heads_q / g), c->heads_q / g)) goto oom;
            }
            return AF_RUN_OK;
        }
        default:
            snprintf(why, cap, "cp: unknown comm type %d", (int)c->cp_comm);
            return AF_RUN_DECLINED;
    }
oom:
    af_cp_plan_free(p);
    snprintf(why, cap, "cp: out of host memory planning %d ranks", n);
    return AF_RUN_RESOURCE;
}

int af_cp_local_to_global(const af_cp_seg *seg, int nseg, int l) {
    for (int k = 0; k < nseg; k++) {
        if (l < seg[k].size) return l < seg[k].valid ? seg[k].start + l : -1;
        l -= seg[k].size;
    }
    return -1;
}

/* Local lengths of one side of sequence b: size (positions) and valid (a prefix), or -1
 * when the valid tokens are not a prefix of the local sequence. */
static int local_lengths(const af_cp_seg *seg, int nseg, int *size, int *valid) {
    *size = 0;
    *valid = 0;
    bool gap = false;
    for (int k = 0; k < nseg; k++) {
        if (gap && seg[k].valid > 0) return -1;
        if (seg[k].valid < seg[k].size) gap = true;
        *size += seg[k].size;
        *valid += seg[k].valid;
    }
    return 0;
}

int af_cp_bias_position(const af_cp_run *run, int batch, int bb, int b, bool kv, int l) {
    int first = bb > 1 ? b : 0, last = bb > 1 ? b + 1 : batch;
    for (int s = first; s < last; s++) {
        int g =
            kv ? af_cp_local_to_global(run->kv[s], run->nseg_kv, l) : af_cp_local_to_global(run->q[s], run->nseg_q, l);
        if (g >= 0) return g;
    }
    return -1;
}

/* Can a bias broadcast over the batch serve every sequence of the run: at each local
 * position (rows unless the bias broadcasts the query, and keys) the sequences where it
 * is valid agree on its global position? Not for thd chunks (sizes by length) or
 * all_gather's trimmed key ranges of sequences with other lengths. */
static bool bias_batch_agrees(const af_case *c, const af_cp_run *run, const int *size_q, const int *size_kv) {
    for (int side = af_bias_broadcasts_query(c->bias) ? 1 : 0; side < 2; side++) {
        bool kv = side == 1;
        for (int b = 1; b < c->batch; b++)
            for (int l = 0; l < (kv ? size_kv[b] : size_q[b]); l++) {
                int g = kv ? af_cp_local_to_global(run->kv[b], run->nseg_kv, l)
                           : af_cp_local_to_global(run->q[b], run->nseg_q, l);
                int ref = af_cp_bias_position(run, b, 1, 0, kv, l); /* the first earlier sequence valid there */
                if (g >= 0 && ref >= 0 && g != ref) return false;
            }
    }
    return true;
}

/* The bias shape with the batch extent added (11ss -> b1ss, 1hss -> bhss, 111s -> b11s,
 * 1h1s -> bh1s). */
static af_bias_shape bias_with_batch(af_bias_shape s) {
    switch (s) {
        case AF_BIAS_11SS:
            return AF_BIAS_B1SS;
        case AF_BIAS_1HSS:
            return AF_BIAS_BHSS;
        case AF_BIAS_111S:
            return AF_BIAS_B11S;
        case AF_BIAS_1H1S:
            return AF_BIAS_BH1S;
        default:
            return s;
    }
}

int af_cp_sub_case(const af_case *c, const af_cp_run *run, bool backward, af_case *sub, char *why, size_t cap) {
    *sub = *c;
    sub->cp_size = 1;
    sub->cp_comm = AF_CP_NONE;
    sub->softmax = AF_SOFTMAX_VANILLA; /* the sink joins the merged denominator once (cp_exec.c), not each call's */
    sub->packing = AF_PACK_SEPARATE;   /* the ranks read the case's tensors through its plan (kv_h, layout_do too) */
    sub->layout_kv = sub->layout_do = AF_SIDE_SAME;
    sub->stride_gap = 0;
    sub->gap_h = sub->gap_s = sub->gap_b = 0;
    sub->thd_gap = 0;
    sub->page_size = 0;
    sub->page_tail_nan = false;
    sub->page_hnd = sub->page_kv_joint = false; /* the ranks' chunks are not paged */
    sub->has_scale = true;
    sub->scale = af_case_scale(c);
    sub->backward = backward;
    sub->heads_q = run->heads_q;
    sub->heads_kv = run->heads_kv;
    sub->mask = run->mask;
    sub->align = run->align;
    sub->window_left = run->window_left;
    sub->window_right = run->window_right;
    sub->backend[0] = '\0';
    sub->engine[0] = '\0';
    int max_q = 0, max_kv = 0, any_q = 0, any_kv = 0;
    int size_q[AF_MAX_BATCH], size_kv[AF_MAX_BATCH];
    for (int b = 0; b < c->batch; b++) {
        if (local_lengths(run->q[b], run->nseg_q, &size_q[b], &sub->seqlens_q[b]) ||
            local_lengths(run->kv[b], run->nseg_kv, &size_kv[b], &sub->seqlens_kv[b])) {
            snprintf(why, cap, "sequence %d: the valid tokens are not a prefix of the rank's local sequence", b);
            return -1;
        }
        if (size_q[b] > max_q) max_q = size_q[b];
        if (size_kv[b] > max_kv) max_kv = size_kv[b];
        any_q += sub->seqlens_q[b];
        any_kv += sub->seqlens_kv[b];
    }
    if (any_q == 0 || any_kv == 0) return 1;
    sub->seqlen_q = max_q;
    sub->seqlen_kv = max_kv;
    /* the call's bias is the global one's slice (cp_exec.c): where the sequences' local
     * positions map to different global ones, a batch-broadcast bias takes the batch extent */
    if (c->bias != AF_BIAS_NONE && !bias_batch_agrees(c, run, size_q, size_kv)) sub->bias = bias_with_batch(c->bias);
    sub->has_seqlens = c->layout == AF_LAYOUT_THD;
    for (int b = 0; b < c->batch; b++)
        if (sub->seqlens_q[b] != max_q || sub->seqlens_kv[b] != max_kv) sub->has_seqlens = true;
    af_error err;
    if (af_case_validate(sub, &err)) {
        char msg[600];
        af_error_format(&err, msg, sizeof msg);
        snprintf(why, cap, "the sub-case is invalid: %s", msg);
        return -1;
    }
    return 0;
}
