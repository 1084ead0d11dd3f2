/* test_mask_spec.c — the mask specification against tables written out by hand.
 *
 * Each table is (max_q rows) x (max_kv columns); row i, column j is '1' iff query
 * row i sees key j. Rows and keys past the sequence's lengths are '0'. The tables
 * were computed by hand from the rule in mask_spec.h, not by running the code.
 */
#include <stdint.h>
#include <string.h>
#include "oracle/mask_spec.h"
#include "util/check.h"

static af_mask_rule rule(bool causal, bool bottom_right, int left, int right) {
    af_mask_rule r = {.causal = causal, .bottom_right = bottom_right, .window_left = left, .window_right = right};
    return r;
}

/* Key j in the visible set k (its intervals ascending, disjoint and not touching). */
static bool in_keys(const af_mask_keys *k, int j) {
    for (int s = 0; s < k->n; s++) {
        if (s > 0) CHECK_MSG(k->first[s] > k->last[s - 1] + 1, "intervals %d and %d touch", s - 1, s);
        CHECK(k->first[s] <= k->last[s]);
        if (j >= k->first[s] && j <= k->last[s]) return true;
    }
    return false;
}

/* table[i] is a string of max_kv '0'/'1' characters; both directions are checked (the
 * keys of each row, the rows of each key). */
static void check_table(const char *name, af_mask_rule r, int len_q, int len_kv, int max_q, int max_kv,
                        const char *const *table) {
    for (int i = 0; i < max_q; i++) {
        CHECK_MSG((int)strlen(table[i]) == max_kv, "%s: row %d has the wrong width", name, i);
        af_mask_keys k;
        int count = af_mask_visible_keys(&r, 0, len_q, len_kv, i, &k);
        int ones = 0;
        for (int j = 0; j < max_kv; j++) {
            bool want = table[i][j] == '1';
            bool got = af_mask_visible(&r, len_q, len_kv, i, j);
            CHECK_MSG(want == got, "%s: row %d key %d: want %d got %d", name, i, j, want, got);
            ones += want;
            CHECK_MSG(want == in_keys(&k, j), "%s: key %d in the visible keys of row %d", name, j, i);
        }
        CHECK_MSG(count == ones, "%s: row %d: keys count %d, table %d", name, i, count, ones);
        if (count == 0) CHECK(k.n == 0);
    }
    for (int j = 0; j < max_kv; j++) {
        int first, last, ones = 0;
        int count = af_mask_rows_seeing_key(&r, len_q, len_kv, j, &first, &last);
        for (int i = 0; i < max_q; i++) {
            bool want = table[i][j] == '1';
            ones += want;
            CHECK_MSG(want == (count > 0 && i >= first && i <= last), "%s: rows of key %d: row %d", name, j, i);
        }
        CHECK_MSG(count == ones, "%s: key %d: rows count %d, table %d", name, j, count, ones);
    }
}

static void hand_tables(void) {
    /* No mask: everything inside the sequence. */
    static const char *const none[] = {"1111", "1111", "1111"};
    check_table("none 3x4", rule(false, false, -1, -1), 3, 4, 3, 4, none);

    static const char *const causal_tl[] = {"1000", "1100", "1110", "1111"};
    check_table("causal top-left 4x4", rule(true, false, -1, -1), 4, 4, 4, 4, causal_tl);

    static const char *const causal_tl_wide[] = {"10000", "11000", "11100"};
    check_table("causal top-left 3x5", rule(true, false, -1, -1), 3, 5, 3, 5, causal_tl_wide);

    static const char *const causal_tl_tall[] = {"100", "110", "111", "111", "111"};
    check_table("causal top-left 5x3", rule(true, false, -1, -1), 5, 3, 5, 3, causal_tl_tall);

    /* Bottom-right, sq < skv: diag(i) = i + 2. */
    static const char *const causal_br_wide[] = {"11100", "11110", "11111"};
    check_table("causal bottom-right 3x5", rule(true, true, -1, -1), 3, 5, 3, 5, causal_br_wide);

    /* Bottom-right, sq > skv: diag(i) = i - 2, rows 0 and 1 fully masked. */
    static const char *const causal_br_tall[] = {"000", "000", "100", "110", "111"};
    check_table("causal bottom-right 5x3", rule(true, true, -1, -1), 5, 3, 5, 3, causal_br_tall);

    /* Windows without causal, top-left. (0,0): the diagonal only. */
    static const char *const w00[] = {"1000", "0100", "0010", "0001"};
    check_table("window (0,0)", rule(false, false, 0, 0), 4, 4, 4, 4, w00);

    /* (1,0): j in [i-1, i]. L does not count the diagonal. */
    static const char *const w10[] = {"1000", "1100", "0110", "0011"};
    check_table("window (1,0)", rule(false, false, 1, 0), 4, 4, 4, 4, w10);

    /* (2,1): j in [i-2, i+1]. */
    static const char *const w21[] = {"11000", "11100", "11110", "01111", "00111"};
    check_table("window (2,1)", rule(false, false, 2, 1), 5, 5, 5, 5, w21);

    /* (0,-1): j >= i. */
    static const char *const w0inf[] = {"1111", "0111", "0011", "0001"};
    check_table("window (0,-1)", rule(false, false, 0, -1), 4, 4, 4, 4, w0inf);

    /* (-1,0): j <= i, the same set as causal. */
    static const char *const winf0[] = {"1000", "1100", "1110", "1111"};
    check_table("window (-1,0)", rule(false, false, -1, 0), 4, 4, 4, 4, winf0);

    /* A window wider than the sequence changes nothing. */
    static const char *const wide[] = {"111", "111", "111"};
    check_table("window (10,10)", rule(false, false, 10, 10), 3, 3, 3, 3, wide);
    static const char *const wide_causal[] = {"100", "110", "111"};
    check_table("causal + window (10,-1)", rule(true, false, 10, -1), 3, 3, 3, 3, wide_causal);

    /* Causal + window (1, -): j in [i-1, i]; the causal bound wins over R. */
    static const char *const causal_w1[] = {"1000", "1100", "0110", "0011"};
    check_table("causal + window (1,5)", rule(true, false, 1, 5), 4, 4, 4, 4, causal_w1);

    /* Bottom-right windows. 3x6, (1,0): diag = i+3, j in [i+2, i+3]. */
    static const char *const br_w10[] = {"001100", "000110", "000011"};
    check_table("bottom-right window (1,0) 3x6", rule(false, true, 1, 0), 3, 6, 3, 6, br_w10);

    /* 3x5, (0,1): diag = i+2, j in [i+2, i+3]. */
    static const char *const br_w01[] = {"00110", "00011", "00001"};
    check_table("bottom-right window (0,1) 3x5", rule(false, true, 0, 1), 3, 5, 3, 5, br_w01);

    /* Square bottom-right = top-left: causal + (2,-1): j in [i-2, i]. */
    static const char *const br_sq[] = {"1000", "1100", "1110", "0111"};
    check_table("causal bottom-right window (2,-1) 4x4", rule(true, true, 2, -1), 4, 4, 4, 4, br_sq);

    /* 4x2 causal + left 1, bottom-right: diag = i-2, j in [i-3, i-2]. */
    static const char *const br_tall_w[] = {"00", "00", "10", "11"};
    check_table("causal bottom-right window (1,-1) 4x2", rule(true, true, 1, -1), 4, 2, 4, 2, br_tall_w);

    /* Window that excludes everything for some rows (top-left, 6x3, (1,0)):
     * row i sees [i-1, i] intersected with [0, 2]. */
    static const char *const w_out[] = {"100", "110", "011", "001", "000", "000"};
    check_table("window (1,0) 6x3", rule(false, false, 1, 0), 6, 3, 6, 3, w_out);

    /* Padding: max 4x5, actual 3x4, causal top-left. */
    static const char *const pad_tl[] = {"10000", "11000", "11100", "00000"};
    check_table("padding causal top-left", rule(true, false, -1, -1), 3, 4, 4, 5, pad_tl);

    /* Padding: max 4x5, actual 2x4, causal bottom-right: diag = i + 2 (actual lengths). */
    static const char *const pad_br[] = {"11100", "11110", "00000", "00000"};
    check_table("padding causal bottom-right", rule(true, true, -1, -1), 2, 4, 4, 5, pad_br);

    /* Padding without a mask: the valid block only. */
    static const char *const pad_none[] = {"1110", "1110", "0000"};
    check_table("padding none", rule(false, false, -1, -1), 2, 3, 3, 4, pad_none);

    /* Padding + bottom-right window (0,0): diag = i + (3 - 2). */
    static const char *const pad_br_w[] = {"0100", "0010", "0000"};
    check_table("padding bottom-right window (0,0)", rule(false, true, 0, 0), 2, 3, 3, 4, pad_br_w);

    /* Zero-length sequences. */
    static const char *const empty[] = {"000", "000", "000"};
    check_table("len_q = 0", rule(false, false, -1, -1), 0, 3, 3, 3, empty);
    check_table("len_kv = 0", rule(true, true, -1, -1), 3, 0, 3, 3, empty);
    check_table("both 0", rule(false, false, 0, 0), 0, 0, 3, 3, empty);

    /* Length-1 sequences. */
    static const char *const one[] = {"1"};
    check_table("1x1 causal bottom-right", rule(true, true, -1, -1), 1, 1, 1, 1, one);
    static const char *const one_row_br[] = {"1111"};
    check_table("1x4 causal bottom-right", rule(true, true, -1, -1), 1, 4, 1, 4, one_row_br);
    static const char *const one_row_tl[] = {"1000"};
    check_table("1x4 causal top-left", rule(true, false, -1, -1), 1, 4, 1, 4, one_row_tl);
    static const char *const one_key_br[] = {"0", "0", "0", "1"};
    check_table("4x1 causal bottom-right", rule(true, true, -1, -1), 4, 1, 4, 1, one_key_br);
    static const char *const one_row_br_w[] = {"0011"};
    check_table("1x4 bottom-right window (1,0)", rule(false, true, 1, 0), 1, 4, 1, 4, one_row_br_w);
}

static af_mask_rule chunked(af_mask_rule r, int chunk) {
    r.chunk = chunk;
    return r;
}

/* attention_chunk N: row i sees key j only if floor(diag / N) == floor(j / N), ANDed
 * with the rest; computed by hand from mask_spec.h. */
static void chunk_tables(void) {
    /* No mask, chunk 2, 4x4: chunks {0,1} and {2,3}. */
    static const char *const c2[] = {"1100", "1100", "0011", "0011"};
    check_table("chunk 2 4x4", chunked(rule(false, false, -1, -1), 2), 4, 4, 4, 4, c2);

    /* Causal top-left, chunk 3, 5x5: j <= i and j >= 3 floor(i / 3). */
    static const char *const causal_c3[] = {"10000", "11000", "11100", "00010", "00011"};
    check_table("causal chunk 3 5x5", chunked(rule(true, false, -1, -1), 3), 5, 5, 5, 5, causal_c3);

    /* Causal bottom-right 3x6, chunk 4: diag = i + 3; row 0 in chunk [0, 3], rows 1, 2 in [4, 7]. */
    static const char *const br_c4[] = {"111100", "000010", "000011"};
    check_table("causal bottom-right chunk 4 3x6", chunked(rule(true, true, -1, -1), 4), 3, 6, 3, 6, br_c4);

    /* No mask, bottom-right 5x3, chunk 2: diag = i - 2; rows 0 and 1 (diag -2, -1) are in
     * chunk [-2, -1] (floor division), which holds no key: fully masked. */
    static const char *const br_tall_c2[] = {"000", "000", "110", "110", "001"};
    check_table("bottom-right chunk 2 5x3", chunked(rule(false, true, -1, -1), 2), 5, 3, 5, 3, br_tall_c2);

    /* Window (1,1) and chunk 3, top-left 6x6: [i - 1, i + 1] cut at the chunk's edges. */
    static const char *const w_c3[] = {"110000", "111000", "011000", "000110", "000111", "000011"};
    check_table("window (1,1) chunk 3 6x6", chunked(rule(false, false, 1, 1), 3), 6, 6, 6, 6, w_c3);

    /* Padding: max 4x6, actual 3x5, causal bottom-right, chunk 2: diag = i + 2. */
    static const char *const pad_br_c2[] = {"001000", "001100", "000010", "000000"};
    check_table("padding causal bottom-right chunk 2", chunked(rule(true, true, -1, -1), 2), 3, 5, 4, 6, pad_br_c2);

    /* A chunk at least as long as the keys changes nothing (top-left). */
    static const char *const causal_tl[] = {"1000", "1100", "1110", "1111"};
    check_table("causal chunk 4 4x4", chunked(rule(true, false, -1, -1), 4), 4, 4, 4, 4, causal_tl);
}

/* Document lengths -> the rule's exclusive ends. */
static af_mask_rule with_docs(af_mask_rule r, int n, const int *lengths) {
    int end = 0;
    for (int d = 0; d < n; d++) r.doc_end[d] = end += lengths[d];
    r.n_docs = n;
    return r;
}
static af_mask_rule with_global(af_mask_rule r, int g) {
    r.global_keys = g;
    return r;
}

/* documents: row i sees key j only if diag(i) and j are in the same document (the keys
 * past the listed ones one more; a row aligned before key 0 in none), ANDed with the
 * rest; computed by hand from mask_spec.h. */
static void document_tables(void) {
    static const int d23[] = {2, 3}, d4[] = {4}, d11[] = {1, 1}, d3[] = {3}, d33[] = {3, 3}, d2[] = {2};
    /* No mask, 6x6, documents 2,3: {0,1} {2,3,4} and the tail {5}. */
    static const char *const none[] = {"110000", "110000", "001110", "001110", "001110", "000001"};
    check_table("documents 2,3 6x6", with_docs(rule(false, false, -1, -1), 2, d23), 6, 6, 6, 6, none);
    /* Causal top-left, the same documents. */
    static const char *const causal[] = {"100000", "110000", "001000", "001100", "001110", "000001"};
    check_table("causal documents 2,3 6x6", with_docs(rule(true, false, -1, -1), 2, d23), 6, 6, 6, 6, causal);
    /* Causal bottom-right 3x6 (diag = i + 3), documents 4: row 0 in [0, 3], rows 1, 2 in the tail. */
    static const char *const br[] = {"111100", "000010", "000011"};
    check_table("causal bottom-right documents 4 3x6", with_docs(rule(true, true, -1, -1), 1, d4), 3, 6, 3, 6, br);
    /* No mask, bottom-right 5x3 (diag = i - 2), documents 1,1: rows 0, 1 are before key 0,
     * in no document: fully masked. */
    static const char *const br_tall[] = {"000", "000", "100", "010", "001"};
    check_table("bottom-right documents 1,1 5x3", with_docs(rule(false, true, -1, -1), 2, d11), 5, 3, 5, 3, br_tall);
    /* Window (1,1), documents 3, top-left 6x6: [i - 1, i + 1] cut at the document's edges. */
    static const char *const win[] = {"110000", "111000", "011000", "000110", "000111", "000011"};
    check_table("window (1,1) documents 3 6x6", with_docs(rule(false, false, 1, 1), 1, d3), 6, 6, 6, 6, win);
    /* Ragged (thd): the same boundaries in every sequence, cut at its length; max 4x6.
     * Sequence 3x5 causal bottom-right (diag = i + 2), documents 2: rows see the tail from 2. */
    static const char *const rag1[] = {"001000", "001100", "001110", "000000"};
    check_table("ragged 3x5 causal bottom-right documents 2", with_docs(rule(true, true, -1, -1), 1, d2), 3, 5, 4, 6,
                rag1);
    /* Sequence 2x1 (diag = i - 1): row 0 before key 0, row 1 in document 0. */
    static const char *const rag2[] = {"000000", "100000", "000000", "000000"};
    check_table("ragged 2x1 causal bottom-right documents 2", with_docs(rule(true, true, -1, -1), 1, d2), 2, 1, 4, 6,
                rag2);
    /* Sequence 3x3 no mask: document 0 is [0, 1], the tail holds key 2 only. */
    static const char *const rag3[] = {"110000", "110000", "001000", "000000"};
    check_table("ragged 3x3 documents 2", with_docs(rule(false, false, -1, -1), 1, d2), 3, 3, 4, 6, rag3);
    /* Documents 3,3 and one global key, causal top-left 8x8: key 0, and the row's own
     * document's keys up to the diagonal (two intervals from row 3 on). */
    static const char *const dg[] = {"10000000", "11000000", "11100000", "10010000",
                                     "10011000", "10011100", "10000010", "10000011"};
    check_table("causal documents 3,3 global 1 8x8", with_global(with_docs(rule(true, false, -1, -1), 2, d33), 1), 8, 8,
                8, 8, dg);
    /* Ragged 3x5 of max 4x6, causal bottom-right, documents 2, one global key. */
    static const char *const rag_g[] = {"101000", "101100", "101110", "000000"};
    check_table("ragged causal bottom-right documents 2 global 1",
                with_global(with_docs(rule(true, true, -1, -1), 1, d2), 1), 3, 5, 4, 6, rag_g);
}

/* global_keys G: keys 0 .. G-1 seen by every row, ORed with the rest. */
static void global_tables(void) {
    /* Causal top-left 5x5, G = 2: rows 0 and 1 see key 1 (a later key). */
    static const char *const causal[] = {"11000", "11000", "11100", "11110", "11111"};
    check_table("causal global 2 5x5", with_global(rule(true, false, -1, -1), 2), 5, 5, 5, 5, causal);
    /* StreamingLLM: a sink key and a window of 1 left, causal, 6x6: {0} and [i - 1, i]. */
    static const char *const sink[] = {"100000", "110000", "111000", "101100", "100110", "100011"};
    check_table("causal window (1,-1) global 1 6x6", with_global(rule(true, false, 1, -1), 1), 6, 6, 6, 6, sink);
    /* Causal bottom-right 3x6 (diag = i + 3), window (0, -1): the diagonal and keys 0, 1. */
    static const char *const br[] = {"110100", "110010", "110001"};
    check_table("causal bottom-right window (0,-1) global 2 3x6", with_global(rule(true, true, 0, -1), 2), 3, 6, 3, 6,
                br);
    /* Causal bottom-right 5x3 (diag = i - 2): rows 0, 1 see no key but the global one. */
    static const char *const tall[] = {"100", "100", "100", "110", "111"};
    check_table("causal bottom-right global 1 5x3", with_global(rule(true, true, -1, -1), 1), 5, 3, 5, 3, tall);
    /* Chunk 2 and G = 1, no mask 4x4: chunks {0,1} {2,3}, and key 0 everywhere. */
    static const char *const ch[] = {"1100", "1100", "1011", "1011"};
    check_table("chunk 2 global 1 4x4", with_global(chunked(rule(false, false, -1, -1), 2), 1), 4, 4, 4, 4, ch);
    /* Padding: max 4x5, actual 2x3, G = 1, window (0,0): padding rows and keys stay hidden. */
    static const char *const pad[] = {"10000", "11000", "00000", "00000"};
    check_table("padding window (0,0) global 1", with_global(rule(false, false, 0, 0), 1), 2, 3, 4, 5, pad);
}

static void out_of_range(void) {
    af_mask_rule r = rule(false, false, -1, -1);
    int first, last;
    CHECK(!af_mask_visible(&r, 3, 3, -1, 0));
    CHECK(!af_mask_visible(&r, 3, 3, 0, -1));
    CHECK(!af_mask_visible(&r, 3, 3, 3, 0));
    CHECK(!af_mask_visible(&r, 3, 3, 0, 3));
    af_mask_keys k;
    CHECK(af_mask_visible_keys(&r, 0, 3, 3, -1, &k) == 0 && k.n == 0);
    CHECK(af_mask_visible_keys(&r, 0, 3, 3, 3, &k) == 0 && k.n == 0);
    CHECK(af_mask_rows_seeing_key(&r, 3, 3, 3, &first, &last) == 0 && first > last);
    /* Huge windows and lengths do not overflow. */
    af_mask_rule huge = rule(true, true, 2147483647, 2147483647);
    CHECK(af_mask_visible_keys(&huge, 0, 65536, 1, 65535, &k) == 1);
    CHECK(k.n == 1 && k.first[0] == 0 && k.last[0] == 0);
    CHECK(af_mask_visible_keys(&huge, 0, 1, 65536, 0, &k) == 65536);
    /* Global keys past the sequence's keys are cut at its length. */
    af_mask_rule g = rule(true, false, -1, -1);
    g.global_keys = 5;
    CHECK(af_mask_visible_keys(&g, 0, 3, 3, 0, &k) == 3 && k.n == 1 && k.last[0] == 2);
    CHECK(!af_mask_visible(&g, 3, 3, 0, 3));
}

static uint64_t next_random(uint64_t *state) {
    uint64_t x = (*state += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* visible_range and rows_seeing_key agree with visible for random parameters. */
static void random_agreement(void) {
    uint64_t state = 12345;
    for (int trial = 0; trial < 5000; trial++) {
        int len_q = (int)(next_random(&state) % 13);
        int len_kv = (int)(next_random(&state) % 13);
        int left = (int)(next_random(&state) % 17) - 1;
        int right = (int)(next_random(&state) % 17) - 1;
        af_mask_rule r = rule(next_random(&state) & 1, next_random(&state) & 1, left, right);
        if (trial % 2) r.chunk = 1 + (int)(next_random(&state) % 6);
        if (trial % 3 == 1) r.global_keys = 1 + (int)(next_random(&state) % 4);
        if (trial % 5 >= 2) { /* 1 to 4 documents of 1 to 4 keys */
            int n = 1 + (int)(next_random(&state) % 4), end = 0;
            for (int d = 0; d < n; d++) r.doc_end[d] = end += 1 + (int)(next_random(&state) % 4);
            r.n_docs = n;
        }
        for (int i = -1; i <= len_q; i++) {
            af_mask_keys k;
            int count = af_mask_visible_keys(&r, 0, len_q, len_kv, i, &k);
            int seen = 0;
            for (int j = -1; j <= len_kv; j++) {
                bool v = af_mask_visible(&r, len_q, len_kv, i, j);
                seen += v;
                CHECK_MSG(v == in_keys(&k, j), "trial %d row %d key %d (lq %d lkv %d L %d R %d G %d docs %d)", trial, i,
                          j, len_q, len_kv, left, right, r.global_keys, r.n_docs);
            }
            CHECK(seen == count);
            for (int jj = 0; jj < count; jj++) CHECK(af_mask_visible(&r, len_q, len_kv, i, af_mask_keys_at(&k, jj)));
            if (count == 0) CHECK(k.n == 0);
        }
        for (int j = -1; j <= len_kv; j++) {
            int first, last;
            int count = af_mask_rows_seeing_key(&r, len_q, len_kv, j, &first, &last);
            int seen = 0;
            for (int i = -1; i <= len_q; i++) {
                bool v = af_mask_visible(&r, len_q, len_kv, i, j);
                seen += v;
                CHECK_MSG(v == (count > 0 && i >= first && i <= last), "trial %d key %d row %d", trial, j, i);
            }
            CHECK(seen == count);
        }
    }
}

/* The drops, against an independent brute force: splitmix64 written out here from its
 * definition (the rule's is mask_rule.h's), the keep test per element, the envelope
 * holding every kept key, the exact count, and rows the drops mask fully. */
static uint64_t splitmix_top32(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return (z ^ (z >> 31)) >> 32;
}

static bool brute_kept(uint64_t seed, int bq, int bk, double pb, double pe, int b, int i, int j) {
    if (bq > 0) {
        uint64_t z = seed + 1 * 0x9E3779B97F4A7C15ULL + (uint64_t)(i / bq) * 0xD1B54A32D192ED03ULL +
                     (uint64_t)(j / bk) * 0xABC98388FB8FAC03ULL;
        if (pb < 1.0 && splitmix_top32(z) >= (uint64_t)(pb * 4294967296.0)) return false;
    }
    if (pe > 0) {
        uint64_t z = seed + 2 * 0x9E3779B97F4A7C15ULL + ((((uint64_t)b) << 32) + (uint64_t)i) * 0xD1B54A32D192ED03ULL +
                     (uint64_t)j * 0xABC98388FB8FAC03ULL;
        if (pe < 1.0 && splitmix_top32(z) >= (uint64_t)(pe * 4294967296.0)) return false;
    }
    return true;
}

static void drop_tables(void) {
    static const struct {
        int bq, bk;
        double pb, pe;
        bool causal;
        int global;
    } cases[] = {{8, 16, 0.6, 0, true, 0},   {4, 4, 0.5, 0, false, 3}, {0, 0, 0, 0.7, false, 0},
                 {16, 8, 0.8, 0.5, true, 2}, {1, 1, 0.3, 0, false, 0}, {0, 0, 0, 1.0, true, 0}};
    int fully_masked_rows = 0, dropped = 0, kept_total = 0;
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        af_mask_rule r = {.causal = cases[t].causal, .window_left = -1, .window_right = -1};
        r.global_keys = cases[t].global;
        r.drop_seed = 141 + t;
        r.block_q = cases[t].bq;
        r.block_k = cases[t].bk;
        r.block_keep = af_mask_drop_threshold(cases[t].pb);
        r.elem_keep = af_mask_drop_threshold(cases[t].pe);
        CHECK(af_mask_rule_drops(&r) == (cases[t].bq > 0 || (cases[t].pe > 0 && cases[t].pe < 1)));
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 40; i++) {
                int want = 0;
                for (int j = 0; j < 48; j++) {
                    bool base = af_mask_visible(&r, 40, 48, i, j); /* the intervals alone */
                    bool sees =
                        base && brute_kept(r.drop_seed, cases[t].bq, cases[t].bk, cases[t].pb, cases[t].pe, b, i, j);
                    CHECK(af_mask_sees(&r, b, 40, 48, i, j) == sees);
                    want += sees;
                    dropped += base && !sees;
                }
                kept_total += want;
                CHECK(af_mask_visible_count(&r, b, 40, 48, i) == want);
                af_mask_keys k;
                int n = af_mask_visible_keys(&r, b, 40, 48, i, &k);
                CHECK((n == 0) == (want == 0)); /* empty exactly when fully masked */
                CHECK(n >= want);
                int inside = 0; /* every visible key lies in the envelope */
                for (int jj = 0; jj < n; jj++) inside += af_mask_sees(&r, b, 40, 48, i, af_mask_keys_at(&k, jj));
                CHECK(inside == want);
                fully_masked_rows += want == 0;
            }
    }
    CHECK(dropped > 0 && kept_total > 0); /* the drops take some keys and leave others */
    CHECK(fully_masked_rows > 0);         /* and mask some rows fully: a case the judge must see */
}

int main(void) {
    hand_tables();
    chunk_tables();
    document_tables();
    global_tables();
    out_of_range();
    random_agreement();
    drop_tables();
    CHECK_DONE("test_mask_spec");
}
