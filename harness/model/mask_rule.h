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

/* Which keys a query row sees (oracle/mask_spec.h states the rule). */
typedef struct {
    bool causal;
    bool bottom_right;
    int window_left;  /* -1 = unbounded */
    int window_right; /* -1 = unbounded */
    int chunk;        /* attention_chunk N: 0 = off; else keys of diag(i)'s chunk only */
} af_mask_rule;

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

/* Row i sees the keys [*first, *last]; returns the count (0: *first > *last). */
AF_MASK_HD int af_mask_rule_range(af_mask_rule r, int len_q, int len_kv, int i, int *first, int *last) {
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
    if (lo > hi) return 0;
    *first = (int)lo;
    *last = (int)hi;
    return (int)(hi - lo + 1);
}

/* Row i sees key j iff (causal) i >= j - shift, (R) i >= j - shift - R,
 * (L) i <= j - shift + L, (chunk N) start(j) <= i + shift <= start(j) + N - 1:
 * constraints on i alone, so the rows that see one key form the interval
 * [*first, *last]; returns the count (0: *first > *last). */
AF_MASK_HD int af_mask_rule_rows(af_mask_rule r, int len_q, int len_kv, int j, int *first, int *last) {
    *first = 0;
    *last = -1;
    if (j < 0 || j >= len_kv || len_q <= 0) return 0;
    long long shift = af_mask_rule_shift(r, len_q, len_kv);
    long long lo = 0, hi = (long long)len_q - 1;
    if (r.causal && (long long)j - shift > lo) lo = (long long)j - shift;
    if (r.window_right >= 0 && (long long)j - shift - r.window_right > lo) lo = (long long)j - shift - r.window_right;
    if (r.window_left >= 0 && (long long)j - shift + r.window_left < hi) hi = (long long)j - shift + r.window_left;
    if (r.chunk > 0) {
        long long c0 = af_mask_rule_chunk_start(r.chunk, j);
        if (c0 - shift > lo) lo = c0 - shift;
        if (c0 + r.chunk - 1 - shift < hi) hi = c0 + r.chunk - 1 - shift;
    }
    if (lo > hi) return 0;
    *first = (int)lo;
    *last = (int)hi;
    return (int)(hi - lo + 1);
}

/* Does row i see key j? */
AF_MASK_HD bool af_mask_rule_visible(af_mask_rule r, int len_q, int len_kv, int i, int j) {
    if (i < 0 || i >= len_q || j < 0 || j >= len_kv) return false;
    long long diag = (long long)i + af_mask_rule_shift(r, len_q, len_kv);
    if (r.causal && (long long)j > diag) return false;
    if (r.window_left >= 0 && (long long)j < diag - r.window_left) return false;
    if (r.window_right >= 0 && (long long)j > diag + r.window_right) return false;
    if (r.chunk > 0 && af_mask_rule_chunk_start(r.chunk, diag) != af_mask_rule_chunk_start(r.chunk, j)) return false;
    return true;
}

#endif
