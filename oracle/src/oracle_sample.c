/* oracle_sample.c — which query rows and key columns the sampled mode recomputes in
 * MPFR, and what MPFR work costs.
 *
 * Classes, in priority order (class 0 is always taken, the others while the work
 * fits the budget):
 *   0  first and last valid row (key) of each sequence, and both sides of every
 *      place where the visible interval changes shape (a bound switches between
 *      the sequence edge and the diagonal-relative window/causal bound, or the
 *      row becomes empty), for heads 0 and H-1 (first and last kv group);
 *   1  rows at multiples of 128 and their neighbours (i-1, i+1);
 *   2  multiples of 64;  3  multiples of 32 (same neighbours); heads rotate;
 *   4  pseudo-random rows (a fixed hash: the same case samples the same rows), 4 +
 *      sqrt(len * heads) / 8 per sequence, so the set grows with the case.
 * The budget (af_oracle_sample_budgets) grows with the case's total work too, up to the
 * time budget opts.cert_seconds.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "oracle/src/oracle_internal.h"
#include "util/rng.h"

#define RANDOM_PER_SEQUENCE 4

int af_oracle_sample_hashed(int len, int heads) {
    return RANDOM_PER_SEQUENCE + (int)(sqrt((double)len * (double)heads) / 8.0);
}

typedef struct {
    af_sample_item item;
    int cls;
    double work;
} candidate;

typedef struct {
    candidate *c;
    size_t n, cap;
    bool failed;
} candidate_list;

static void push(candidate_list *l, int b, int h, int idx, int cls, double work) {
    if (l->failed) return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        candidate *c = realloc(l->c, cap * sizeof *c);
        if (!c) {
            l->failed = true;
            return;
        }
        l->c = c;
        l->cap = cap;
    }
    l->c[l->n++] = (candidate){{b, h, idx}, cls, work};
}

double af_oracle_row_work(const af_oracle_problem *p, int b, int i) {
    af_mask_keys keys;
    int n = af_mask_visible_keys(&p->mask, b, p->len_q[b], p->len_kv[b], i, &keys);
    double per_key = (double)(p->Dqk + p->Dv) * (p->in->dout ? 2.0 : 1.0);
    return (double)n * per_key;
}

double af_oracle_key_work(const af_oracle_problem *p, int b, int j) {
    int first, last;
    int n = af_mask_rows_seeing_key(&p->mask, p->len_q[b], p->len_kv[b], j, &first, &last);
    return (double)n * (double)(p->Hq / p->Hkv) * 2.0 * (double)(p->Dqk + p->Dv);
}

double af_oracle_total_work(const af_oracle_problem *p) {
    double total = 0.0;
    for (int b = 0; b < p->B; b++) {
        for (int i = 0; i < p->len_q[b]; i++) total += (double)p->Hq * af_oracle_row_work(p, b, i);
        if (p->in->dout)
            for (int j = 0; j < p->len_kv[b]; j++) total += (double)p->Hkv * af_oracle_key_work(p, b, j);
    }
    return total;
}

void af_oracle_sample_budgets(const af_oracle_problem *p, const af_oracle_opts *o, int threads, double *row_budget,
                              double *key_budget) {
    bool backward = p->in->dout != NULL;
    double grow = o->cert_fraction > 0.0 ? o->cert_fraction * af_oracle_total_work(p) : 0.0;
    double cap = o->cert_seconds > 0.0
                     ? o->cert_seconds * (double)(threads > 0 ? threads : 1) / AF_ORACLE_MPFR_UNIT_SECONDS
                     : 0.0;
    double total = fmax(o->mpfr_budget, fmin(grow, cap));
    *row_budget = backward ? 0.5 * total : total;
    *key_budget = backward ? 0.5 * total : 0.0;
}

/* The interval of one row (or key) reduced to its shape: for each bound, either
 * "at the sequence edge" or its offset from the diagonal index. */
typedef struct {
    long long lo, hi;
    bool empty;
} interval_shape;

static interval_shape shape_of(int first, int last, int count, int idx, int edge_hi) {
    interval_shape s;
    s.empty = count == 0;
    s.lo = s.empty ? 0 : (first == 0 ? LLONG_MIN : (long long)first - idx);
    s.hi = s.empty ? 0 : (last == edge_hi ? LLONG_MIN : (long long)last - idx);
    return s;
}

static bool same_shape(interval_shape a, interval_shape b) {
    return a.empty == b.empty && a.lo == b.lo && a.hi == b.hi;
}

/* Candidates of one sequence along one axis (rows when keys == false). */
static void sequence_candidates(const af_oracle_problem *p, bool keys, int b, candidate_list *l) {
    int len_q = p->len_q[b], len_kv = p->len_kv[b];
    int len = keys ? len_kv : len_q;
    int heads = keys ? p->Hkv : p->Hq;
    int edge_hi = keys ? len_q - 1 : len_kv - 1;
    if (len <= 0) return;
    int boundary_heads[2] = {0, heads - 1};
#define WORK(idx) (keys ? af_oracle_key_work(p, b, (idx)) : af_oracle_row_work(p, b, (idx)))
#define PUSH_BOTH_HEADS(idx, cls)                                                                                      \
    do {                                                                                                               \
        for (int hb = 0; hb < 2; hb++) push(l, b, boundary_heads[hb], (idx), (cls), WORK(idx));                        \
    } while (0)

    PUSH_BOTH_HEADS(0, 0);
    PUSH_BOTH_HEADS(len - 1, 0);
    interval_shape prev = {0, 0, false};
    for (int idx = 0; idx < len; idx++) {
        int first, last, count;
        if (keys)
            count = af_mask_rows_seeing_key(&p->mask, len_q, len_kv, idx, &first, &last);
        else
            count = af_mask_rule_local_range(p->mask, len_q, len_kv, idx, &first,
                                             &last); /* global keys: the same in every row */
        interval_shape cur = shape_of(first, last, count, idx, edge_hi);
        if (idx > 0 && !same_shape(cur, prev)) {
            PUSH_BOTH_HEADS(idx - 1, 0);
            PUSH_BOTH_HEADS(idx, 0);
        }
        prev = cur;
    }
    static const int block[3] = {128, 64, 32};
    for (int c = 0; c < 3; c++) {
        for (int base = block[c]; base <= len; base += block[c]) {
            if (c > 0 && base % block[c - 1] == 0) continue;
            int h = (base / 32) % heads;
            for (int idx = base - 1; idx <= base + 1; idx++)
                if (idx < len) push(l, b, h, idx, 1 + c, WORK(idx));
        }
    }
    int hashed = af_oracle_sample_hashed(len, heads);
    for (int r = 0; r < hashed; r++) {
        uint64_t x = af_rng_splitmix64(((uint64_t)keys << 40) ^ ((uint64_t)b << 20) ^ (uint64_t)r);
        int idx = (int)(x % (uint64_t)len);
        int h = (int)((x >> 32) % (uint64_t)heads);
        push(l, b, h, idx, 4, WORK(idx));
    }
#undef PUSH_BOTH_HEADS
#undef WORK
}

static int cmp_position(const void *a, const void *b) {
    const candidate *x = a, *y = b;
    if (x->item.b != y->item.b) return x->item.b < y->item.b ? -1 : 1;
    if (x->item.h != y->item.h) return x->item.h < y->item.h ? -1 : 1;
    if (x->item.idx != y->item.idx) return x->item.idx < y->item.idx ? -1 : 1;
    return (x->cls > y->cls) - (x->cls < y->cls);
}

static int cmp_priority(const void *a, const void *b) {
    const candidate *x = a, *y = b;
    if (x->cls != y->cls) return x->cls < y->cls ? -1 : 1;
    return cmp_position(a, b);
}

static int select_items(const af_oracle_problem *p, bool keys, double budget, af_sample_item **items) {
    candidate_list l = {NULL, 0, 0, false};
    for (int b = 0; b < p->B; b++) sequence_candidates(p, keys, b, &l);
    *items = NULL;
    if (l.failed) {
        free(l.c);
        return -1;
    }
    /* Distinct positions, each with its best (lowest) class. */
    if (l.n) qsort(l.c, l.n, sizeof *l.c, cmp_position);
    size_t distinct = 0;
    for (size_t k = 0; k < l.n; k++) {
        const af_sample_item *prev = distinct ? &l.c[distinct - 1].item : NULL;
        if (prev && prev->b == l.c[k].item.b && prev->h == l.c[k].item.h && prev->idx == l.c[k].item.idx)
            continue; /* same position, same or worse class */
        l.c[distinct++] = l.c[k];
    }
    if (distinct) qsort(l.c, distinct, sizeof *l.c, cmp_priority);
    size_t taken = 0;
    double work = 0.0;
    for (size_t k = 0; k < distinct; k++) {
        if (l.c[k].cls > 0 && work + l.c[k].work > budget) continue;
        work += l.c[k].work;
        l.c[taken++] = l.c[k];
    }
    if (taken) qsort(l.c, taken, sizeof *l.c, cmp_position);
    af_sample_item *out = malloc((taken ? taken : 1) * sizeof *out);
    if (!out) {
        free(l.c);
        return -1;
    }
    for (size_t k = 0; k < taken; k++) out[k] = l.c[k].item;
    free(l.c);
    *items = out;
    return (int)taken;
}

int af_oracle_sample_rows(const af_oracle_problem *p, double budget, af_sample_item **items) {
    return select_items(p, false, budget, items);
}

int af_oracle_sample_keys(const af_oracle_problem *p, double budget, af_sample_item **items) {
    return select_items(p, true, budget, items);
}
