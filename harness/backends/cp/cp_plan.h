/* backends/cp/cp_plan.h — a CP case as a list of inner runs (internal to backends/cp).
 *
 * Chunks: each sequence is split into 2*n chunks (n = cp, or the p2p ring of a2a+p2p);
 * rank r holds chunks r and 2n-1-r. Padded layouts split the padded length (chunk k =
 * positions [k C, (k+1) C), C = seqlen / 2n) and keep the valid tokens as a prefix of
 * each run; thd splits each sequence by its own length (len_b / 2n, all valid).
 *
 * One run = one kernel call of one virtual rank: for every sequence b, its query rows
 * are up to two segments of global positions concatenated in that order (the rank's
 * local sequence), its keys likewise, and the mask of that call is expressed in the
 * case model's own fields (mask, align, window, per-sequence lengths).
 */
#ifndef ATTNFUZZ_CP_PLAN_H
#define ATTNFUZZ_CP_PLAN_H

#include "backends/cp/cp.h"

typedef struct {
    int start; /* first global position */
    int size;  /* positions the segment occupies in the local sequence */
    int valid; /* of them, valid tokens (a prefix of the segment) */
} af_cp_seg;

typedef struct {
    int rank, step;    /* virtual rank; ring step (p2p), chunk index (all_gather), 0 (a2a) */
    const char *what;  /* "step" or "chunk": how messages name the step */
    int h0, heads_q;   /* query heads [h0, h0 + heads_q) */
    int hk0, heads_kv; /* K/V heads [hk0, hk0 + heads_kv): the GQA group's, or (a2a with
                            heads_kv < cp) the one head replicated to the rank */
    int ring_rank;     /* ring position that owns the step's K/V (-1: a2a, nothing to reduce;
                            -2: all_gather, the owner is the rank of each key's chunk) */
    int self_ring;     /* the running rank's ring position (p2p: rank; a2a+p2p: rank / group) */
    int ring_chunks;   /* 2n of that chunking */
    af_mask_kind mask; /* the call's mask in the case model's fields */
    af_align align;
    int window_left, window_right;
    int nseg_q, nseg_kv; /* 1 or 2, the same for every sequence */
    af_cp_seg q[AF_MAX_BATCH][2], kv[AF_MAX_BATCH][2];
} af_cp_run;

typedef struct {
    af_cp_run *runs;
    int count, cap;
    int a2a_group; /* a2a+p2p: ranks per a2a group (consecutive ranks) */
} af_cp_plan;

/* The runs of case c (cp_size > 1), or AF_RUN_DECLINED with the reason (TransformerEngine's
 * where it declines the same). AF_RUN_RESOURCE when out of memory. */
af_run_status af_cp_plan_make(const af_case *c, af_cp_plant plant, af_cp_plan *p, char *why, size_t cap);
void af_cp_plan_free(af_cp_plan *p);

/* The sub-case one run's kernel call sees (cp 1, separate packing, no gaps or pages,
 * explicit scale; a bias of the case's shape, with the batch extent added where the
 * sequences' local positions map to different global ones). Returns 1 when the run has no work (no query row or no key in any
 * sequence), 0 when sub is ready, -1 with why when the sub-case is invalid. */
int af_cp_sub_case(const af_case *c, const af_cp_run *run, bool backward, af_case *sub, char *why, size_t cap);

/* Global position of local row l of sequence b in segments seg[0..nseg), or -1 when l is
 * past the valid rows. */
int af_cp_local_to_global(const af_cp_seg *seg, int nseg, int l);

/* The global position the run's given bias takes at local position l (kv: a key, else a
 * query row) for bias sequence b of a sub-case bias of batch extent bb: sequence b's
 * own when bb > 1; when bb == 1 (af_cp_sub_case keeps it only where the batch's
 * sequences agree) the first of the batch's `batch` sequences where l is valid. -1 when
 * l is valid in none (a masked position: any finite value serves). */
int af_cp_bias_position(const af_cp_run *run, int batch, int bb, int b, bool kv, int l);

#endif
