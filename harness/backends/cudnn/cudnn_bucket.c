/* cudnn_bucket.c — the padded case that serves a case (backends/cudnn/cudnn_bucket.h). */
#include "backends/cudnn/cudnn_bucket.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int af_cudnn_bucket_len(int s) {
    if (s <= AF_CUDNN_BUCKET_FLOOR) return AF_CUDNN_BUCKET_FLOOR;
    long pow2 = 1;
    while (pow2 < s) pow2 <<= 1;
    long granule = pow2 / 16; /* 2^k < s <= 2^(k+1): 2^k / 8, 8 buckets per octave */
    long b = (s + granule - 1) / granule * granule;
    return (int)(b > AF_MAX_SEQLEN && s <= AF_MAX_SEQLEN ? AF_MAX_SEQLEN : b);
}

long long af_cudnn_dropout_mask_bytes(double p, int b, int hq, int sq, int skv) {
    return p != 0.0 ? 2LL * b * hq * sq * skv : 0;
}

bool af_cudnn_bucket_applies(const af_case *c, char *why, size_t cap) {
    const char *no = NULL;
    if (c->dtype != AF_DT_FP16 && c->dtype != AF_DT_BF16)
        no = "only fp16 / bf16 cases share padded graphs";
    else if (c->layout == AF_LAYOUT_THD)
        no = "thd: the ragged offsets follow the actual tokens";
    else if (c->page_size)
        no = "paged KV: the page table follows the actual pages";
    else if (c->cp_size > 1)
        no = "context parallelism";
    else if (af_cudnn_dropout_mask_bytes(c->dropout_p, c->batch, c->heads_q, af_cudnn_bucket_len(c->seqlen_q),
                                         af_cudnn_bucket_len(c->seqlen_kv)) > AF_CUDNN_DROPOUT_MASK_MAX)
        no = "dropout: the padded case's keep mask would exceed 1 GiB";
    if (no && why && cap) snprintf(why, cap, "%s", no);
    return no == NULL;
}

bool af_cudnn_bucket_case(const af_case *c, af_case *padded) {
    *padded = *c;
    if (!af_cudnn_bucket_applies(c, NULL, 0)) return false;
    int sq = af_cudnn_bucket_len(c->seqlen_q), skv = af_cudnn_bucket_len(c->seqlen_kv);
    if (c->has_seqlens && sq == c->seqlen_q && skv == c->seqlen_kv) return false;
    for (int b = 0; b < c->batch; b++) {
        padded->seqlens_q[b] = af_case_len_q(c, b);
        padded->seqlens_kv[b] = af_case_len_kv(c, b);
    }
    padded->has_seqlens = true;
    padded->seqlen_q = sq;
    padded->seqlen_kv = skv;
    return true;
}

bool af_cudnn_bucket_in_place(const af_case *c, const af_case *padded) {
    return padded->seqlen_q == c->seqlen_q && padded->seqlen_kv == c->seqlen_kv;
}

void af_cudnn_bucket_note(const af_case *padded, char *buf, size_t cap) {
    snprintf(buf, cap, "padded s_q=%d s_kv=%d", padded->seqlen_q, padded->seqlen_kv);
}

static bool is_output(af_tensor_id id) {
    return id == AF_T_O || id == AF_T_LSE || id == AF_T_DQ || id == AF_T_DK || id == AF_T_DV;
}

static bool is_input(af_tensor_id id) { return id == AF_T_Q || id == AF_T_K || id == AF_T_V || id == AF_T_DO; }

/* The tensor that buffer buf is first of under pl (its only one, or K of packed K / V): the
 * one a write into the buffer is reported against; AF_T_NONE when no view uses it. */
static af_tensor_id buffer_owner(const af_layout_plan *pl, int buf) {
    for (int id = 0; id < AF_T_COUNT; id++)
        if ((int)pl->view[id].buffer == buf) return (af_tensor_id)id;
    return AF_T_NONE;
}

/* Bytes of a row of tensor id: its head_dim elements and the stride gap after them
 * (model/layout.c: a vector is D + stride_gap elements; LSE has none). */
static size_t row_bytes(const af_case *c, const af_layout_plan *pl, af_tensor_id id) {
    const af_tensor_view *v = &pl->view[id];
    return (size_t)af_storage_bytes(v->storage) * (size_t)(v->D + (id == AF_T_LSE ? 0 : c->stride_gap));
}

/* Byte offset of row (b, h, s) of tensor id in its buffer's data. */
static size_t row_at(const af_layout_plan *pl, af_tensor_id id, int b, int h, int s) {
    return (size_t)af_layout_offset(pl, id, b, h, s, 0) * (size_t)af_storage_bytes(pl->view[id].storage);
}

/* Copy every row tensor id of case c has in its buffers (each sequence's padding rows too,
 * s < c's maxima: not bucketed, so never ragged), each with its stride gap (row_bytes),
 * from buffers src (plan sp) to dst (plan dp). */
static void copy_rows(const af_case *c, af_tensor_id id, const af_layout_plan *sp, void *const *src,
                      const af_layout_plan *dp, void *const *dst) {
    const af_tensor_view *sv = &sp->view[id], *dv = &dp->view[id];
    if (!src[sv->buffer] || !dst[dv->buffer]) return;
    size_t row = row_bytes(c, sp, id);
    int len = sv->S < dv->S ? sv->S : dv->S; /* the case's maxima: its rows in its buffers */
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < sv->H; h++)
            for (int s = 0; s < len; s++)
                memcpy((char *)dst[dv->buffer] + row_at(dp, id, b, h, s),
                       (const char *)src[sv->buffer] + row_at(sp, id, b, h, s), row);
}

/* A row of a buffer (bytes from its data start): [start, end) holds the row's head_dim
 * elements and its stride gap; the margin after it runs to the next row's start (or the
 * buffer's end): the gap_h / gap_s / gap_b elements no view owns. */
typedef struct {
    int64_t start, end;
    int id, b, h, s;
} row_span;

static int span_cmp(const void *a, const void *b) {
    int64_t x = ((const row_span *)a)->start, y = ((const row_span *)b)->start;
    return (x > y) - (x < y);
}

/* Every row of buffer `buf` under plan pl with s < its view's S (its tensors, each
 * sequence's padding rows too), sorted by start; NULL when out of memory. */
static row_span *buffer_rows(const af_case *c, const af_layout_plan *pl, int buf, size_t *n) {
    size_t count = 0;
    for (int id = 0; id < AF_T_COUNT; id++)
        if ((int)pl->view[id].buffer == buf) count += (size_t)c->batch * pl->view[id].H * pl->view[id].S;
    row_span *r = malloc((count ? count : 1) * sizeof *r);
    if (!r) return NULL;
    size_t k = 0;
    for (int id = 0; id < AF_T_COUNT; id++) {
        const af_tensor_view *v = &pl->view[id];
        if ((int)v->buffer != buf) continue;
        int64_t len = (int64_t)row_bytes(c, pl, (af_tensor_id)id);
        for (int b = 0; b < c->batch; b++)
            for (int h = 0; h < v->H; h++)
                for (int s = 0; s < v->S; s++, k++) {
                    r[k].start = (int64_t)row_at(pl, (af_tensor_id)id, b, h, s);
                    r[k].end = r[k].start + len;
                    r[k].id = id, r[k].b = b, r[k].h = h, r[k].s = s;
                }
    }
    qsort(r, count, sizeof *r, span_cmp);
    *n = count;
    return r;
}

/* The margin after row k of r (n rows, a buffer of `bytes`). */
static int64_t margin_after(const row_span *r, size_t n, size_t k, size_t bytes) {
    int64_t next = k + 1 < n ? r[k + 1].start : (int64_t)bytes;
    return next > r[k].end ? next - r[k].end : 0;
}

/* The index of the row that starts at `start` in r (sorted), or -1. */
static long find_row(const row_span *r, size_t n, int64_t start) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r[mid].start < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && r[lo].start == start ? (long)lo : -1;
}

/* The gap margins of c's buffers against the padded case's (same batch, heads and strides
 * inside a row; more rows per sequence), as moves of bytes between the two buffers: the
 * margin after a row of c goes after the same row of the padded case as far as both reach
 * (the gap_h / gap_s after a head or a token); what c's margin has beyond that (after its
 * last row along s: the outer axes' gaps) goes after the padded case's last row along s
 * (same tensor, b, h) at the same place, where that margin is as long. The bytes before a
 * buffer's first row go to the padded buffer's first bytes. The padded case has c's batch
 * and stride gap, so c serves both plans' rows. Buffer i's moves are appended to *m; 0, or
 * -1 when out of memory. */
static int margin_moves(const af_case *c, const af_tensors *t, const af_tensors *tp, int i, af_cudnn_margin_moves *m) {
    size_t nc = 0, np = 0, cap = 0;
    row_span *rc = buffer_rows(c, &t->plan, i, &nc), *rp = rc ? buffer_rows(c, &tp->plan, i, &np) : NULL;
    int rc_status = rc && rp ? 0 : -1;
#define MOVE(ta, pa, len)                                                                                              \
    do {                                                                                                               \
        if (m->n == cap) {                                                                                             \
            cap = cap ? 2 * cap : 1024;                                                                                \
            af_cudnn_margin_move *grown = realloc(m->move, cap * sizeof *grown);                                       \
            if (!grown) {                                                                                              \
                rc_status = -1;                                                                                        \
                goto out;                                                                                              \
            }                                                                                                          \
            m->move = grown;                                                                                           \
        }                                                                                                              \
        m->move[m->n++] = (af_cudnn_margin_move){(ta), (pa), (len)};                                                   \
    } while (0)
    if (rc_status) goto out;
    if (nc && np && rc[0].start == rp[0].start && rc[0].start > 0) MOVE(0, 0, rc[0].start);
    for (size_t k = 0; k < nc; k++) {
        int64_t lc = margin_after(rc, nc, k, t->bytes[i]);
        if (!lc) continue;
        af_tensor_id id = (af_tensor_id)rc[k].id;
        long kp = find_row(rp, np, (int64_t)row_at(&tp->plan, id, rc[k].b, rc[k].h, rc[k].s));
        if (kp < 0) continue;
        int64_t lp = margin_after(rp, np, (size_t)kp, tp->bytes[i]), mm = lc < lp ? lc : lp;
        MOVE(rc[k].end, rp[kp].end, mm);
        if (lc > mm && rc[k].s == t->plan.view[id].S - 1) {
            long kl = find_row(rp, np, (int64_t)row_at(&tp->plan, id, rc[k].b, rc[k].h, tp->plan.view[id].S - 1));
            if (kl >= 0 && margin_after(rp, np, (size_t)kl, tp->bytes[i]) == lc)
                MOVE(rc[k].end + mm, rp[kl].end + mm, lc - mm);
        }
    }
#undef MOVE
out:
    free(rc);
    free(rp);
    return rc_status;
}

/* The views' geometry that places rows (not the thd or paged metadata: never bucketed). */
static bool same_rows(const af_layout_plan *a, const af_layout_plan *b) {
    for (int id = 0; id < AF_T_COUNT; id++) {
        const af_tensor_view *x = &a->view[id], *y = &b->view[id];
        if (x->buffer != y->buffer || x->storage != y->storage || x->B != y->B || x->H != y->H || x->S != y->S ||
            x->D != y->D || x->base != y->base || x->stride_b != y->stride_b || x->stride_h != y->stride_h ||
            x->stride_s != y->stride_s)
            return false;
    }
    return memcmp(a->buffer_elems, b->buffer_elems, sizeof a->buffer_elems) == 0;
}

static void map_clear(af_cudnn_margin_map *map) {
    for (int i = 0; i < AF_BUF_COUNT; i++) free(map->buf[i].move);
    memset(map, 0, sizeof *map);
}

/* The margin map of (c in t, its padded case in tp): pool's when it is the one of this pair,
 * else made (and kept in pool, or in *own when pool is NULL). NULL when out of memory. */
static const af_cudnn_margin_map *margin_map(const af_case *c, const af_tensors *t, const af_tensors *tp,
                                             af_cudnn_stage_pool *pool, af_cudnn_margin_map *own) {
    af_cudnn_margin_map *map = pool ? &pool->margins : own;
    if (pool && map->valid && map->batch == c->batch && map->stride_gap == c->stride_gap &&
        same_rows(&map->case_plan, &t->plan) && same_rows(&map->padded_plan, &tp->plan))
        return map;
    map_clear(map);
    for (int i = 0; i < AF_BUF_COUNT; i++)
        if (t->buf[i] && tp->buf[i] && margin_moves(c, t, tp, i, &map->buf[i])) {
            map_clear(map);
            return NULL;
        }
    map->case_plan = t->plan;
    map->padded_plan = tp->plan;
    map->batch = c->batch;
    map->stride_gap = c->stride_gap;
    map->valid = true;
    return map;
}

/* The margins' moves applied: dir 0 from t into tp; 1 from tp into t, the bytes of tp's input
 * buffers zeroed after (af_cudnn_stage_out's check). 0, or -1 when out of memory (the
 * margins are then not carried). */
static int copy_margins(const af_case *c, af_tensors *t, af_tensors *tp, af_cudnn_stage_pool *pool, int dir) {
    af_cudnn_margin_map own;
    memset(&own, 0, sizeof own);
    const af_cudnn_margin_map *map = margin_map(c, t, tp, pool, &own);
    if (!map) return -1;
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        unsigned char *a = t->buf[i], *z = tp->buf[i];
        bool zero = dir == 1 && is_input(buffer_owner(&tp->plan, i));
        for (size_t k = 0; a && z && k < map->buf[i].n; k++) {
            const af_cudnn_margin_move *mv = &map->buf[i].move[k];
            if (dir == 0)
                memcpy(z + mv->padded_at, a + mv->case_at, (size_t)mv->bytes);
            else {
                memcpy(a + mv->case_at, z + mv->padded_at, (size_t)mv->bytes);
                if (zero) memset(z + mv->padded_at, 0, (size_t)mv->bytes);
            }
        }
    }
    map_clear(&own);
    return 0;
}

void af_cudnn_stage_pool_free(af_cudnn_stage_pool *pool) {
    if (!pool) return;
    for (int k = 0; k < AF_CUDNN_STAGE_KEEP; k++) free(pool->block[k]);
    map_clear(&pool->margins);
    memset(pool, 0, sizeof *pool);
}

long long af_cudnn_stage_pool_bytes(const af_cudnn_stage_pool *pool) {
    long long n = 0;
    for (int k = 0; pool && k < AF_CUDNN_STAGE_KEEP; k++)
        if (pool->block[k]) n += (long long)pool->size[k];
    return n;
}

static void *pool_take(void *ctx, size_t size) {
    af_cudnn_stage_pool *pool = ctx;
    for (int k = 0; k < AF_CUDNN_STAGE_KEEP; k++)
        if (pool->block[k] && pool->size[k] == size) {
            void *b = pool->block[k];
            pool->block[k] = NULL;
            return b;
        }
    return NULL;
}

/* Keep block (size bytes) in pool, the oldest blocks freed while the pool is over its limits. */
static void pool_give(af_cudnn_stage_pool *pool, void *block, size_t size) {
    if ((long long)size > AF_CUDNN_STAGE_KEEP_BYTES) {
        free(block);
        return;
    }
    for (;;) {
        int free_slot = -1, oldest = -1;
        for (int k = 0; k < AF_CUDNN_STAGE_KEEP; k++) {
            if (!pool->block[k]) {
                if (free_slot < 0) free_slot = k;
            } else if (oldest < 0 || pool->age[k] < pool->age[oldest])
                oldest = k;
        }
        if (free_slot >= 0 && af_cudnn_stage_pool_bytes(pool) + (long long)size <= AF_CUDNN_STAGE_KEEP_BYTES) {
            pool->block[free_slot] = block;
            pool->size[free_slot] = size;
            pool->age[free_slot] = ++pool->clock;
            return;
        }
        free(pool->block[oldest]); /* full, or over the bytes: there is one */
        pool->block[oldest] = NULL;
    }
}

void af_cudnn_stage_release(af_tensors *tp, af_cudnn_stage_pool *pool) {
    for (int i = 0; pool && i < AF_BUF_COUNT; i++)
        if (tp->alloc[i]) {
            pool_give(pool, tp->alloc[i], tp->bytes[i] + 2 * AF_GUARD_BYTES);
            tp->alloc[i] = NULL;
        }
    af_tensors_free(tp);
}

int af_cudnn_stage_in(const af_case *c, const af_tensors *t, const af_case *padded, af_tensors *tp,
                      af_cudnn_stage_pool *pool, char *why, size_t cap) {
    af_tensors_mem mem = {pool ? pool_take : NULL, pool, false};
    if (af_tensors_alloc_from(tp, padded, &mem, why, cap)) return -1;
    for (int i = 0; i < AF_BUF_COUNT; i++) /* guards, and every data byte 0 */
        if (tp->alloc[i]) {
            memset(tp->alloc[i], (int)AF_GUARD_BYTE, AF_GUARD_BYTES);
            memset(tp->buf[i], 0, tp->bytes[i]);
            memset(tp->alloc[i] + AF_GUARD_BYTES + tp->bytes[i], (int)AF_GUARD_BYTE, AF_GUARD_BYTES);
        }
    for (int id = 0; id < AF_T_COUNT; id++) copy_rows(c, (af_tensor_id)id, &t->plan, t->buf, &tp->plan, tp->buf);
    if ((c->gap_h || c->gap_s || c->gap_b) && copy_margins(c, (af_tensors *)t, tp, pool, 0)) {
        af_tensors_free(tp);
        snprintf(why, cap, "out of host memory staging the gap margins");
        return -1;
    }
    tp->descale_q = t->descale_q, tp->descale_k = t->descale_k, tp->descale_v = t->descale_v;
    tp->descale_do = t->descale_do, tp->descale_o = t->descale_o;
    tp->descale_dq = t->descale_dq, tp->descale_dk = t->descale_dk, tp->descale_dv = t->descale_dv;
    tp->descale_dp = t->descale_dp;
    return 0;
}

/* Zero the rows copy_rows copies (the same rows and stride gaps) of tensor id in buf. */
static void zero_rows(const af_case *c, af_tensor_id id, const af_layout_plan *pl, void *const *buf, int len) {
    const af_tensor_view *v = &pl->view[id];
    if (!buf[v->buffer]) return;
    size_t row = row_bytes(c, pl, id);
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < v->H; h++)
            for (int s = 0; s < len; s++) memset((char *)buf[v->buffer] + row_at(pl, id, b, h, s), 0, row);
}

/* Whether the rows of buffer buf's tensors under pl (s < their S, each with its stride gap)
 * add up to the buffer's bytes: they tile it, no byte outside a row (no gap margins). */
static bool rows_tile(const af_case *c, const af_layout_plan *pl, int buf, size_t bytes) {
    size_t sum = 0;
    for (int id = 0; id < AF_T_COUNT; id++) {
        const af_tensor_view *v = &pl->view[id];
        if ((int)v->buffer == buf)
            sum += (size_t)c->batch * (size_t)v->H * (size_t)v->S * row_bytes(c, pl, (af_tensor_id)id);
    }
    return sum == bytes;
}

/* Whether the rows s >= from of tensor id in buf (the rows a bucket adds) are all 0. */
static bool rows_zero(const af_case *c, af_tensor_id id, const af_layout_plan *pl, void *const *buf, int from) {
    const af_tensor_view *v = &pl->view[id];
    size_t row = row_bytes(c, pl, id);
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < v->H; h++)
            for (int s = from; s < v->S; s++) {
                const unsigned char *p = (const unsigned char *)buf[v->buffer] + row_at(pl, id, b, h, s);
                for (size_t k = 0; k < row; k++)
                    if (p[k]) return false;
            }
    return true;
}

void af_cudnn_stage_out(const af_case *c, af_tensors *t, af_tensors *tp, af_cudnn_stage_pool *pool, af_run_info *info) {
    for (int id = 0; id < AF_T_COUNT; id++)
        if ((is_output((af_tensor_id)id) && (id == AF_T_O || id == AF_T_LSE || c->backward)) ||
            is_input((af_tensor_id)id))
            copy_rows(c, (af_tensor_id)id, &tp->plan, tp->buf, &t->plan, t->buf);
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        if (!t->alloc[i] || !tp->alloc[i]) continue;
        memcpy(t->alloc[i], tp->alloc[i], AF_GUARD_BYTES);
        memcpy(t->alloc[i] + AF_GUARD_BYTES + t->bytes[i], tp->alloc[i] + AF_GUARD_BYTES + tp->bytes[i],
               AF_GUARD_BYTES);
    }
    /* the gap margins too (outputs: a write into one shows as on c's buffers; inputs: the
     * judge's mutation check compares them), zeroed in tp's inputs for the check below */
    bool margins = !(c->gap_h || c->gap_s || c->gap_b) || copy_margins(c, t, tp, pool, 1) == 0;
    /* What of the inputs' buffers the case does not own (the rows the bucket adds, the
     * gap margins) was staged as 0, so a byte there that is not 0 is the run's write (the
     * case's rows themselves went back into t for the judge's check). Where the padded
     * case's rows tile the buffer (no gap margins), those bytes are the added rows: they
     * are read alone; otherwise the case's rows are zeroed and the whole buffer read. */
    for (int i = 0; i < AF_BUF_COUNT; i++) {
        af_tensor_id owner = buffer_owner(&tp->plan, i);
        if (!margins || !tp->buf[i] || !is_input(owner)) continue;
        bool written = false;
        if (rows_tile(c, &tp->plan, i, tp->bytes[i])) {
            for (int id = 0; id < AF_T_COUNT && !written; id++)
                if ((int)tp->plan.view[id].buffer == i)
                    written = !rows_zero(c, (af_tensor_id)id, &tp->plan, tp->buf, t->plan.view[id].S);
        } else {
            for (int id = 0; id < AF_T_COUNT; id++)
                if ((int)tp->plan.view[id].buffer == i)
                    zero_rows(c, (af_tensor_id)id, &tp->plan, tp->buf, t->plan.view[id].S);
            const unsigned char *p = tp->buf[i];
            size_t k = 0;
            while (k < tp->bytes[i] && p[k] == 0) k++;
            written = k < tp->bytes[i];
        }
        if (written) af_run_info_input_write(info, owner, -1, "a row or gap of the padded buffer the case has not");
    }
}
