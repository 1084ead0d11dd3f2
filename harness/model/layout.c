/* layout.c — the layout plan: buffers, strides, ragged token starts, page tables.
 *
 * Per token, a buffer holds the blocks of the tensors packed into it, one after the
 * other (packing kv, qkv: TransformerEngine's bs2hd / bs3hd); a block is H vectors of
 * (D + stride_gap) elements, the last stride_gap of each vector unused (a gap the harness
 * keeps poisoned in outputs, as every element no view owns: gap_h / gap_s / gap_b too).
 * Packed per head (kv_h, qkv_h: TE's bsh2d / bsh3d, th3d), each head holds the n tensors'
 * vectors one after the other: tensor i of the group starts at i (D + gap) and stride_h =
 * n (D + gap); the token's row is the same size.
 * Per head has no meaning in bhsd (the head is outside the token: bh2sd and bhs2d are
 * both "per head", and no peer names either), so validate declines it.
 * K, V, dK, dV are laid out in af_case_layout_kv, dO in af_case_layout_do (layout_kv,
 * layout_do; the rest in layout): e.g. thd Q with bshd K/V, ragged Q over padded keys.
 * gap_h, gap_s, gap_b add that many elements to every head, token and batch stride (an
 * unused tail after each head block, token block and batch block, whatever the order;
 * cuDNN's stride tensors carry any such strides). With vec = D + gap,
 * h_blk = vec + gap_h (per head: n vec + gap_h) and row = sum_t H_t h_blk:
 *   bshd: offset = base + b * (S (row + gap_s) + gap_b) + s * (row + gap_s) + h * h_blk + d
 *   sbhd: offset = base + s * (B (row + gap_b) + gap_s) + b * (row + gap_b) + h * h_blk + d
 *   bhsd: offset = base_t + b * (sum_t H_t hs_t + gap_b) + h * hs + s * (vec + gap_s) + d,
 *         hs = S (vec + gap_s) + gap_h
 *   shbd, hbsd, hsbd (separate packing only): any order of b, s, h outside d, each
 *         axis's stride the block inside it plus its gap (lay_axes)
 *   thd : offset = base + (token_start[b] + s) * (row + gap_s) + h * h_blk + d, with thd_gap
 *         unused tokens after every sequence (no batch stride: gap_b has none to pad)
 *   paged K/V: base + page * page_stride + (s % P) * stride_s + h * stride_h + d, whatever
 *         the layout (with thd, Q, O and LSE are ragged and K, V paged): page_layout nhd
 *         (bshd inside a page) stride_h = vec + gap_h, stride_s = H stride_h + gap_s, page
 *         block P stride_s + gap_b; hnd stride_s = vec + gap_s, stride_h = P stride_s +
 *         gap_h, page block H stride_h + gap_b; page_kv joint puts V's block after K's in
 *         each page of BUF_K (lay_pages)
 * LSE is fp32: (b, h, s) dense, or (token, h) for thd.
 */
#include "model/layout.h"

#include <stdio.h>
#include <string.h>

#include "util/rng.h"

static const char *const tensor_names[AF_T_COUNT] = {"Q", "K", "V", "O", "LSE", "dO", "dQ", "dK", "dV"};
static const char *const buffer_names[AF_BUF_COUNT] = {"Q", "K", "V", "O", "LSE", "dO", "dQ", "dK", "dV"};

static const char *const unlaid_names[AF_T_END - AF_T_DSINK] = {
    "dsink", "page_table", "seq_offsets", "seqlens", "sink",    "bias",     "alibi_slopes",
    "dlse",  "mx_scale",   "descale",     "max",     "sum_exp", "max_logit"};

const char *af_tensor_name(af_tensor_id t) {
    if (t >= AF_T_DSINK && t < AF_T_END) return unlaid_names[t - AF_T_DSINK];
    return t >= 0 && t < AF_T_COUNT ? tensor_names[t] : "-";
}
const char *af_buffer_name(af_buffer_id b) { return buffer_names[b]; }

/* the one table of storage facts (layout.h), in af_storage's order */
static const af_storage_facts storage_facts[] = {
    [AF_ST_F16] = {2, 0x1p-10, 65504.0, 0x1p-14, 0x1p-25, 0x7C00u},                     /* 10 mantissa bits */
    [AF_ST_BF16] = {2, 0x1p-7, 3.3895313892515355e38, 0x1p-126, 0x1p-134, 0x7F80u},     /* 7 */
    [AF_ST_E4M3] = {1, 0x1p-3, 448.0, 0x1p-6, 0x1p-10, 0x7Fu},                          /* 3; S.1111.111 */
    [AF_ST_F32] = {4, 0x1p-23, 3.4028234663852886e38, 0x1p-126, 0x1p-150, 0x7F800000u}, /* 23 */
    [AF_ST_E5M2] = {1, 0x1p-2, 57344.0, 0x1p-14, 0x1p-17, 0x7Cu},                       /* 2 */
};

const af_storage_facts *af_storage_facts_of(af_storage s) {
    return (unsigned)s < sizeof storage_facts / sizeof storage_facts[0] ? &storage_facts[s] : &storage_facts[AF_ST_F32];
}

int af_storage_bytes(af_storage s) { return af_storage_facts_of(s)->bytes; }

af_storage af_tensor_storage(af_dtype dtype, af_tensor_id t) {
    if (t == AF_T_LSE) return AF_ST_F32;
    if (t == AF_T_Q || t == AF_T_K || t == AF_T_V)
        return dtype == AF_DT_FP16       ? AF_ST_F16
               : dtype == AF_DT_BF16     ? AF_ST_BF16
               : dtype == AF_DT_FP8_E5M2 ? AF_ST_E5M2
                                         : AF_ST_E4M3;
    /* fp8_e4m3 / fp8_e5m2: O, dO and the gradients are fp8 of the same kind with
     * per-tensor scales (tensors.h; cuDNN's SM90 FP8 backward takes an FP8 dO and writes
     * FP8 gradients). mxfp8 keeps them in bf16 (cuDNN's MXFP8 is Blackwell-only). */
    if (dtype == AF_DT_FP8_E4M3) return AF_ST_E4M3;
    if (dtype == AF_DT_FP8_E5M2) return AF_ST_E5M2;
    return dtype == AF_DT_FP16 ? AF_ST_F16 : AF_ST_BF16;
}

af_storage af_case_tensor_storage(const af_case *c, af_tensor_id t) {
    if ((t == AF_T_K || t == AF_T_V) && c->kv_dtype == AF_KV_FP8_E4M3) return AF_ST_E4M3;
    if ((t == AF_T_K || t == AF_T_V) && c->kv_dtype == AF_KV_FP8_E5M2) return AF_ST_E5M2;
    if (t == AF_T_O && c->out_dtype == AF_OUT_FP16) return AF_ST_F16;
    if (t == AF_T_O && c->out_dtype == AF_OUT_BF16) return AF_ST_BF16;
    return af_tensor_storage(c->dtype, t);
}

/* One group of tensors that share a buffer, laid out together. */
typedef struct {
    af_tensor_id ids[3];
    int n;
    af_buffer_id buffer;
    af_storage storage;
} group;

/* The layout the tensors of group g are laid out in (layout_kv, layout_do, or layout). */
static af_layout group_layout(const af_case *c, const group *g) {
    if (af_tensor_is_kv(g->ids[g->n - 1])) return af_case_layout_kv(c); /* qkv: validate keeps layout_kv same */
    if (g->ids[0] == AF_T_DO) return af_case_layout_do(c);
    return c->layout;
}

/* K and V of a paged case (validate: packing separate), whatever the layout: with thd,
 * Q, O and LSE stay ragged. A page block is one tensor's page, H heads x P slots of
 * (D + gap), each axis's stride the block inside it plus its gap (gap_h, gap_s; gap_b
 * after the page): nhd [P, H, D + gap], hnd [H, P, D + gap]. page_kv = split: K's blocks in
 * BUF_K, V's in BUF_V, each page stride one block; joint: both in BUF_K, page p holding
 * K's block then V's, so the page stride is the two blocks and V's base one K block. */
static void lay_pages(af_layout_plan *p, const af_case *c) {
    af_tensor_id ids[2] = {AF_T_K, AF_T_V};
    int64_t block[2];
    for (int i = 0; i < 2; i++) {
        af_tensor_view *v = &p->view[ids[i]];
        int64_t vec = v->D + c->stride_gap;
        v->paged = true;
        v->ragged = false;
        v->base = 0;
        if (c->page_hnd) { /* [H, P, vec] */
            v->stride_s = vec + c->gap_s;
            v->stride_h = (int64_t)c->page_size * v->stride_s + c->gap_h;
            block[i] = (int64_t)v->H * v->stride_h + c->gap_b;
        } else { /* [P, H, vec] */
            v->stride_h = vec + c->gap_h;
            v->stride_s = (int64_t)v->H * v->stride_h + c->gap_s;
            block[i] = (int64_t)c->page_size * v->stride_s + c->gap_b;
        }
        v->stride_b = block[i]; /* page stride */
        p->buffer_elems[v->buffer] = (int64_t)p->n_pages * block[i];
    }
    if (c->page_kv_joint) {
        af_tensor_view *k = &p->view[AF_T_K], *v = &p->view[AF_T_V];
        k->stride_b = v->stride_b = block[0] + block[1];
        v->buffer = AF_BUF_K;
        v->base = block[0];
        p->buffer_elems[AF_BUF_K] = (int64_t)p->n_pages * (block[0] + block[1]);
        p->buffer_elems[AF_BUF_V] = 0;
    }
}

/* A tensor alone in its buffer in any order of (b, s, h) (the layout's name, outermost
 * first, d last): from the head vector (vec = D + stride_gap) out, each axis's stride is
 * the block inside it plus the axis's gap, the next block its extent times that stride.
 * Returns the buffer's elements (the outermost block). */
static int64_t lay_axes(af_tensor_view *v, const char *order, int64_t vec, const af_case *c) {
    int64_t block = vec;
    for (int k = 2; k >= 0; k--) {
        int64_t *stride = order[k] == 'b' ? &v->stride_b : order[k] == 'h' ? &v->stride_h : &v->stride_s;
        int extent = order[k] == 'b' ? v->B : order[k] == 'h' ? v->H : v->S;
        int gap = order[k] == 'b' ? c->gap_b : order[k] == 'h' ? c->gap_h : c->gap_s;
        *stride = block + gap;
        block = extent * *stride;
    }
    v->base = 0;
    return block;
}

static void lay_group(af_layout_plan *p, const af_case *c, const group *g) {
    int gap = c->stride_gap;
    bool kv = af_tensor_is_kv(g->ids[0]);
    af_layout layout = group_layout(c, g);
    bool per_head = g->n > 1 && af_packing_per_head(c->packing);
    int S = kv ? c->seqlen_kv : c->seqlen_q;
    int B = c->batch;
    /* The head block: one vector (D + gap), or per head the n tensors' vectors; gap_h more.
     * bhsd's head block is S token vectors, each gap_s longer (never per head: validate). */
    int64_t head_vec = per_head ? (int64_t)g->n * (p->view[g->ids[0]].D + gap) : 0;
    int64_t row = 0;        /* bshd / sbhd / thd: a token's elements over the group's tensors */
    int64_t per_b_bhsd = 0; /* bhsd: a batch's elements over the group's tensors */
    for (int i = 0; i < g->n; i++) {
        const af_tensor_view *v = &p->view[g->ids[i]];
        int64_t vec = v->D + gap;
        if (!per_head) row += (int64_t)v->H * (vec + c->gap_h);
        per_b_bhsd += (int64_t)v->H * ((int64_t)S * (vec + c->gap_s) + c->gap_h);
    }
    if (per_head) row = (int64_t)p->view[g->ids[0]].H * (head_vec + c->gap_h);
    int64_t token = row + c->gap_s; /* bshd / sbhd / thd: the token stride's unit */
    int64_t off = 0, total = 0;
    for (int i = 0; i < g->n; i++) {
        af_tensor_view *v = &p->view[g->ids[i]];
        int64_t vec = v->D + gap;
        v->buffer = g->buffer;
        v->storage = g->storage;
        v->stride_h = (per_head ? head_vec : vec) + c->gap_h;
        if (per_head) off = i * vec; /* tensor i's vector inside each head */
        switch (layout) {
            case AF_LAYOUT_BSHD:
                v->base = off;
                v->stride_s = token;
                v->stride_b = (int64_t)S * token + c->gap_b;
                total = (int64_t)B * v->stride_b;
                break;
            case AF_LAYOUT_SBHD:
                v->base = off;
                v->stride_b = row + c->gap_b; /* the batch inside the token: gap_s after all B */
                v->stride_s = (int64_t)B * v->stride_b + c->gap_s;
                total = (int64_t)S * v->stride_s;
                break;
            case AF_LAYOUT_BHSD: /* never per head (validate) */
                v->base = off;
                v->stride_s = vec + c->gap_s;
                v->stride_h = (int64_t)S * v->stride_s + c->gap_h;
                v->stride_b = per_b_bhsd + c->gap_b;
                total = (int64_t)B * v->stride_b;
                break;
            case AF_LAYOUT_SHBD:
            case AF_LAYOUT_HBSD:
            case AF_LAYOUT_HSBD: /* separate packing only (validate): one tensor, any order */
                total = lay_axes(v, af_layout_name(layout), vec, c);
                break;
            case AF_LAYOUT_THD: /* no batch stride: thd_gap pads between sequences */
                v->base = off;
                v->stride_s = token;
                v->stride_b = 0;
                v->ragged = true;
                total = (kv ? p->total_tokens_kv : p->total_tokens_q) * token;
                break;
        }
        if (!per_head) off += (int64_t)v->H * v->stride_h; /* the next tensor's heads follow */
    }
    p->buffer_elems[g->buffer] = total;
    p->buffer_storage[g->buffer] = g->storage;
}

int af_layout_plan_make(const af_case *c, af_layout_plan *p, char *why, size_t cap) {
    memset(p, 0, sizeof *p);
    af_storage in_st = af_tensor_storage(c->dtype, AF_T_Q); /* Q */
    af_storage kv_st = af_case_tensor_storage(c, AF_T_K);   /* K, V: fp8 with kv_dtype */
    af_storage o_st = af_case_tensor_storage(c, AF_T_O);
    af_storage grad_st = af_tensor_storage(c->dtype, AF_T_DQ); /* dO, dQ, dK, dV */
    const int B = c->batch;
    struct {
        af_tensor_id t;
        int H, S, D;
    } shapes[AF_T_COUNT] = {{AF_T_Q, c->heads_q, c->seqlen_q, c->head_dim_qk},
                            {AF_T_K, c->heads_kv, c->seqlen_kv, c->head_dim_qk},
                            {AF_T_V, af_case_heads_v(c), c->seqlen_kv, c->head_dim_v},
                            {AF_T_O, c->heads_q, c->seqlen_q, c->head_dim_v},
                            {AF_T_LSE, c->heads_q, c->seqlen_q, 1},
                            {AF_T_DO, c->heads_q, c->seqlen_q, c->head_dim_v},
                            {AF_T_DQ, c->heads_q, c->seqlen_q, c->head_dim_qk},
                            {AF_T_DK, c->heads_kv, c->seqlen_kv, c->head_dim_qk},
                            {AF_T_DV, af_case_heads_v(c), c->seqlen_kv, c->head_dim_v}};
    for (int t = 0; t < AF_T_COUNT; t++) {
        p->view[t].B = B;
        p->view[t].H = shapes[t].H;
        p->view[t].S = shapes[t].S;
        p->view[t].D = shapes[t].D;
    }
    /* thd: token starts with thd_gap unused tokens after every sequence */
    if (c->layout == AF_LAYOUT_THD) {
        int64_t tq = 0, tk = 0;
        for (int b = 0; b < B; b++) {
            p->token_start_q[b] = tq;
            tq += af_case_len_q(c, b) + c->thd_gap;
            /* paged or padded (layout_kv) K/V: no packed key tokens (layout.h) */
            if (c->page_size || af_case_layout_kv(c) != AF_LAYOUT_THD) continue;
            p->token_start_kv[b] = tk;
            tk += af_case_len_kv(c, b) + c->thd_gap;
        }
        p->token_start_q[B] = tq;
        p->token_start_kv[B] = tk;
        p->total_tokens_q = tq;
        p->total_tokens_kv = tk;
    }
    if (c->page_size) {
        p->page_size = c->page_size;
        p->pages_per_seq = (c->seqlen_kv + c->page_size - 1) / c->page_size;
        p->n_pages = B * p->pages_per_seq;
        if ((int64_t)B * p->pages_per_seq > AF_MAX_PAGES) {
            snprintf(why, cap, "paged KV: %d pages exceed the page table", p->n_pages);
            return -1;
        }
        /* Fisher-Yates with a counter-based draw per step: a permutation from the seed */
        for (int i = 0; i < p->n_pages; i++) p->page_table[i] = i;
        for (int i = p->n_pages - 1; i > 0; i--) {
            int j = (int)(af_rng_splitmix64(c->seed ^ 0x5041474553ull ^ ((uint64_t)i << 32)) % (uint64_t)(i + 1));
            int32_t tmp = p->page_table[i];
            p->page_table[i] = p->page_table[j];
            p->page_table[j] = tmp;
        }
    }
    group groups[8];
    int ng = 0;
    switch (c->packing) {
        case AF_PACK_SEPARATE:
            groups[ng++] = (group){{AF_T_Q}, 1, AF_BUF_Q, in_st};
            groups[ng++] = (group){{AF_T_K}, 1, AF_BUF_K, kv_st};
            groups[ng++] = (group){{AF_T_V}, 1, AF_BUF_V, kv_st};
            groups[ng++] = (group){{AF_T_DQ}, 1, AF_BUF_DQ, grad_st};
            groups[ng++] = (group){{AF_T_DK}, 1, AF_BUF_DK, grad_st};
            groups[ng++] = (group){{AF_T_DV}, 1, AF_BUF_DV, grad_st};
            break;
        case AF_PACK_KV:
        case AF_PACK_KV_H:
            groups[ng++] = (group){{AF_T_Q}, 1, AF_BUF_Q, in_st};
            groups[ng++] = (group){{AF_T_K, AF_T_V}, 2, AF_BUF_K, kv_st};
            groups[ng++] = (group){{AF_T_DQ}, 1, AF_BUF_DQ, grad_st};
            groups[ng++] = (group){{AF_T_DK, AF_T_DV}, 2, AF_BUF_DK, grad_st};
            break;
        case AF_PACK_QKV:
        case AF_PACK_QKV_H:
            groups[ng++] = (group){{AF_T_Q, AF_T_K, AF_T_V}, 3, AF_BUF_Q, in_st}; /* validate: kv_dtype same */
            groups[ng++] = (group){{AF_T_DQ, AF_T_DK, AF_T_DV}, 3, AF_BUF_DQ, grad_st};
            break;
    }
    groups[ng++] = (group){{AF_T_O}, 1, AF_BUF_O, o_st};
    groups[ng++] = (group){{AF_T_DO}, 1, AF_BUF_DO, grad_st};
    for (int i = 0; i < ng; i++) lay_group(p, c, &groups[i]);
    if (c->page_size) lay_pages(p, c);
    if (!c->backward) {
        p->buffer_elems[AF_BUF_DO] = p->buffer_elems[AF_BUF_DQ] = 0;
        p->buffer_elems[AF_BUF_DK] = p->buffer_elems[AF_BUF_DV] = 0;
    }
    /* LSE: fp32, (b, h, s) dense, or (token, h) for thd */
    af_tensor_view *l = &p->view[AF_T_LSE];
    l->buffer = AF_BUF_LSE;
    l->storage = AF_ST_F32;
    if (c->layout == AF_LAYOUT_THD) {
        l->ragged = true;
        l->stride_s = c->heads_q;
        l->stride_h = 1;
        p->buffer_elems[AF_BUF_LSE] = p->total_tokens_q * c->heads_q;
    } else {
        l->stride_b = (int64_t)c->heads_q * c->seqlen_q;
        l->stride_h = c->seqlen_q;
        l->stride_s = 1;
        p->buffer_elems[AF_BUF_LSE] = (int64_t)B * c->heads_q * c->seqlen_q;
    }
    p->buffer_storage[AF_BUF_LSE] = AF_ST_F32;
    return 0;
}

int64_t af_layout_offset(const af_layout_plan *p, af_tensor_id t, int b, int h, int s, int d) {
    const af_tensor_view *v = &p->view[t];
    if (v->paged) {
        int page = p->page_table[b * p->pages_per_seq + s / p->page_size];
        return v->base + (int64_t)page * v->stride_b + (int64_t)(s % p->page_size) * v->stride_s +
               (int64_t)h * v->stride_h + d;
    }
    if (v->ragged) {
        int64_t tok = (af_tensor_is_kv(t) ? p->token_start_kv[b] : p->token_start_q[b]) + s;
        return v->base + tok * v->stride_s + (int64_t)h * v->stride_h + d;
    }
    return v->base + (int64_t)b * v->stride_b + (int64_t)s * v->stride_s + (int64_t)h * v->stride_h + d;
}

int af_layout_metadata_check(const af_case *c, const af_layout_plan *p, char *why, size_t cap) {
    for (int b = 0; b < c->batch; b++) {
        int lq = af_case_len_q(c, b), lk = af_case_len_kv(c, b);
        if (lq < 0 || lq > c->seqlen_q || lk < 0 || lk > c->seqlen_kv) {
            snprintf(why, cap, "sequence %d's lengths %d / %d outside the maxima %d / %d", b, lq, lk, c->seqlen_q,
                     c->seqlen_kv);
            return -1;
        }
        if (c->layout == AF_LAYOUT_THD)
            for (int side = 0; side < (p->view[AF_T_K].ragged ? 2 : 1); side++) { /* paged, padded keys: no starts */
                const int64_t *ts = side ? p->token_start_kv : p->token_start_q;
                int64_t total = side ? p->total_tokens_kv : p->total_tokens_q;
                if (ts[b] < 0 || ts[b] + (side ? lk : lq) > ts[b + 1] || ts[c->batch] > total) {
                    snprintf(why, cap, "malformed thd %s offsets at sequence %d", side ? "key" : "query", b);
                    return -1;
                }
            }
        if (p->page_size > 0) {
            if (lk > p->pages_per_seq * p->page_size) {
                snprintf(why, cap, "key length %d of sequence %d exceeds its pages", lk, b);
                return -1;
            }
            for (int e = 0; e < (lk + p->page_size - 1) / p->page_size; e++) {
                int32_t page = p->page_table[b * p->pages_per_seq + e];
                if (page < 0 || page >= p->n_pages) {
                    snprintf(why, cap, "page_table[%d][%d] = %d of %d pages", b, e, page, p->n_pages);
                    return -1;
                }
            }
        }
    }
    return 0;
}
