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
    af_mask_rule r = {causal, bottom_right, left, right, 0};
    return r;
}

/* table[i] is a string of max_kv '0'/'1' characters. */
static void check_table(const char *name, af_mask_rule r, int len_q, int len_kv, int max_q, int max_kv,
                        const char *const *table) {
    for (int i = 0; i < max_q; i++) {
        CHECK_MSG((int)strlen(table[i]) == max_kv, "%s: row %d has the wrong width", name, i);
        int first, last;
        int count = af_mask_visible_range(&r, len_q, len_kv, i, &first, &last);
        int ones = 0;
        for (int j = 0; j < max_kv; j++) {
            bool want = table[i][j] == '1';
            bool got = af_mask_visible(&r, len_q, len_kv, i, j);
            CHECK_MSG(want == got, "%s: row %d key %d: want %d got %d", name, i, j, want, got);
            ones += want;
            if (want) CHECK_MSG(j >= first && j <= last, "%s: range of row %d", name, i);
        }
        CHECK_MSG(count == ones, "%s: row %d: range count %d, table %d", name, i, count, ones);
        if (count == 0) CHECK(first > last);
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

static void out_of_range(void) {
    af_mask_rule r = rule(false, false, -1, -1);
    int first, last;
    CHECK(!af_mask_visible(&r, 3, 3, -1, 0));
    CHECK(!af_mask_visible(&r, 3, 3, 0, -1));
    CHECK(!af_mask_visible(&r, 3, 3, 3, 0));
    CHECK(!af_mask_visible(&r, 3, 3, 0, 3));
    CHECK(af_mask_visible_range(&r, 3, 3, -1, &first, &last) == 0 && first > last);
    CHECK(af_mask_visible_range(&r, 3, 3, 3, &first, &last) == 0 && first > last);
    CHECK(af_mask_rows_seeing_key(&r, 3, 3, 3, &first, &last) == 0 && first > last);
    /* Huge windows and lengths do not overflow. */
    af_mask_rule huge = rule(true, true, 2147483647, 2147483647);
    CHECK(af_mask_visible_range(&huge, 65536, 1, 65535, &first, &last) == 1);
    CHECK(first == 0 && last == 0);
    CHECK(af_mask_visible_range(&huge, 1, 65536, 0, &first, &last) == 65536);
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
        for (int i = -1; i <= len_q; i++) {
            int first, last;
            int count = af_mask_visible_range(&r, len_q, len_kv, i, &first, &last);
            int seen = 0;
            for (int j = -1; j <= len_kv; j++) {
                bool v = af_mask_visible(&r, len_q, len_kv, i, j);
                seen += v;
                CHECK_MSG(v == (count > 0 && j >= first && j <= last),
                          "trial %d row %d key %d (lq %d lkv %d L %d R %d)", trial, i, j, len_q, len_kv, left, right);
            }
            CHECK(seen == count);
            if (count == 0) CHECK(first > last);
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

int main(void) {
    hand_tables();
    chunk_tables();
    out_of_range();
    random_agreement();
    CHECK_DONE("test_mask_spec");
}
