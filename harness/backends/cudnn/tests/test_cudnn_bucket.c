/* test_cudnn_bucket.c — the padded case that serves a case (cudnn_bucket.h), on the CPU.
 *
 * Specification: a length's bucket is >= it, a multiple of 128, at most 12.5 % above it
 * past the floor, and monotone; cases with lengths in one bucket get padded cases that
 * differ only in their per-sequence lengths (so one graph description serves them), keep
 * every actual length and validate; thd, paged and fp8 cases are not bucketed, nor dropout
 * cases whose padded keep mask would exceed 1 GiB; staging copies every row of the case's
 * buffers in with the stride gap after each (a sequence's padding rows and the gaps too:
 * what a stale-data probe put there reaches the kernel; zeros in the rows the bucket adds)
 * and its output rows (gaps too) and guard margins back out; a case whose lengths are already buckets (not padded) runs in place:
 * its padded case's layout is its own, tensor by tensor.
 */
#include <stdio.h>
#include <string.h>

#include "backends/cudnn/cudnn_bucket.h"
#include "model/tensors.h"
#include "backends/cudnn/tests/case_text.h"
#include "util/check.h"

static void test_lengths(void) {
    CHECK(af_cudnn_bucket_len(1) == AF_CUDNN_BUCKET_FLOOR);
    CHECK(af_cudnn_bucket_len(1024) == 1024);
    CHECK(af_cudnn_bucket_len(1025) == 1152);
    CHECK(af_cudnn_bucket_len(2049) == 2304);
    CHECK(af_cudnn_bucket_len(100000) == 106496);
    CHECK(af_cudnn_bucket_len(AF_MAX_SEQLEN) == AF_MAX_SEQLEN);
    int prev = 0;
    for (int s = 1; s <= AF_MAX_SEQLEN; s++) {
        int b = af_cudnn_bucket_len(s);
        CHECK_MSG(b >= s && b % 128 == 0 && b >= prev && b <= AF_MAX_SEQLEN, "s=%d bucket=%d", s, b);
        CHECK_MSG(s <= AF_CUDNN_BUCKET_FLOOR || (double)b <= 1.125 * s + 1, "s=%d bucket=%d", s, b);
        prev = b;
    }
}

static const char *const base = "dtype = bf16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nhead_dim_qk = 64\n"
                                "head_dim_v = 64\nalign = bottom_right\nbackward = yes\n";

static af_case with_lengths(const char *extra, int sq, int skv) {
    char text[1024];
    snprintf(text, sizeof text, "%sseqlen_q = %d\nseqlen_kv = %d\n%s", base, sq, skv, extra);
    return cudnn_test_case(text);
}

static void test_padded_case(void) {
    af_case a = with_lengths("mask = causal\n", 300, 700), b = with_lengths("mask = causal\n", 1000, 17), pa, pb;
    CHECK(af_cudnn_bucket_case(&a, &pa) && af_cudnn_bucket_case(&b, &pb));
    af_error err;
    CHECK(af_case_validate(&pa, &err) == 0 && af_case_validate(&pb, &err) == 0);
    CHECK(pa.seqlen_q == 1024 && pa.seqlen_kv == 1024 && pa.has_seqlens);
    for (int i = 0; i < a.batch; i++) {
        CHECK(af_case_len_q(&pa, i) == 300 && af_case_len_kv(&pa, i) == 700);
        CHECK(af_case_len_q(&pb, i) == 1000 && af_case_len_kv(&pb, i) == 17);
    }
    /* the two padded cases differ in their per-sequence lengths only */
    memcpy(pb.seqlens_q, pa.seqlens_q, sizeof pa.seqlens_q);
    memcpy(pb.seqlens_kv, pa.seqlens_kv, sizeof pa.seqlens_kv);
    char ta[4096], tb[4096];
    af_case_print(&pa, ta, sizeof ta);
    af_case_print(&pb, tb, sizeof tb);
    CHECK(strcmp(ta, tb) == 0);
    /* a padded case keeps its own lists; a case already at its buckets is its own */
    af_case c = with_lengths("seqlens_q = 5,1024\nseqlens_kv = 9,3\nmask = padding_causal\n", 1024, 1024), pc;
    CHECK(!af_cudnn_bucket_case(&c, &pc));
    af_case d = with_lengths("seqlens_q = 5,300\nseqlens_kv = 9,3\nmask = padding_causal\n", 300, 1100), pd;
    CHECK(af_cudnn_bucket_case(&d, &pd) && pd.seqlen_kv == 1152 && pd.seqlens_q[1] == 300 && pd.seqlens_kv[0] == 9);
    /* what is not served through a padded case */
    char why[128];
    af_case thd = with_lengths("seqlens_q = 5,30\nseqlens_kv = 9,30\nlayout = thd\nmask = padding_causal\n", 30, 30);
    CHECK(!af_cudnn_bucket_applies(&thd, why, sizeof why) && strstr(why, "thd"));
    CHECK(!af_cudnn_bucket_case(&thd, &pd));
    af_case paged =
        cudnn_test_case("dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 2\nseqlen_q = 32\nseqlen_kv = 192\n"
                        "head_dim_qk = 64\nhead_dim_v = 64\npage_size = 32\n");
    CHECK(!af_cudnn_bucket_applies(&paged, why, sizeof why) && strstr(why, "paged"));
    af_case fp8 =
        cudnn_test_case("dtype = fp8_e4m3\nbatch = 1\nheads_q = 2\nheads_kv = 2\nseqlen_q = 32\nseqlen_kv = 32\n"
                        "head_dim_qk = 128\nhead_dim_v = 128\n");
    CHECK(!af_cudnn_bucket_applies(&fp8, why, sizeof why));
}

/* Fill every data byte of the buffers in bufs (a bit per af_buffer_id) with a pattern that
 * names its position. */
static void fill_pattern(af_tensors *t, unsigned bufs) {
    for (int i = 0; i < AF_BUF_COUNT; i++)
        for (size_t k = 0; (bufs & (1u << i)) && t->buf[i] && k < t->bytes[i]; k++)
            ((unsigned char *)t->buf[i])[k] = (unsigned char)(k * 7 + i + 1);
}

/* Flip byte `byte` of row (b, h, s) of tensor id in x. */
static void poke_row(af_tensors *x, af_tensor_id id, int b, int h, int s, int byte) {
    const af_tensor_view *v = &x->plan.view[id];
    size_t elem = (size_t)af_storage_bytes(v->storage);
    ((unsigned char *)x->buf[v->buffer])[(size_t)af_layout_offset(&x->plan, id, b, h, s, 0) * elem + byte] ^= 0x5A;
}

/* Does padded p give tensor id more rows than c? */
static bool tp_adds_rows(const af_case *c, const af_case *p, af_tensor_id id) {
    return id == AF_T_K || id == AF_T_V ? p->seqlen_kv > c->seqlen_kv : p->seqlen_q > c->seqlen_q;
}

/* Row (b, h, s) of tensor id equal in x and y, with the stride gap after it (gap elements). */
static int row_equal_gap(const af_tensors *x, const af_tensors *y, af_tensor_id id, int b, int h, int s, int gap) {
    const af_tensor_view *vx = &x->plan.view[id], *vy = &y->plan.view[id];
    size_t elem = (size_t)af_storage_bytes(vx->storage), row = elem * (size_t)(vx->D + gap);
    return memcmp((char *)x->buf[vx->buffer] + (size_t)af_layout_offset(&x->plan, id, b, h, s, 0) * elem,
                  (char *)y->buf[vy->buffer] + (size_t)af_layout_offset(&y->plan, id, b, h, s, 0) * elem, row) == 0;
}

static int row_zero(const af_tensors *x, af_tensor_id id, int b, int h, int s) {
    const af_tensor_view *v = &x->plan.view[id];
    size_t elem = (size_t)af_storage_bytes(v->storage);
    const unsigned char *p =
        (unsigned char *)x->buf[v->buffer] + (size_t)af_layout_offset(&x->plan, id, b, h, s, 0) * elem;
    for (size_t k = 0; k < elem * (size_t)v->D; k++)
        if (p[k]) return 0;
    return 1;
}

/* Staging c (lines, maxima sq x skv) into its padded case and back: every row of c's
 * buffers (its own padding rows too: s < its maxima) with the stride gap after it in,
 * zeros in the rows the bucket adds; out, every output row of c (gap too) and the guard
 * margins. */
static void test_staging(const char *lines, int sq, int skv) {
    af_case c = with_lengths(lines, sq, skv), p;
    CHECK(af_cudnn_bucket_case(&c, &p) && !af_cudnn_bucket_in_place(&c, &p));
    static af_tensors t, tp;
    char why[256];
    CHECK(af_tensors_alloc(&t, &c, why, sizeof why) == 0);
    fill_pattern(&t, ~0u);
    CHECK(af_cudnn_stage_in(&c, &t, &p, &tp, NULL, why, sizeof why) == 0);
    for (int id = 0; id < AF_T_COUNT; id++) {
        const af_tensor_view *v = &t.plan.view[id], *vp = &tp.plan.view[id];
        if (!t.buf[v->buffer]) continue;
        for (int b = 0; b < c.batch; b++)
            for (int h = 0; h < v->H; h++) {
                for (int s = 0; s < v->S; s++)
                    CHECK_MSG(row_equal_gap(&t, &tp, (af_tensor_id)id, b, h, s, id == AF_T_LSE ? 0 : c.stride_gap),
                              "%s b%d h%d s%d", af_tensor_name((af_tensor_id)id), b, h, s);
                for (int s = v->S; s < vp->S; s += 97) CHECK(row_zero(&tp, (af_tensor_id)id, b, h, s));
            }
    }
    /* a "kernel" writes every output row of the padded buffers and one byte past O */
    static af_tensors before;
    CHECK(af_tensors_alloc(&before, &c, why, sizeof why) == 0);
    af_tensors_copy(&before, &t);
    fill_pattern(&tp, af_tensors_output_buffers(&tp, &p)); /* as a run writes them */
    tp.alloc[AF_BUF_O][AF_GUARD_BYTES + tp.bytes[AF_BUF_O]] ^= 0xFF;
    af_run_info info;
    memset(&info, 0, sizeof info);
    af_cudnn_stage_out(&c, &t, &tp, NULL, &info);
    CHECK(info.n_input_writes == 0);
    for (int id = 0; id < AF_T_COUNT; id++) {
        const af_tensor_view *v = &t.plan.view[id];
        if (!t.buf[v->buffer]) continue;
        bool out = id == AF_T_O || id == AF_T_LSE || id == AF_T_DQ || id == AF_T_DK || id == AF_T_DV;
        for (int b = 0; b < c.batch; b++)
            for (int h = 0; h < v->H; h++)
                for (int s = 0; s < v->S; s++)
                    CHECK(row_equal_gap(&t, out ? &tp : &before, (af_tensor_id)id, b, h, s,
                                        id == AF_T_LSE ? 0 : c.stride_gap));
    }
    CHECK(t.alloc[AF_BUF_O][AF_GUARD_BYTES + t.bytes[AF_BUF_O]] != AF_GUARD_BYTE);
    CHECK(t.alloc[AF_BUF_Q][0] == AF_GUARD_BYTE);
    af_tensors_free(&tp);
    /* a "kernel" that writes its inputs: an element of a row the case has (Q b0 h0 s1, or
     * dO's with backward) comes back into t, where the judge's mutation check compares it
     * with the template; a byte of a row only the bucket has (the input whose maximum the
     * bucket raises), or of a stride gap margin there, is reported by the backend itself */
    af_tensors_copy(&t, &before);
    CHECK(af_cudnn_stage_in(&c, &t, &p, &tp, NULL, why, sizeof why) == 0);
    af_tensor_id in_row = c.backward ? AF_T_DO : AF_T_Q;
    poke_row(&tp, in_row, 0, 0, 1, 0);
    memset(&info, 0, sizeof info);
    af_cudnn_stage_out(&c, &t, &tp, NULL, &info);
    CHECK(info.n_input_writes == 0);
    CHECK(!row_equal_gap(&t, &before, in_row, 0, 0, 1, 0));
    CHECK(row_equal_gap(&t, &before, in_row, 0, 0, 2, 0));
    af_tensors_free(&tp);
    af_tensor_id added = tp_adds_rows(&c, &p, AF_T_K) ? AF_T_K : AF_T_Q;
    af_tensors_copy(&t, &before);
    CHECK(af_cudnn_stage_in(&c, &t, &p, &tp, NULL, why, sizeof why) == 0);
    poke_row(&tp, added, c.batch - 1, tp.plan.view[added].H - 1, t.plan.view[added].S, 3);
    memset(&info, 0, sizeof info);
    af_cudnn_stage_out(&c, &t, &tp, NULL, &info);
    CHECK_MSG(info.n_input_writes == 1 && info.input_writes[0].tensor == (af_tensor_id)tp.plan.view[added].buffer &&
                  strstr(info.input_writes[0].where, "padded buffer"),
              "%d input writes", info.n_input_writes);
    for (int id = 0; id < AF_T_COUNT; id++) /* the case's own rows: as before */
        if (t.buf[t.plan.view[id].buffer] && (id == AF_T_Q || id == AF_T_K || id == AF_T_V || id == AF_T_DO))
            for (int s = 0; s < t.plan.view[id].S; s++)
                CHECK(row_equal_gap(&t, &before, (af_tensor_id)id, 0, 0, s, c.stride_gap));
    af_tensors_free(&before);
    af_tensors_free(&tp);
    af_tensors_free(&t);
}

/* Byte offset of the first margin byte after row (b, h, s) of tensor id in x. */
static size_t margin_at(const af_tensors *x, const af_case *c, af_tensor_id id, int b, int h, int s) {
    const af_tensor_view *v = &x->plan.view[id];
    size_t elem = (size_t)af_storage_bytes(v->storage);
    return ((size_t)af_layout_offset(&x->plan, id, b, h, s, 0) + (size_t)(v->D + c->stride_gap)) * elem;
}

/* The gap margins (gap_h, gap_s, gap_b) of a staged case: every byte of c's buffers, rows
 * and margins, goes into the padded buffers and back (a round trip through an untouched
 * padded case gives c's buffers byte for byte, with no input write reported); a write into
 * O's margin after its first row comes back; one into Q's comes back into t (the judge's
 * mutation check sees it) and is not the backend's to report, while one into the margin of
 * a row only the bucket has is. With a pool (its blocks and its margin map kept from the
 * runs before, of this case or of another layout), the same. */
static void test_margins(const char *lines, int sq, int skv, af_cudnn_stage_pool *pool) {
    af_case c = with_lengths(lines, sq, skv), p;
    CHECK(af_cudnn_bucket_case(&c, &p) && !af_cudnn_bucket_in_place(&c, &p));
    CHECK(c.gap_h > 0 && c.gap_s > 0 && c.gap_b > 0);
    static af_tensors t, back, tp;
    char why[256];
    CHECK(af_tensors_alloc(&t, &c, why, sizeof why) == 0 && af_tensors_alloc(&back, &c, why, sizeof why) == 0);
    fill_pattern(&t, ~0u);
    for (int i = 0; i < AF_BUF_COUNT; i++)
        if (back.buf[i]) memset(back.buf[i], 0, back.bytes[i]);
    CHECK(af_cudnn_stage_in(&c, &t, &p, &tp, pool, why, sizeof why) == 0);
    af_run_info info;
    memset(&info, 0, sizeof info);
    af_cudnn_stage_out(&c, &back, &tp, pool, &info);
    CHECK(info.n_input_writes == 0);
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        if (!t.buf[i]) continue;
        size_t k = 0;
        while (k < t.bytes[i] && ((unsigned char *)t.buf[i])[k] == ((unsigned char *)back.buf[i])[k]) k++;
        CHECK_MSG(k == t.bytes[i], "%s: buffer %d differs at byte %zu of %zu after the round trip", lines, i, k,
                  t.bytes[i]);
    }
    af_cudnn_stage_release(&tp, pool);
    /* writes into margins */
    CHECK(af_cudnn_stage_in(&c, &t, &p, &tp, pool, why, sizeof why) == 0);
    size_t mo = margin_at(&t, &c, AF_T_O, 0, 0, 0), mq = margin_at(&t, &c, AF_T_Q, 0, 0, 0);
    ((unsigned char *)tp.buf[tp.plan.view[AF_T_O].buffer])[margin_at(&tp, &c, AF_T_O, 0, 0, 0)] ^= 0x33;
    ((unsigned char *)tp.buf[tp.plan.view[AF_T_Q].buffer])[margin_at(&tp, &c, AF_T_Q, 0, 0, 0)] ^= 0x33;
    af_tensors_copy(&back, &t);
    memset(&info, 0, sizeof info);
    af_cudnn_stage_out(&c, &back, &tp, pool, &info);
    CHECK(((unsigned char *)back.buf[back.plan.view[AF_T_O].buffer])[mo] ==
          (((unsigned char *)t.buf[t.plan.view[AF_T_O].buffer])[mo] ^ 0x33));
    CHECK(((unsigned char *)back.buf[back.plan.view[AF_T_Q].buffer])[mq] ==
          (((unsigned char *)t.buf[t.plan.view[AF_T_Q].buffer])[mq] ^ 0x33));
    CHECK(info.n_input_writes == 0);
    af_cudnn_stage_release(&tp, pool);
    af_tensor_id added = tp_adds_rows(&c, &p, AF_T_K) ? AF_T_K : AF_T_Q;
    CHECK(af_cudnn_stage_in(&c, &t, &p, &tp, pool, why, sizeof why) == 0);
    ((unsigned char *)tp.buf[tp.plan.view[added].buffer])[margin_at(&tp, &c, added, 0, 0, t.plan.view[added].S)] ^=
        0x33;
    memset(&info, 0, sizeof info);
    af_cudnn_stage_out(&c, &back, &tp, pool, &info);
    CHECK(info.n_input_writes == 1);
    af_cudnn_stage_release(&tp, pool);
    af_tensors_free(&back);
    af_tensors_free(&t);
}

/* The pool of staged blocks: staging again from blocks a run left dirty (every byte, guards
 * too) gives the padded buffers byte for byte as fresh blocks do; the blocks are reused
 * (the pool gives back what it took), and it keeps no more than its limits. */
static void test_stage_pool(const char *lines, int sq, int skv) {
    af_case c = with_lengths(lines, sq, skv), p;
    CHECK(af_cudnn_bucket_case(&c, &p) && !af_cudnn_bucket_in_place(&c, &p));
    static af_tensors t, fresh, tp;
    char why[256];
    CHECK(af_tensors_alloc(&t, &c, why, sizeof why) == 0);
    fill_pattern(&t, ~0u);
    CHECK(af_cudnn_stage_in(&c, &t, &p, &fresh, NULL, why, sizeof why) == 0);
    af_cudnn_stage_pool pool;
    memset(&pool, 0, sizeof pool);
    CHECK(af_cudnn_stage_in(&c, &t, &p, &tp, &pool, why, sizeof why) == 0);
    for (int i = 0; i < AF_BUF_COUNT; i++) /* a run that wrote every byte, guards included */
        if (tp.alloc[i]) memset(tp.alloc[i], 0x5C, tp.bytes[i] + 2 * AF_GUARD_BYTES);
    void *first = tp.alloc[AF_BUF_O];
    af_cudnn_stage_release(&tp, &pool);
    long long held = af_cudnn_stage_pool_bytes(&pool);
    CHECK(held > 0 && held <= AF_CUDNN_STAGE_KEEP_BYTES);
    CHECK(af_cudnn_stage_in(&c, &t, &p, &tp, &pool, why, sizeof why) == 0);
    bool reused = false;
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        CHECK((fresh.alloc[i] == NULL) == (tp.alloc[i] == NULL));
        if (!tp.alloc[i]) continue;
        reused = reused || tp.alloc[i] == first;
        CHECK(tp.bytes[i] == fresh.bytes[i]);
        CHECK_MSG(memcmp(tp.alloc[i], fresh.alloc[i], tp.bytes[i] + 2 * AF_GUARD_BYTES) == 0,
                  "%s: buffer %d differs from a fresh staging", lines, i);
    }
    CHECK(reused);
    CHECK(af_cudnn_stage_pool_bytes(&pool) < held); /* what it gave is out of it */
    af_cudnn_stage_release(&tp, &pool);
    CHECK(af_cudnn_stage_pool_bytes(&pool) == held);
    af_cudnn_stage_release(&tp, &pool); /* an empty copy: nothing */
    CHECK(af_cudnn_stage_pool_bytes(&pool) == held);
    af_cudnn_stage_pool_free(&pool);
    CHECK(af_cudnn_stage_pool_bytes(&pool) == 0);
    af_tensors_free(&fresh);
    af_tensors_free(&t);
}

/* The pool's limits: blocks over AF_CUDNN_STAGE_KEEP_BYTES are not kept, at most
 * AF_CUDNN_STAGE_KEEP blocks, the oldest given up first. */
static void test_stage_pool_limits(void) {
    af_cudnn_stage_pool pool;
    memset(&pool, 0, sizeof pool);
    af_tensors x;
    for (int k = 0; k < AF_CUDNN_STAGE_KEEP + 5; k++) {
        memset(&x, 0, sizeof x);
        x.alloc[0] = malloc(1000 + (size_t)k);
        x.bytes[0] = 1000 + (size_t)k - 2 * AF_GUARD_BYTES;
        af_cudnn_stage_release(&x, &pool);
    }
    int n = 0;
    size_t smallest = (size_t)-1;
    for (int k = 0; k < AF_CUDNN_STAGE_KEEP; k++)
        if (pool.block[k]) {
            n++;
            if (pool.size[k] < smallest) smallest = pool.size[k];
        }
    CHECK(n == AF_CUDNN_STAGE_KEEP && smallest == 1005); /* the five oldest went */
    memset(&x, 0, sizeof x);
    x.alloc[0] = malloc(16);
    x.bytes[0] = (size_t)AF_CUDNN_STAGE_KEEP_BYTES; /* as if it were that large: not kept */
    af_cudnn_stage_release(&x, &pool);
    CHECK(af_cudnn_stage_pool_bytes(&pool) < AF_CUDNN_STAGE_KEEP_BYTES);
    af_cudnn_stage_pool_free(&pool);
}

/* A case whose lengths are its buckets runs on its own buffers: the padded case (the
 * lengths given) has the same views and buffers, tensor by tensor; one that is not does not. */
static void test_in_place(const char *layout_lines) {
    const int lens[][2] = {{1024, 1024}, {1024, 2048}, {2304, 1152}, {32768, 32768}};
    for (int k = 0; k < 4; k++) {
        af_case c = with_lengths(layout_lines, lens[k][0], lens[k][1]), p;
        CHECK(af_cudnn_bucket_case(&c, &p) && af_cudnn_bucket_in_place(&c, &p));
        af_layout_plan a, b;
        char why[256];
        CHECK(af_layout_plan_make(&c, &a, why, sizeof why) == 0 && af_layout_plan_make(&p, &b, why, sizeof why) == 0);
        CHECK_MSG(memcmp(a.view, b.view, sizeof a.view) == 0 &&
                      memcmp(a.buffer_elems, b.buffer_elems, sizeof a.buffer_elems) == 0,
                  "%s s %d x %d: the padded case's layout differs", layout_lines, lens[k][0], lens[k][1]);
    }
    af_case c = with_lengths(layout_lines, 1024, 1000), p;
    CHECK(af_cudnn_bucket_case(&c, &p) && !af_cudnn_bucket_in_place(&c, &p));
    c = with_lengths(layout_lines, 200, 1024);
    CHECK(af_cudnn_bucket_case(&c, &p) && !af_cudnn_bucket_in_place(&c, &p));
}

/* Dropout: the keep mask is a real input in the padded extents (2 bytes an element), so a
 * case whose padded mask would pass 1 GiB runs on its own graph; small ones are bucketed. */
static void test_dropout_mask_limit(void) {
    CHECK(af_cudnn_dropout_mask_bytes(0.1, 2, 4, 1024, 1024) == 2LL * 2 * 4 * 1024 * 1024);
    CHECK(af_cudnn_dropout_mask_bytes(0.0, 2, 4, 1024, 1024) == 0);
    af_case small = with_lengths("dropout = 0.1 3 0\n", 100, 300), ps;
    CHECK(af_cudnn_bucket_applies(&small, NULL, 0) && af_cudnn_bucket_case(&small, &ps));
    CHECK(ps.seqlen_q == 1024 && ps.seqlen_kv == 1024 && ps.dropout_p == 0.1 && ps.dropout_seed == 3);
    /* b 2, hq 4, buckets 22528 x 22528: 2 * 8 * 22528^2 bytes, far over 1 GiB */
    af_case big = with_lengths("dropout = 0.5 3 0\n", 22000, 22000);
    char why[128] = "";
    CHECK(!af_cudnn_bucket_applies(&big, why, sizeof why) && strstr(why, "1 GiB"));
    CHECK(!af_cudnn_bucket_case(&big, &ps) && ps.seqlen_q == 22000);
}

int main(void) {
    test_lengths();
    test_padded_case();
    test_dropout_mask_limit();
    test_staging("layout = bshd\nmask = causal\n", 200, 200);
    test_staging("layout = sbhd\nstride_gap = 8\n", 200, 200);
    test_staging("layout = bhsd\n", 200, 200);
    test_staging("layout = bshd\npacking = kv\nmask = causal\n", 200, 200);
    /* per-sequence lengths: the rows between a sequence's length and the maxima travel too */
    test_staging("seqlens_q = 5,300\nseqlens_kv = 9,3\nmask = padding_causal\nlayout = bshd\n", 300, 1100);
    test_staging("seqlens_q = 17,2\nseqlens_kv = 40,1030\nmask = padding\nlayout = sbhd\nstride_gap = 8\n", 40, 1030);
    test_stage_pool("layout = bshd\nmask = causal\n", 200, 700);
    test_stage_pool("layout = bhsd\ngap_h = 4\ngap_s = 2\ngap_b = 9\n", 1030, 200);
    test_stage_pool_limits();
    static af_cudnn_stage_pool pool; /* one pool through every layout below */
    static const struct {
        const char *lines;
        int sq, skv;
    } gaps[] = {
        {"layout = bshd\ngap_h = 1\ngap_s = 3\ngap_b = 5\nmask = causal\n", 200, 1030},
        {"layout = sbhd\ngap_h = 2\ngap_s = 7\ngap_b = 1\nstride_gap = 8\n", 200, 200},
        {"layout = bhsd\ngap_h = 4\ngap_s = 2\ngap_b = 9\n", 1030, 200},
        {"layout = bshd\npacking = kv\ngap_h = 1\ngap_s = 2\ngap_b = 3\n", 200, 300},
        {"seqlens_q = 17,2\nseqlens_kv = 40,900\nmask = padding\nlayout = sbhd\ngap_h = 3\ngap_s = 1\ngap_b = 2\n", 40,
         900},
    };
    for (size_t k = 0; k < sizeof gaps / sizeof gaps[0]; k++) /* fresh, then the pool twice (its map kept) */
        for (int m = 0; m < 3; m++) test_margins(gaps[k].lines, gaps[k].sq, gaps[k].skv, m ? &pool : NULL);
    CHECK(af_cudnn_stage_pool_bytes(&pool) > 0 && pool.margins.valid);
    af_cudnn_stage_pool_free(&pool);
    test_in_place("layout = bshd\nmask = causal\n");
    test_in_place("layout = sbhd\nstride_gap = 8\n");
    test_in_place("layout = bhsd\n");
    test_in_place("layout = bshd\npacking = kv\nmask = causal\n");
    CHECK_DONE("test_cudnn_bucket");
}
