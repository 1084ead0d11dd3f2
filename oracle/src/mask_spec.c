/* mask_spec.c — THE specification of which keys a query row sees (see mask_spec.h).
 *
 * Written as the plain rule, self-contained, with 64-bit arithmetic so that no
 * combination of lengths and windows can overflow. Negative windows are unbounded
 * (the format uses -1). Kernels must never call this file.
 */
#include "oracle/mask_spec.h"

/* diag(i): the key that row i is aligned with. */
static long long diagonal_of_row(const af_mask_rule *r, int len_q, int len_kv, int i)
{
    long long shift = r->bottom_right ? (long long)len_kv - (long long)len_q : 0;
    return (long long)i + shift;
}

bool af_mask_visible(const af_mask_rule *r, int len_q, int len_kv, int i, int j)
{
    if (i < 0 || i >= len_q || j < 0 || j >= len_kv) return false;
    long long diag = diagonal_of_row(r, len_q, len_kv, i);
    if (r->causal && (long long)j > diag) return false;
    if (r->window_left >= 0 && (long long)j < diag - r->window_left) return false;
    if (r->window_right >= 0 && (long long)j > diag + r->window_right) return false;
    return true;
}

int af_mask_visible_range(const af_mask_rule *r, int len_q, int len_kv, int i, int *first,
                          int *last)
{
    *first = 0;
    *last = -1;
    if (i < 0 || i >= len_q || len_kv <= 0) return 0;
    long long diag = diagonal_of_row(r, len_q, len_kv, i);
    long long lo = 0, hi = (long long)len_kv - 1;
    if (r->window_left >= 0 && diag - r->window_left > lo) lo = diag - r->window_left;
    if (r->causal && diag < hi) hi = diag;
    if (r->window_right >= 0 && diag + r->window_right < hi) hi = diag + r->window_right;
    if (lo > hi) return 0;
    *first = (int)lo;
    *last = (int)hi;
    return (int)(hi - lo + 1);
}

/* Row i sees key j iff  (causal) i >= j - shift,  (R) i >= j - shift - R,
 * (L) i <= j - shift + L, with shift = diag(i) - i: constraints on i alone, so the
 * rows that see one key also form an interval. */
int af_mask_rows_seeing_key(const af_mask_rule *r, int len_q, int len_kv, int j, int *first,
                            int *last)
{
    *first = 0;
    *last = -1;
    if (j < 0 || j >= len_kv || len_q <= 0) return 0;
    long long shift = diagonal_of_row(r, len_q, len_kv, 0);
    long long lo = 0, hi = (long long)len_q - 1;
    if (r->causal && (long long)j - shift > lo) lo = (long long)j - shift;
    if (r->window_right >= 0 && (long long)j - shift - r->window_right > lo)
        lo = (long long)j - shift - r->window_right;
    if (r->window_left >= 0 && (long long)j - shift + r->window_left < hi)
        hi = (long long)j - shift + r->window_left;
    if (lo > hi) return 0;
    *first = (int)lo;
    *last = (int)hi;
    return (int)(hi - lo + 1);
}
