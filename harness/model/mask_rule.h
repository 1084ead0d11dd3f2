/* model/mask_rule.h — THE mask rule (specified in oracle/mask_spec.h) as inline code,
 * callable from host C and from CUDA device code, so that the rule is written once: the
 * oracle's host wrappers (oracle/src/mask_spec.c), the GPU oracle tier (oracle/gpu/) and
 * the case model's own validation (case.c: does any row see a key) run these lines.
 * Backends and kernels must never include it (ci/check_layering.py): an oracle that reuses
 * the suspect's mask agrees with its bugs; they keep their own copies on purpose.
 * 64-bit arithmetic throughout: no combination of lengths and windows can overflow.
 */
#ifndef ATTNFUZZ_MASK_RULE_H
#define ATTNFUZZ_MASK_RULE_H

#include <stdbool.h>

/* The most documents a document mask lists (model/case.h's AF_MAX_DOCUMENTS). */
#define AF_MASK_MAX_DOCS 16

/* Which keys a query row sees (oracle/mask_spec.h states the rule). */
typedef struct {
    bool causal;
    bool bottom_right;
    int window_left;               /* -1 = unbounded */
    int window_right;              /* -1 = unbounded */
    int chunk;                     /* attention_chunk N: 0 = off; else keys of diag(i)'s chunk only */
    int global_keys;               /* G: keys 0 .. G-1 are seen by every row, whatever the rest says */
    int n_docs;                    /* document mask: 0 = off; else the documents end at doc_end[0] < ... */
    int doc_end[AF_MASK_MAX_DOCS]; /* ... < doc_end[n_docs - 1] (exclusive key positions);
                                      keys from doc_end[n_docs - 1] on are one more document */
    /* Drops (oracle/mask_spec.h "block_mask", "custom_mask"): ANDed with everything above,
     * global keys included. A threshold of 2^32 keeps all; 0 = the drop is off. */
    unsigned long long drop_seed;  /* the case seed */
    int block_q, block_k;          /* block_mask: query / key block sizes (0 = off) */
    unsigned long long block_keep; /* a block is kept iff its hash < block_keep */
    unsigned long long elem_keep;  /* custom_mask: an element is kept iff its hash < elem_keep (0 = off) */
} af_mask_rule;

/* The keys a row sees: up to two disjoint intervals in ascending order with a gap
 * between them (the global keys [0, G-1], then the row's own interval), n of them. */
typedef struct {
    int n;
    int first[2], last[2];
} af_mask_keys;

#ifdef __CUDACC__
#define AF_MASK_HD __host__ __device__ static inline
#else
#define AF_MASK_HD static inline
#endif

/* diag(i) - i: the shift between row i and the key it is aligned with. */
AF_MASK_HD long long af_mask_rule_shift(af_mask_rule r, int len_q, int len_kv) {
    return r.bottom_right ? (long long)len_kv - (long long)len_q : 0;
}

/* The first key of the chunk holding key position p (floor division: p may be negative,
 * a row aligned before key 0 under bottom-right alignment). */
AF_MASK_HD long long af_mask_rule_chunk_start(int chunk, long long p) {
    long long q = p / chunk;
    if (p % chunk < 0) q--;
    return q * chunk;
}

/* The document holding key position p: -1 before key 0 (a row aligned before the keys),
 * else the number of document ends at or before p (n_docs: the tail after the last one). */
AF_MASK_HD int af_mask_rule_doc(const af_mask_rule *r, long long p) {
    if (p < 0) return -1;
    int d = 0;
    while (d < r->n_docs && r->doc_end[d] <= p) d++;
    return d;
}

/* Document d's keys [*start, *end) (d >= 0; the tail's end is unbounded: 2^40). */
AF_MASK_HD void af_mask_rule_doc_keys(const af_mask_rule *r, int d, long long *start, long long *end) {
    *start = d == 0 ? 0 : r->doc_end[d - 1];
    *end = d < r->n_docs ? r->doc_end[d] : (1LL << 40);
}

/* Row i's own interval [*first, *last]: the keys it sees apart from the global keys
 * (every condition but global_keys); returns the count (0: *first > *last). Callers that
 * want the whole visible set use af_mask_rule_keys. */
AF_MASK_HD int af_mask_rule_local_range(af_mask_rule r, int len_q, int len_kv, int i, int *first, int *last) {
    *first = 0;
    *last = -1;
    if (i < 0 || i >= len_q || len_kv <= 0) return 0;
    long long diag = (long long)i + af_mask_rule_shift(r, len_q, len_kv);
    long long lo = 0, hi = (long long)len_kv - 1;
    if (r.window_left >= 0 && diag - r.window_left > lo) lo = diag - r.window_left;
    if (r.causal && diag < hi) hi = diag;
    if (r.window_right >= 0 && diag + r.window_right < hi) hi = diag + r.window_right;
    if (r.chunk > 0) {
        long long c0 = af_mask_rule_chunk_start(r.chunk, diag);
        if (c0 > lo) lo = c0;
        if (c0 + r.chunk - 1 < hi) hi = c0 + r.chunk - 1;
    }
    if (r.n_docs > 0) {
        int d = af_mask_rule_doc(&r, diag);
        if (d < 0) return 0; /* aligned before key 0: in no document */
        long long s0, s1;
        af_mask_rule_doc_keys(&r, d, &s0, &s1);
        if (s0 > lo) lo = s0;
        if (s1 - 1 < hi) hi = s1 - 1;
    }
    if (lo > hi) return 0;
    *first = (int)lo;
    *last = (int)hi;
    return (int)(hi - lo + 1);
}

/* Row i's visible keys: its own interval and the global keys 0 .. min(G, len_kv) - 1,
 * as one interval when they touch or overlap, else two; returns the count. */
AF_MASK_HD int af_mask_rule_keys(af_mask_rule r, int len_q, int len_kv, int i, af_mask_keys *k) {
    int f, l, n = af_mask_rule_local_range(r, len_q, len_kv, i, &f, &l);
    k->n = 0;
    if (i < 0 || i >= len_q || len_kv <= 0) return 0;
    int g = r.global_keys < len_kv ? r.global_keys : len_kv;
    if (g > 0) {
        k->first[0] = 0;
        k->last[0] = g - 1;
        k->n = 1;
        if (n > 0 && f <= g) { /* touching or overlapping: one interval */
            if (l > g - 1) k->last[0] = l;
            return k->last[0] + 1;
        }
    }
    if (n > 0) {
        k->first[k->n] = f;
        k->last[k->n] = l;
        k->n++;
    }
    return (g > 0 ? g : 0) + n;
}

/* The jj-th visible key of k (0 <= jj < the count). */
AF_MASK_HD int af_mask_keys_at(const af_mask_keys *k, int jj) {
    int n0 = k->last[0] - k->first[0] + 1;
    return jj < n0 ? k->first[0] + jj : k->first[1] + (jj - n0);
}

/* The drops' hash: the top 32 bits of splitmix64 over (seed, tag, x, y); stateless and
 * cheap on the GPU. Tags: 1 = block (x = query block, y = key block), 2 = element
 * (x = b * 2^32 + i, y = j). */
AF_MASK_HD unsigned long long af_mask_drop_hash(unsigned long long seed, unsigned long long tag, unsigned long long x,
                                                unsigned long long y) {
    unsigned long long z = seed + tag * 0x9E3779B97F4A7C15ULL + x * 0xD1B54A32D192ED03ULL + y * 0xABC98388FB8FAC03ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z >> 32;
}

/* The keep threshold of a probability p in (0, 1]: floor(p * 2^32) (2^32 keeps all). */
AF_MASK_HD unsigned long long af_mask_drop_threshold(double p) {
    if (!(p > 0.0)) return 0;
    if (p >= 1.0) return 1ULL << 32;
    return (unsigned long long)(p * 4294967296.0);
}

/* Does the rule drop anything beyond its intervals (a block or element mask)? */
AF_MASK_HD bool af_mask_rule_drops(const af_mask_rule *r) {
    return (r->block_q > 0 && r->block_k > 0 && r->block_keep < (1ULL << 32)) ||
           (r->elem_keep > 0 && r->elem_keep < (1ULL << 32));
}

/* Do the drops keep element (b, i, j)? (The intervals are af_mask_rule_visible's.) */
AF_MASK_HD bool af_mask_rule_kept(const af_mask_rule *r, int b, int i, int j) {
    if (r->block_q > 0 && r->block_k > 0 &&
        af_mask_drop_hash(r->drop_seed, 1, (unsigned long long)(i / r->block_q),
                          (unsigned long long)(j / r->block_k)) >= r->block_keep)
        return false;
    if (r->elem_keep > 0 && af_mask_drop_hash(r->drop_seed, 2, ((unsigned long long)b << 32) | (unsigned int)i,
                                              (unsigned long long)j) >= r->elem_keep)
        return false;
    return true;
}

/* Row i sees key j iff (causal) i >= j - shift, (R) i >= j - shift - R,
 * (L) i <= j - shift + L, (chunk N) start(j) <= i + shift <= start(j) + N - 1,
 * (documents) j's document's start <= i + shift < its end: constraints on i alone, so
 * the rows that see one key form the interval [*first, *last]; a global key (j < G) is
 * seen by every row [0, len_q - 1]. Returns the count (0: *first > *last). */
AF_MASK_HD int af_mask_rule_rows(af_mask_rule r, int len_q, int len_kv, int j, int *first, int *last) {
    *first = 0;
    *last = -1;
    if (j < 0 || j >= len_kv || len_q <= 0) return 0;
    long long shift = af_mask_rule_shift(r, len_q, len_kv);
    long long lo = 0, hi = (long long)len_q - 1;
    if (j < r.global_keys) {
        *first = 0;
        *last = len_q - 1;
        return len_q;
    }
    if (r.causal && (long long)j - shift > lo) lo = (long long)j - shift;
    if (r.window_right >= 0 && (long long)j - shift - r.window_right > lo) lo = (long long)j - shift - r.window_right;
    if (r.window_left >= 0 && (long long)j - shift + r.window_left < hi) hi = (long long)j - shift + r.window_left;
    if (r.chunk > 0) {
        long long c0 = af_mask_rule_chunk_start(r.chunk, j);
        if (c0 - shift > lo) lo = c0 - shift;
        if (c0 + r.chunk - 1 - shift < hi) hi = c0 + r.chunk - 1 - shift;
    }
    if (r.n_docs > 0) {
        long long s0, s1;
        af_mask_rule_doc_keys(&r, af_mask_rule_doc(&r, j), &s0, &s1);
        if (s0 - shift > lo) lo = s0 - shift;
        if (s1 - 1 - shift < hi) hi = s1 - 1 - shift;
    }
    if (lo > hi) return 0;
    *first = (int)lo;
    *last = (int)hi;
    return (int)(hi - lo + 1);
}

/* Does row i see key j? */
AF_MASK_HD bool af_mask_rule_visible(af_mask_rule r, int len_q, int len_kv, int i, int j) {
    if (i < 0 || i >= len_q || j < 0 || j >= len_kv) return false;
    if (j < r.global_keys) return true; /* a global key: seen by every row */
    long long diag = (long long)i + af_mask_rule_shift(r, len_q, len_kv);
    if (r.causal && (long long)j > diag) return false;
    if (r.window_left >= 0 && (long long)j < diag - r.window_left) return false;
    if (r.window_right >= 0 && (long long)j > diag + r.window_right) return false;
    if (r.chunk > 0 && af_mask_rule_chunk_start(r.chunk, diag) != af_mask_rule_chunk_start(r.chunk, j)) return false;
    if (r.n_docs > 0 && af_mask_rule_doc(&r, diag) != af_mask_rule_doc(&r, j)) return false;
    return true;
}

/* Does row i of sequence b see key j, drops included? The whole rule, element by element. */
AF_MASK_HD bool af_mask_rule_sees(af_mask_rule r, int b, int len_q, int len_kv, int i, int j) {
    return af_mask_rule_visible(r, len_q, len_kv, i, j) && af_mask_rule_kept(&r, b, i, j);
}

/* The exact number of keys row i of sequence b sees: af_mask_rule_keys's count when the
 * rule drops nothing, else the keys of that envelope the drops keep (0: fully masked). */
AF_MASK_HD int af_mask_rule_count(af_mask_rule r, int b, int len_q, int len_kv, int i) {
    af_mask_keys k;
    int n = af_mask_rule_keys(r, len_q, len_kv, i, &k);
    if (n == 0 || !af_mask_rule_drops(&r)) return n;
    int kept = 0;
    for (int jj = 0; jj < n; jj++) kept += af_mask_rule_kept(&r, b, i, af_mask_keys_at(&k, jj));
    return kept;
}

#endif
