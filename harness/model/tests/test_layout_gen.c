/* test_layout_gen.c — layout plans map every logical element to its own place, and
 * generated inputs are the same bits whatever the layout. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/gen.h"
#include "model/layout.h"
#include "util/check.h"

static void load(const char *text, af_case *c) {
    af_error e;
    CHECK_MSG(af_case_parse(text, "t", c, &e) == 0, "%s: %s", e.field, e.message);
}

/* Every valid logical element of every tensor lands inside its buffer, and no two
 * land on the same element; a row's elements are contiguous (offset(d) = offset(0) + d,
 * which the judge's row-wise passes rely on). */
static void check_plan(const af_case *c) {
    af_layout_plan *p = malloc(sizeof *p);
    char why[256];
    CHECK(af_layout_plan_make(c, p, why, sizeof why) == 0);
    unsigned char *used[AF_BUF_COUNT] = {0};
    for (int i = 0; i < AF_BUF_COUNT; i++)
        if (p->buffer_elems[i]) used[i] = calloc((size_t)p->buffer_elems[i], 1);
    int ntensors = c->backward ? AF_T_COUNT : AF_T_DO;
    for (int t = 0; t < ntensors; t++) {
        const af_tensor_view *v = &p->view[t];
        bool kv = t == AF_T_K || t == AF_T_V || t == AF_T_DK || t == AF_T_DV;
        for (int b = 0; b < v->B; b++) {
            int rows = v->ragged ? (kv ? af_case_len_kv(c, b) : af_case_len_q(c, b)) : v->S;
            for (int h = 0; h < v->H; h++)
                for (int s = 0; s < rows; s++)
                    for (int d = 0; d < v->D; d++) {
                        int64_t off = af_layout_offset(p, (af_tensor_id)t, b, h, s, d);
                        CHECK_MSG(off == af_layout_offset(p, (af_tensor_id)t, b, h, s, 0) + d,
                                  "%s (%d,%d,%d,%d): the row is not contiguous", af_tensor_name((af_tensor_id)t), b, h,
                                  s, d);
                        CHECK_MSG(off >= 0 && off < p->buffer_elems[v->buffer], "%s (%d,%d,%d,%d) -> %lld of %lld",
                                  af_tensor_name((af_tensor_id)t), b, h, s, d, (long long)off,
                                  (long long)p->buffer_elems[v->buffer]);
                        CHECK_MSG(!used[v->buffer][off], "%s (%d,%d,%d,%d) overlaps", af_tensor_name((af_tensor_id)t),
                                  b, h, s, d);
                        used[v->buffer][off] = 1;
                    }
        }
    }
    for (int i = 0; i < AF_BUF_COUNT; i++) free(used[i]);
    free(p);
}

/* Paged K of a case with page_size ps (any size, not only powers of two): the map
 * key (b, s) -> (physical page, slot in the page) is a bijection onto the used slots,
 * the first s_kv slots of each sequence's pages in table order; the tail of a partial
 * last page is hit by no key. */
static void check_page_bijection(int ps, int batch, int seqlen_kv) {
    char text[256];
    snprintf(text, sizeof text, "batch = %d\nheads_kv = 2\nheads_q = 2\nseqlen_kv = %d\npage_size = %d\nseed = 9\n",
             batch, seqlen_kv, ps);
    af_case c;
    load(text, &c);
    af_layout_plan *p = malloc(sizeof *p);
    char why[256];
    CHECK_MSG(af_layout_plan_make(&c, p, why, sizeof why) == 0, "page_size %d: %s", ps, why);
    int pps = (seqlen_kv + ps - 1) / ps;
    CHECK_MSG(p->page_size == ps && p->pages_per_seq == pps && p->n_pages == batch * pps, "page_size %d: %d x %d pages",
              ps, p->pages_per_seq, p->n_pages);
    const af_tensor_view *v = &p->view[AF_T_K];
    CHECK(v->paged && v->stride_b == (int64_t)ps * v->stride_s);
    int *hits = calloc((size_t)p->n_pages * (size_t)ps, sizeof *hits); /* [page * ps + slot] */
    for (int h = 0; h < 2; h++)
        for (int b = 0; b < batch; b++)
            for (int s = 0; s < seqlen_kv; s++) {
                int64_t off = af_layout_offset(p, AF_T_K, b, h, s, 0) - v->base - (int64_t)h * v->stride_h;
                int64_t page = off / v->stride_b, slot = off % v->stride_b / v->stride_s;
                CHECK_MSG(off % v->stride_s == 0 && page >= 0 && page < p->n_pages && slot < ps,
                          "page_size %d: key (%d, %d) -> page %lld slot %lld", ps, b, s, (long long)page,
                          (long long)slot);
                if (h == 0)
                    hits[page * ps + slot]++;
                else
                    CHECK(hits[page * ps + slot] == 1); /* every head: the same slot */
            }
    for (int b = 0; b < batch; b++)
        for (int e = 0; e < pps; e++)
            for (int r = 0; r < ps; r++) {
                int page = p->page_table[b * pps + e];
                int want = e * ps + r < seqlen_kv; /* used slot: exactly one key; tail: none */
                CHECK_MSG(hits[page * ps + r] == want, "page_size %d: sequence %d, entry %d, slot %d hit %d times", ps,
                          b, e, r, hits[page * ps + r]);
            }
    free(hits);
    free(p);
}

/* page_layout = hnd and page_kv = joint against the address written out by hand: a page
 * block is [H, P, vec] (hnd) or [P, H, vec] (nhd); joint pages hold K's block then V's in
 * BUF_K. Every element still has its own place (check_plan). */
static void check_page_forms(bool hnd, bool joint) {
    char text[256];
    snprintf(text, sizeof text,
             "batch = 3\nheads_q = 4\nheads_kv = 2\nseqlen_q = 3\nseqlen_kv = 23\npage_size = 5\n"
             "head_dim_qk = 8\nhead_dim_v = 4\nstride_gap = 2\npage_layout = %s\npage_kv = %s\nseed = 5\n",
             hnd ? "hnd" : "nhd", joint ? "joint" : "split");
    af_case c;
    load(text, &c);
    check_plan(&c);
    af_layout_plan *p = malloc(sizeof *p);
    char why[256];
    CHECK(af_layout_plan_make(&c, p, why, sizeof why) == 0);
    const int P = 5, H = 2, vec_k = 10, vec_v = 6;
    const int64_t blk_k = (int64_t)H * P * vec_k, blk_v = (int64_t)H * P * vec_v;
    for (int t = 0; t < 2; t++) {
        af_tensor_id id = t ? AF_T_V : AF_T_K;
        int vec = t ? vec_v : vec_k, D = t ? 4 : 8;
        int64_t pstride = joint ? blk_k + blk_v : t ? blk_v : blk_k, base = joint && t ? blk_k : 0;
        CHECK(p->view[id].buffer == (joint ? AF_BUF_K : t ? AF_BUF_V : AF_BUF_K));
        for (int b = 0; b < 3; b++)
            for (int h = 0; h < H; h++)
                for (int s = 0; s < 23; s++)
                    for (int d = 0; d < D; d++) {
                        int64_t page = p->page_table[b * p->pages_per_seq + s / P];
                        int64_t in_page = hnd ? ((int64_t)h * P + s % P) * vec : ((int64_t)(s % P) * H + h) * vec;
                        int64_t want = base + page * pstride + in_page + d;
                        CHECK_MSG(af_layout_offset(p, id, b, h, s, d) == want, "%s %s %s (%d,%d,%d,%d)",
                                  hnd ? "hnd" : "nhd", joint ? "joint" : "split", t ? "V" : "K", b, h, s, d);
                    }
    }
    CHECK(p->buffer_elems[AF_BUF_K] == p->n_pages * (joint ? blk_k + blk_v : blk_k));
    CHECK(p->buffer_elems[AF_BUF_V] == (joint ? 0 : p->n_pages * blk_v));
    free(p);
}

/* Dense inputs of a case (exact stored values). */
static af_inputs gen(const af_case *c, af_tensors *t) {
    af_inputs in;
    char why[256];
    CHECK(af_tensors_alloc(t, c, why, sizeof why) == 0);
    CHECK(af_inputs_alloc(&in, c) == 0);
    CHECK(af_inputs_generate(c, t, &in) == 0);
    return in;
}

static size_t n_q(const af_case *c) { return (size_t)c->batch * c->heads_q * c->seqlen_q * c->head_dim_qk; }
static size_t n_k(const af_case *c) { return (size_t)c->batch * c->heads_kv * c->seqlen_kv * c->head_dim_qk; }
static size_t n_v(const af_case *c) { return (size_t)c->batch * c->heads_kv * c->seqlen_kv * c->head_dim_v; }

static void same_inputs(const char *base, const char *variant) {
    char a_text[2048], b_text[2048];
    snprintf(a_text, sizeof a_text, "%s", base);
    snprintf(b_text, sizeof b_text, "%s%s", base, variant);
    af_case a, b;
    load(a_text, &a);
    load(b_text, &b);
    check_plan(&b);
    af_tensors ta, tb;
    af_inputs ia = gen(&a, &ta), ib = gen(&b, &tb);
    CHECK_MSG(memcmp(ia.q, ib.q, n_q(&a) * sizeof(double)) == 0, "Q differs with '%s'", variant);
    CHECK_MSG(memcmp(ia.k, ib.k, n_k(&a) * sizeof(double)) == 0, "K differs with '%s'", variant);
    CHECK_MSG(memcmp(ia.v, ib.v, n_v(&a) * sizeof(double)) == 0, "V differs with '%s'", variant);
    if (a.backward)
        CHECK(memcmp(ia.dout, ib.dout, (size_t)a.batch * a.heads_q * a.seqlen_q * a.head_dim_v * sizeof(double)) == 0);
    af_inputs_free(&ia);
    af_inputs_free(&ib);
    af_tensors_free(&ta);
    af_tensors_free(&tb);
}

/* The key side and the rows of a tensor (model/layout.h): K, V, dK, dV count key tokens,
 * the rest query tokens; a ragged (thd) tensor holds only the valid rows of a sequence, a
 * padded one all S, valid or not. Both sides ragged (thd, with the gradients), then only
 * the query side (thd Q over paged K/V, forward only: a KV cache has no gradient). */
static void check_tensor_rows(void) {
    static const af_tensor_id kv_side[] = {AF_T_K, AF_T_V, AF_T_DK, AF_T_DV};
    static const af_tensor_id q_side[] = {AF_T_Q, AF_T_O, AF_T_LSE, AF_T_DO, AF_T_DQ};
    static const int len_q[3] = {11, 0, 5}, len_kv[3] = {37, 12, 9};
    for (int form = 0; form < 2; form++) {
        af_case c;
        load(form ? "layout = thd\nbatch = 3\nheads = 2\nhead_dim = 8\nseqlen_q = 11\nseqlen_kv = 37\n"
                    "seqlens_q = 11,0,5\nseqlens_kv = 37,12,9\npage_size = 5\n"
                  : "layout = thd\nbatch = 3\nheads = 2\nhead_dim = 8\nseqlen_q = 11\nseqlen_kv = 37\n"
                    "seqlens_q = 11,0,5\nseqlens_kv = 37,12,9\nbackward = 1\n",
             &c);
        af_layout_plan *p = malloc(sizeof *p);
        char why[256];
        CHECK_MSG(af_layout_plan_make(&c, p, why, sizeof why) == 0, "%s", why);
        for (int b = 0; b < 3; b++) {
            for (int i = 0; i < 4; i++) {
                af_tensor_id t = kv_side[i];
                const af_tensor_view *v = &p->view[t];
                CHECK(af_tensor_is_kv(t));
                CHECK(af_tensor_valid_rows(&c, t, b) == len_kv[b]);
                if (form && i >= 2) continue; /* no dK, dV forward */
                CHECK(v->ragged == !form);    /* paged K/V are not packed */
                CHECK(af_tensor_rows_in_buffer(&c, v, t, b) == (form ? 37 : len_kv[b]));
            }
            for (int i = 0; i < 5; i++) {
                af_tensor_id t = q_side[i];
                const af_tensor_view *v = &p->view[t];
                CHECK(!af_tensor_is_kv(t));
                CHECK(af_tensor_valid_rows(&c, t, b) == len_q[b]);
                if (form && i >= 3) continue; /* no dO, dQ forward */
                CHECK(v->ragged);
                CHECK(af_tensor_rows_in_buffer(&c, v, t, b) == len_q[b]);
            }
        }
        free(p);
    }
}

/* thd with paged K/V (ragged queries over a paged KV cache, the serving layout): every
 * Q, O and LSE element at its packed token (token starts with thd_gap tokens after every
 * sequence), every K and V element in its page, each address computed here from the
 * case alone and the plan's page table; K/V have no token starts, and the metadata check
 * looks at the query side and the table only. */
static void check_thd_paged(void) {
    enum { B = 3, HQ = 4, HKV = 2, DQK = 8, DV = 6, GAP = 3, SG = 2, P = 5, SKV = 37 };
    static const int len_q[B] = {11, 0, 5}, len_kv[B] = {37, 12, 9};
    af_case c;
    load("layout = thd\nbatch = 3\nheads_q = 4\nheads_kv = 2\nhead_dim_qk = 8\nhead_dim_v = 6\nseqlen_q = 11\n"
         "seqlen_kv = 37\nseqlens_q = 11,0,5\nseqlens_kv = 37,12,9\nthd_gap = 3\nstride_gap = 2\npage_size = 5\n"
         "mask = causal\nalign = bottom_right\nseed = 4\n",
         &c);
    check_plan(&c);
    af_layout_plan *p = malloc(sizeof *p);
    char why[256];
    CHECK(af_layout_plan_make(&c, p, why, sizeof why) == 0);
    /* the page table: (B, ceil(37 / 5) = 8) entries, a permutation of the 24 pages */
    const int pps = (SKV + P - 1) / P;
    CHECK(p->page_size == P && p->pages_per_seq == pps && p->n_pages == B * pps);
    int seen[B * 8] = {0};
    for (int i = 0; i < B * pps; i++) {
        CHECK(p->page_table[i] >= 0 && p->page_table[i] < B * pps);
        seen[p->page_table[i]]++;
    }
    for (int i = 0; i < B * pps; i++) CHECK(seen[i] == 1);
    /* the views: Q, O, LSE ragged and not paged; K, V paged and not ragged */
    CHECK(p->view[AF_T_Q].ragged && !p->view[AF_T_Q].paged && p->view[AF_T_O].ragged && p->view[AF_T_LSE].ragged);
    CHECK(p->view[AF_T_K].paged && !p->view[AF_T_K].ragged && p->view[AF_T_V].paged && !p->view[AF_T_V].ragged);
    /* the query side's packed tokens, computed here */
    int64_t start[B + 1], t = 0;
    for (int b = 0; b < B; b++) {
        start[b] = t;
        t += len_q[b] + GAP;
    }
    start[B] = t;
    for (int b = 0; b <= B; b++) CHECK_MSG(p->token_start_q[b] == start[b], "token_start_q[%d]", b);
    CHECK(p->total_tokens_q == t);
    for (int b = 0; b <= B; b++) CHECK(p->token_start_kv[b] == 0); /* no key tokens (layout.h) */
    CHECK(p->total_tokens_kv == 0);
    const int64_t row_q = HQ * (DQK + SG), row_o = HQ * (DV + SG), row_k = HKV * (DQK + SG), row_v = HKV * (DV + SG);
    CHECK(p->buffer_elems[AF_BUF_Q] == t * row_q && p->buffer_elems[AF_BUF_O] == t * row_o);
    CHECK(p->buffer_elems[AF_BUF_LSE] == t * HQ);
    CHECK(p->buffer_elems[AF_BUF_K] == (int64_t)B * pps * P * row_k);
    CHECK(p->buffer_elems[AF_BUF_V] == (int64_t)B * pps * P * row_v);
    long checked = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++) {
            for (int s = 0; s < len_q[b]; s++) {
                for (int d = 0; d < DQK; d++, checked++)
                    CHECK_MSG(af_layout_offset(p, AF_T_Q, b, h, s, d) == (start[b] + s) * row_q + h * (DQK + SG) + d,
                              "Q (%d,%d,%d,%d)", b, h, s, d);
                for (int d = 0; d < DV; d++, checked++)
                    CHECK_MSG(af_layout_offset(p, AF_T_O, b, h, s, d) == (start[b] + s) * row_o + h * (DV + SG) + d,
                              "O (%d,%d,%d,%d)", b, h, s, d);
                CHECK_MSG(af_layout_offset(p, AF_T_LSE, b, h, s, 0) == (start[b] + s) * HQ + h, "LSE (%d,%d,%d)", b, h,
                          s);
            }
            if (h >= HKV) continue;
            for (int s = 0; s < len_kv[b]; s++) {
                int64_t page = p->page_table[b * pps + s / P], slot = s % P;
                for (int d = 0; d < DQK; d++, checked++)
                    CHECK_MSG(af_layout_offset(p, AF_T_K, b, h, s, d) == (page * P + slot) * row_k + h * (DQK + SG) + d,
                              "K (%d,%d,%d,%d)", b, h, s, d);
                for (int d = 0; d < DV; d++, checked++)
                    CHECK_MSG(af_layout_offset(p, AF_T_V, b, h, s, d) == (page * P + slot) * row_v + h * (DV + SG) + d,
                              "V (%d,%d,%d,%d)", b, h, s, d);
            }
        }
    CHECK(checked == (long)HQ * 16 * (DQK + DV) + (long)HKV * 58 * (DQK + DV));
    /* the metadata check: the query side's starts and the table; key starts unused */
    CHECK(af_layout_metadata_check(&c, p, why, sizeof why) == 0);
    p->token_start_kv[1] = -7; /* not read: paged keys */
    CHECK(af_layout_metadata_check(&c, p, why, sizeof why) == 0);
    p->token_start_q[1] = start[0] + 2; /* sequence 0's 11 queries overrun it */
    CHECK(af_layout_metadata_check(&c, p, why, sizeof why) == -1 && strstr(why, "query"));
    p->token_start_q[1] = start[1];
    p->page_table[2 * pps + 1] = B * pps; /* an entry sequence 2 uses (its keys 5..8) */
    CHECK(af_layout_metadata_check(&c, p, why, sizeof why) == -1 && strstr(why, "page_table[2][1]"));
    free(p);
    /* the generated values: those of the padded bshd twin without pages */
    same_inputs("batch = 3\nheads_q = 4\nheads_kv = 2\nhead_dim_qk = 8\nhead_dim_v = 6\nseqlen_q = 11\nseqlen_kv = "
                "37\nseqlens_q = 11,0,5\nseqlens_kv = 37,12,9\nmask = padding\nseed = 4\n",
                "layout = thd\nthd_gap = 3\nstride_gap = 2\npage_size = 5\n");
}

/* Per-head packing (kv_h, qkv_h): per token and head, the group's vectors are adjacent
 * (V's vector right after K's: TE's bsh2d), unlike kv / qkv (K's heads, then V's: bs2hd).
 * layout_kv and layout_do: K, V, dK, dV and dO in their own layout. */
static void check_side_layouts(void) {
    af_layout_plan *p = malloc(sizeof *p);
    char why[256];
    af_case c;
    /* kv_h, bshd, gap 2: K (b,h,s) at row s, V right after it */
    load("packing = kv_h\nstride_gap = 2\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 5\nseqlen_kv = 7\n"
         "head_dim = 8\nbackward = yes\n",
         &c);
    check_plan(&c);
    CHECK(af_layout_plan_make(&c, p, why, sizeof why) == 0);
    const int64_t vec = 8 + 2, row = 2 * 2 * vec;
    for (int t = AF_T_K; t <= AF_T_DV; t += (t == AF_T_V ? AF_T_DK - AF_T_V : 1))
        CHECK(p->view[t].stride_h == 2 * vec && p->view[t].stride_s == row && p->view[t].stride_b == 7 * row);
    CHECK(p->view[AF_T_K].base == 0 && p->view[AF_T_V].base == vec && p->view[AF_T_DV].base == vec);
    CHECK(af_layout_offset(p, AF_T_K, 1, 1, 3, 5) == 1 * 7 * row + 3 * row + 1 * 2 * vec + 5);
    CHECK(af_layout_offset(p, AF_T_V, 1, 1, 3, 5) == af_layout_offset(p, AF_T_K, 1, 1, 3, 5) + vec);
    CHECK(p->buffer_elems[AF_BUF_K] == 2 * 7 * row && p->buffer_elems[AF_BUF_V] == 0);
    /* the blocked kv packing of the same case: V after all of K's heads */
    load("packing = kv\nstride_gap = 2\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 5\nseqlen_kv = 7\n"
         "head_dim = 8\n",
         &c);
    CHECK(af_layout_plan_make(&c, p, why, sizeof why) == 0);
    CHECK(p->view[AF_T_V].base == 2 * vec && p->view[AF_T_V].stride_h == vec);
    /* qkv_h, thd with gaps: Q, K, V of a head one after the other, stride_h = 3 (D + gap) */
    load("packing = qkv_h\nlayout = thd\nthd_gap = 1\nstride_gap = 1\nbatch = 2\nheads = 3\nseqlen = 9\n"
         "seqlens_q = 9,4\nseqlens_kv = 9,4\nhead_dim = 8\nbackward = yes\n",
         &c);
    check_plan(&c);
    CHECK(af_layout_plan_make(&c, p, why, sizeof why) == 0);
    CHECK(p->view[AF_T_Q].base == 0 && p->view[AF_T_K].base == 9 && p->view[AF_T_V].base == 18);
    CHECK(p->view[AF_T_K].stride_h == 27 && p->view[AF_T_K].stride_s == 81 && p->view[AF_T_K].ragged);
    CHECK(af_layout_offset(p, AF_T_V, 1, 2, 3, 0) == (10 + 3) * 81 + 2 * 27 + 18);
    /* sbhd qkv_h */
    load("packing = qkv_h\nlayout = sbhd\nbatch = 3\nheads = 2\nseqlen = 6\nhead_dim = 8\n", &c);
    check_plan(&c);
    /* thd Q over padded bshd K / V (ragged Q, padded KV): K and V have seqlen_kv rows per
     * sequence, no token starts; Q, O, LSE stay ragged */
    load("layout = thd\nlayout_kv = bshd\nthd_gap = 2\nbatch = 2\nheads = 2\nseqlen_q = 6\nseqlen_kv = 10\n"
         "seqlens_q = 6,3\nseqlens_kv = 10,4\nhead_dim = 8\nbackward = yes\n",
         &c);
    check_plan(&c);
    CHECK(af_layout_plan_make(&c, p, why, sizeof why) == 0);
    CHECK(p->view[AF_T_Q].ragged && p->view[AF_T_O].ragged && p->view[AF_T_LSE].ragged && p->view[AF_T_DQ].ragged);
    for (int t = AF_T_K; t <= AF_T_DV; t += (t == AF_T_V ? AF_T_DK - AF_T_V : 1))
        CHECK(!p->view[t].ragged && p->view[t].stride_b == 10 * p->view[t].stride_s);
    CHECK(p->total_tokens_q == 6 + 2 + 3 + 2 && p->total_tokens_kv == 0 && p->token_start_kv[1] == 0);
    CHECK(p->buffer_elems[AF_BUF_K] == 2 * 10 * 2 * 8);
    CHECK(af_layout_metadata_check(&c, p, why, sizeof why) == 0);
    /* dO in bhsd under sbhd: its own strides, O keeps sbhd */
    load("layout = sbhd\nlayout_do = bhsd\nlayout_kv = bshd\nbatch = 2\nheads = 2\nseqlen_q = 6\nseqlen_kv = 5\n"
         "head_dim = 8\nbackward = yes\n",
         &c);
    check_plan(&c);
    CHECK(af_layout_plan_make(&c, p, why, sizeof why) == 0);
    CHECK(p->view[AF_T_DO].stride_s == 8 && p->view[AF_T_DO].stride_h == 6 * 8 &&
          p->view[AF_T_DO].stride_b == 2 * 6 * 8);
    CHECK(p->view[AF_T_O].stride_s == 2 * 2 * 8 && p->view[AF_T_O].stride_b == 2 * 8);
    CHECK(p->view[AF_T_K].stride_s == 2 * 8 && p->view[AF_T_K].stride_b == 5 * 2 * 8);
    CHECK(p->view[AF_T_Q].stride_s == 2 * 2 * 8);
    free(p);
}

/* gap_h, gap_s, gap_b against an independent computation: for a tensor of its own buffer
 * in a padded layout, walk its axes from the innermost out (the head vector of D +
 * stride_gap elements first); each axis's stride is the block inside it plus the axis's
 * gap, the next block the axis's extent times that stride; the buffer is the outermost
 * block. Every element of every tensor is compared, and check_plan sees no overlap. */
static void check_axis_gaps(const char *layout, const char *order) {
    char text[512];
    snprintf(text, sizeof text,
             "batch = 3\nheads_q = 4\nheads_kv = 2\nseqlen_q = 7\nseqlen_kv = 11\nhead_dim_qk = 8\nhead_dim_v = 16\n"
             "stride_gap = 1\ngap_h = 3\ngap_s = 5\ngap_b = 17\nbackward = yes\nlayout = %s\n",
             layout);
    af_case c;
    load(text, &c);
    check_plan(&c);
    af_layout_plan *p = malloc(sizeof *p);
    char why[256];
    CHECK(af_layout_plan_make(&c, p, why, sizeof why) == 0);
    for (int t = 0; t < AF_T_COUNT; t++) {
        if (t == AF_T_LSE) continue; /* fp32 (b, h, s), dense */
        const af_tensor_view *v = &p->view[t];
        int64_t extent[3] = {v->B, v->H, v->S}, gap[3] = {c.gap_b, c.gap_h, c.gap_s}, stride[3];
        int64_t block = v->D + c.stride_gap;
        for (int k = 2; k >= 0; k--) { /* order: outermost first, e.g. "bsh" */
            int axis = order[k] == 'b' ? 0 : order[k] == 'h' ? 1 : 2;
            stride[axis] = block + gap[axis];
            block = extent[axis] * stride[axis];
        }
        CHECK_MSG(p->buffer_elems[v->buffer] == block, "%s %s: buffer %lld, expected %lld", layout,
                  af_tensor_name((af_tensor_id)t), (long long)p->buffer_elems[v->buffer], (long long)block);
        for (int b = 0; b < v->B; b++)
            for (int h = 0; h < v->H; h++)
                for (int s = 0; s < v->S; s++)
                    CHECK_MSG(af_layout_offset(p, (af_tensor_id)t, b, h, s, 3) ==
                                  b * stride[0] + h * stride[1] + s * stride[2] + 3,
                              "%s %s (%d,%d,%d)", layout, af_tensor_name((af_tensor_id)t), b, h, s);
    }
    free(p);
}

/* Paged K/V with gaps: pages are bshd inside, gap_b after each page; thd has no batch
 * stride (validate refuses gap_b there), its token stride holds gap_s. */
static void check_axis_gaps_paged_thd(void) {
    af_case c;
    load("batch = 2\nheads = 2\nseqlen_kv = 13\nhead_dim = 8\npage_size = 5\ngap_h = 1\ngap_s = 2\ngap_b = 9\n", &c);
    check_plan(&c);
    af_layout_plan *p = malloc(sizeof *p);
    char why[256];
    CHECK(af_layout_plan_make(&c, p, why, sizeof why) == 0);
    int64_t hs = 8 + 1, ss = 2 * hs + 2, page = 5 * ss + 9;
    for (int b = 0; b < 2; b++)
        for (int s = 0; s < 13; s++)
            CHECK(af_layout_offset(p, AF_T_V, b, 1, s, 2) ==
                  p->page_table[b * p->pages_per_seq + s / 5] * page + (s % 5) * ss + hs + 2);
    CHECK(p->buffer_elems[AF_BUF_K] == p->n_pages * page);
    load("layout = thd\nbatch = 2\nheads = 2\nseqlen = 6\nseqlens_q = 6,2\nseqlens_kv = 6,3\nthd_gap = 1\n"
         "head_dim = 8\ngap_h = 4\ngap_s = 3\n",
         &c);
    check_plan(&c);
    CHECK(af_layout_plan_make(&c, p, why, sizeof why) == 0);
    CHECK(p->view[AF_T_Q].stride_h == 12 && p->view[AF_T_Q].stride_s == 2 * 12 + 3);
    CHECK(af_layout_offset(p, AF_T_Q, 1, 1, 1, 0) == (7 + 1) * 27 + 12);
    free(p);
}

int main(void) {
    /* paged KV: pages of any size, partial last pages, more than 1024 pages per sequence,
     * a batch of 128 */
    static const int page_sizes[] = {1, 3, 5, 7, 100};
    for (int i = 0; i < 5; i++) check_page_bijection(page_sizes[i], 2, 237);
    check_page_bijection(5, 2, 37);
    check_page_bijection(1, 1, 4099);  /* 4099 pages in one sequence */
    check_page_bijection(12, 128, 49); /* batch 128 */
    check_thd_paged();
    check_tensor_rows();
    for (int f = 0; f < 4; f++) check_page_forms(f & 1, f & 2);
    check_side_layouts();
    check_axis_gaps("bshd", "bsh");
    check_axis_gaps("sbhd", "sbh");
    check_axis_gaps("bhsd", "bhs");
    check_axis_gaps("shbd", "shb"); /* the other orders of b, s, h */
    check_axis_gaps("hbsd", "hbs");
    check_axis_gaps("hsbd", "hsb");
    check_axis_gaps_paged_thd();
    {
        af_case c;
        load("batch = 1\nseqlen_kv = 100000\npage_size = 3\nhead_dim = 8\n", &c);
        check_plan(&c); /* 33334 pages in one sequence: still every element its own place */
    }
    /* layout independence of the generated values */
    const char *base = "batch = 2\nheads = 2\nseqlen = 40\nhead_dim = 24\nbackward = yes\nseed = 77\n";
    const char *variants[] = {"layout = sbhd\n",
                              "layout = bhsd\n",
                              "stride_gap = 5\n",
                              "packing = kv\n",
                              "packing = qkv\n",
                              "packing = qkv\nlayout = bhsd\nstride_gap = 3\n",
                              "packing = kv\nlayout = sbhd\nstride_gap = 1\n",
                              "packing = kv_h\nstride_gap = 2\n",
                              "packing = qkv_h\nlayout = sbhd\n",
                              "layout_kv = bhsd\nlayout_do = sbhd\n",
                              "layout = bhsd\nlayout_kv = sbhd\npacking = kv\n",
                              "gap_h = 3\ngap_s = 1\ngap_b = 5\n",
                              "layout = bhsd\ngap_h = 2\ngap_s = 7\npacking = kv\n",
                              "layout = hbsd\nlayout_kv = shbd\nlayout_do = hsbd\ngap_s = 3\n"};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) same_inputs(base, variants[i]);
    const char *padded =
        "batch = 3\nheads_q = 4\nheads_kv = 2\nseqlen_q = 33\nseqlen_kv = 47\nhead_dim_qk = 16\nhead_dim_v = 8\n"
        "seqlens_q = 0,1,33\nseqlens_kv = 5,47,1\nseed = 3\n";
    char buf[1024];
    snprintf(buf, sizeof buf, "%smask = padding\n", padded);
    const char *pvariants[] = {"layout = sbhd\n", "layout = bhsd\nstride_gap = 2\n"};
    for (size_t i = 0; i < 2; i++) same_inputs(buf, pvariants[i]);
    {
        /* thd with gaps: same values as padded bshd for the valid rows */
        char thd[1024];
        snprintf(thd, sizeof thd, "%slayout = thd\nthd_gap = 3\nmask = none\n", padded);
        af_case a, b;
        load(buf, &a);
        load(thd, &b);
        check_plan(&b);
        af_tensors ta, tb;
        af_inputs ia = gen(&a, &ta), ib = gen(&b, &tb);
        CHECK(memcmp(ia.q, ib.q, n_q(&a) * sizeof(double)) == 0);
        CHECK(memcmp(ia.k, ib.k, n_k(&a) * sizeof(double)) == 0);
        CHECK(memcmp(ia.v, ib.v, n_v(&a) * sizeof(double)) == 0);
        /* a token in a thd gap holds a NaN (poison), a valid token does not */
        const af_tensor_view *v = &tb.plan.view[AF_T_Q];
        int64_t gap_tok = tb.plan.token_start_q[2] - 1; /* last gap token before sequence 2 */
        CHECK(isnan(af_storage_load(v->storage, tb.buf[v->buffer], v->base + gap_tok * v->stride_s)));
        CHECK(!isnan(af_storage_load(v->storage, tb.buf[v->buffer], af_layout_offset(&tb.plan, AF_T_Q, 2, 0, 0, 0))));
        af_inputs_free(&ia);
        af_inputs_free(&ib);
        af_tensors_free(&ta);
        af_tensors_free(&tb);
    }
    {
        /* paged KV: same values, page table is a permutation */
        af_case a, b;
        load("seqlen_kv = 37\nbatch = 2\nseed = 5\n", &a);
        load("seqlen_kv = 37\nbatch = 2\nseed = 5\npage_size = 8\n", &b);
        check_plan(&b);
        af_tensors ta, tb;
        af_inputs ia = gen(&a, &ta), ib = gen(&b, &tb);
        CHECK(memcmp(ia.k, ib.k, n_k(&a) * sizeof(double)) == 0 && memcmp(ia.v, ib.v, n_v(&a) * sizeof(double)) == 0);
        int seen[16] = {0}, identity = 1;
        CHECK(tb.plan.n_pages == 10);
        for (int i = 0; i < tb.plan.n_pages; i++) {
            seen[tb.plan.page_table[i]]++;
            identity &= tb.plan.page_table[i] == i;
        }
        for (int i = 0; i < tb.plan.n_pages; i++) CHECK(seen[i] == 1);
        CHECK(!identity);
        /* the 3 unused slots of each last page: finite by default, NaN with page_tail = nan */
        const af_tensor_view *kv = &tb.plan.view[AF_T_K];
        double tail = af_storage_load(kv->storage, tb.buf[kv->buffer], af_layout_offset(&tb.plan, AF_T_K, 1, 0, 39, 5));
        CHECK(isfinite(tail));
        af_case n;
        load("seqlen_kv = 37\nbatch = 2\nseed = 5\npage_size = 8\npage_tail = nan\n", &n);
        af_tensors tn;
        af_inputs in_n = gen(&n, &tn);
        CHECK(isnan(af_storage_load(kv->storage, tn.buf[kv->buffer], af_layout_offset(&tn.plan, AF_T_K, 1, 0, 39, 5))));
        CHECK(memcmp(in_n.k, ib.k, n_k(&a) * sizeof(double)) == 0);
        af_inputs_free(&in_n);
        af_tensors_free(&tn);
        af_inputs_free(&ia);
        af_inputs_free(&ib);
        af_tensors_free(&ta);
        af_tensors_free(&tb);
    }
    /* plans of awkward shapes */
    const char *plans[] = {"heads_q = 8\nheads_kv = 1\nseqlen_q = 3\nseqlen_kv = 70\nhead_dim_qk = 72\nhead_dim_v = "
                           "8\nbackward = yes\nlayout = sbhd\nstride_gap = 7\n",
                           "layout = thd\nbatch = 4\nseqlens_q = 0,1,2,3\nseqlens_kv = 0,1,2,3\nseqlen = 3\npacking = "
                           "qkv\nthd_gap = 2\nbackward = yes\n",
                           "layout = bhsd\npacking = kv\nheads_q = 4\nheads_kv = 2\nbackward = yes\n",
                           "layout = bhsd\npage_size = 4\nheads_q = 4\nheads_kv = 2\nseqlen_kv = 37\nbatch = 3\n",
                           "layout = sbhd\npage_size = 8\nheads = 3\nseqlen_kv = 64\nbatch = 2\nstride_gap = 5\n"};
    for (size_t i = 0; i < 5; i++) {
        af_case c;
        load(plans[i], &c);
        check_plan(&c);
    }

    /* determinism and seed sensitivity */
    {
        af_case a;
        load("seqlen = 64\nhead_dim = 32\nseed = 11\n", &a);
        af_tensors t1, t2;
        af_inputs i1 = gen(&a, &t1), i2 = gen(&a, &t2);
        CHECK(memcmp(t1.buf[AF_BUF_Q], t2.buf[AF_BUF_Q], t1.bytes[AF_BUF_Q]) == 0);
        CHECK(af_gen_element(&a, AF_T_K, 0, 0, 5, 3) == af_gen_element(&a, AF_T_K, 0, 0, 5, 3));
        a.seed = 12;
        CHECK(af_gen_element(&a, AF_T_K, 0, 0, 5, 3) != af_gen_element(&a, AF_T_K, 0, 0, 6, 3));
        af_inputs_free(&i1);
        af_inputs_free(&i2);
        af_tensors_free(&t1);
        af_tensors_free(&t2);
    }
    /* distributions: normal sigma, uniform range, zeros fraction, outliers, sink */
    {
        af_case a;
        load("seqlen = 256\nhead_dim = 128\nseed = 9\ndata = normal:2 zeros:0.25 outlier_channels:4:50 sink:20\n", &a);
        double s1 = 0, s2 = 0, zeros = 0, n = 0, outl = 0;
        for (int s = 1; s < 256; s++)
            for (int d = 0; d < 128; d++) {
                double x = af_gen_element(&a, AF_T_V, 0, 0, s, d);
                s1 += x;
                s2 += x * x;
                n++;
                zeros += x == 0;
                double qk = fabs(af_gen_element(&a, AF_T_Q, 0, 0, s, d));
                if (qk > 20) outl++;
            }
        double nz = n - zeros;
        double mean = s1 / nz, sd = sqrt(s2 / nz - mean * mean);
        CHECK_MSG(fabs(mean) < 0.05 && fabs(sd - 2.0) < 0.05, "mean %g sd %g", mean, sd);
        CHECK_MSG(fabs(zeros / n - 0.25) < 0.01, "zeros %g", zeros / n);
        CHECK_MSG(outl > 0.6 * n * 4 / 128 * 0.75 && outl < n * 4 / 128, "outliers %g", outl);
        double sink = 0;
        for (int d = 0; d < 128; d++) sink += fabs(af_gen_element(&a, AF_T_K, 0, 0, 0, d));
        CHECK_MSG(sink / 128 > 10, "sink mean |k0| %g", sink / 128);
    }
    {
        af_case a;
        load("seqlen = 64\nhead_dim = 64\nseed = 2\ndata = uniform:0.5 block_range:16 low_lse:0.5:30\n", &a);
        double mx = 0, mn = 1e30;
        for (int s = 0; s < 64; s++) {
            double m = 0;
            for (int d = 1; d < 64; d++) m = fmax(m, fabs(af_gen_element(&a, AF_T_K, 0, 0, s, d)));
            mx = fmax(mx, m);
            mn = fmin(mn, m);
            CHECK(af_gen_element(&a, AF_T_K, 0, 0, s, 0) == 1.0f);
            float q0 = af_gen_element(&a, AF_T_Q, 0, 0, s, 0);
            CHECK(q0 == -(float)(30.0 / (double)af_case_scale(&a)) || fabs(q0) <= 0.5f);
        }
        CHECK_MSG(mx / mn > 256, "block_range spread %g", mx / mn);
        for (int d = 0; d < 64; d++) CHECK(fabs(af_gen_element(&a, AF_T_Q, 0, 0, 3, d == 0 ? 1 : d)) <= 0.5f);
    }
    /* fp8 / mxfp8 quantisation: logical values are the dequantised stored values */
    {
        af_case a;
        load("dtype = fp8_e4m3\nseqlen = 40\nhead_dim = 40\nseed = 4\n", &a);
        af_tensors t;
        af_inputs in = gen(&a, &t);
        double amax = 0;
        for (size_t i = 0; i < n_q(&a); i++) amax = fmax(amax, fabs(in.q[i]));
        CHECK_MSG(fabs(amax - 448.0 * t.descale_q) < 1e-6 * amax, "amax %g descale %g", amax, t.descale_q);
        af_inputs_free(&in);
        af_tensors_free(&t);
        load("dtype = mxfp8\nseqlen = 70\nhead_dim = 40\nseed = 4\n", &a);
        in = gen(&a, &t);
        CHECK(t.mx_scale_q && t.mx_scale_v);
        /* every stored E4M3 byte dequantises to the logical value */
        for (int s = 0; s < 70; s++)
            for (int d = 0; d < 40; d++) {
                double lv = in.v[(size_t)s * 40 + d];
                double st = af_storage_load(AF_ST_E4M3, t.buf[AF_BUF_V], af_layout_offset(&t.plan, AF_T_V, 0, 0, s, d));
                int e = (int)t.mx_scale_v[(size_t)(s / 32) * 40 + d] - 127;
                CHECK(lv == ldexp(st, e));
            }
        af_inputs_free(&in);
        af_tensors_free(&t);
    }
    CHECK_DONE("test_layout_gen");
}
