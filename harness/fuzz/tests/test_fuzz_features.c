/* test_fuzz_features.c — the fuzzer draws the features (sinks, softcap, bias, ALiBi,
 * log2 stats, dLSE, dropout, attention_chunk, documents, global_keys, each score_mod) at a modest rate: along
 * a chain of 3000 mutations from the default case, the feature mutation is picked for 2 % to
 * 15 % of the steps, each feature appears, the chunk takes odd sizes and powers of two, the
 * documents come one and several, with a document of length 1, an odd length, a power of
 * two, with and without an empty tail, the global keys one and several, the block mask's
 * sizes 1, odd and powers of two, the element mask, both with keep probabilities in
 * [0.3, 1), every mutated case validates and encodes to bytes that decode back to it; a backend that
 * declines features (limits.features off) never gets one. The low_lse data term also takes
 * its far shifts (logits below -1e4: beyond 1e4 up to 1e6) and keeps them through the repair. */
#include <stdio.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "util/check.h"

/* What the documents and global keys drawn look like (doc_kinds[]). */
enum {
    DOC_LEN1,
    DOC_ODD,
    DOC_POW2,
    DOC_SEVERAL,
    DOC_EMPTY_TAIL,
    DOC_TAIL,
    GLOBAL_ONE,
    GLOBAL_MORE,
    BLOCK_POW2,
    BLOCK_ODD,
    BLOCK_ONE,
    CUSTOM_ON,
    DOC_KINDS
};
static const char *const doc_kind_names[DOC_KINDS] = {"a document of length 1",
                                                      "an odd length",
                                                      "a power of two",
                                                      "several documents",
                                                      "an empty tail",
                                                      "a tail",
                                                      "one global key",
                                                      "several global keys",
                                                      "a block size of a power of two above 1",
                                                      "an odd block size above 1",
                                                      "a block size of 1",
                                                      "an element mask"};

/* The bias / ALiBi variants: a query-broadcast bias, ALiBi abs, signed, random slopes per
 * head, per (batch, head). */
enum { BA_BIAS_ROW, BA_ABS, BA_SIGNED, BA_RANDOM, BA_RANDOM_BATCH, BA_KINDS };
static int ba_kinds[BA_KINDS];
static int kernel_stream; /* cases with dropout_rng = kernel (each with dropout: checked) */
static int score_mods[4]; /* cases with each score_mod (squared, trig, trig2; [0] unused) */

static void chain(const af_fuzz_limits *lim, int steps, int *feature_steps, int seen[13], int *with_features,
                  int chunk_kinds[2], int doc_kinds[DOC_KINDS], int *far_low_lse) {
    af_case c;
    af_case_defaults(&c);
    uint64_t rng = 12345;
    *feature_steps = *with_features = 0;
    memset(seen, 0, 13 * sizeof *seen);
    memset(doc_kinds, 0, DOC_KINDS * sizeof *doc_kinds);
    chunk_kinds[0] = chunk_kinds[1] = 0;
    *far_low_lse = 0;
    for (int k = 0; k < steps; k++) {
        int m = af_fuzz_mutate_case(&c, lim, &rng);
        if (m == AF_MUT_FEATURE) (*feature_steps)++;
        af_error e;
        CHECK_MSG(af_case_validate(&c, &e) == 0, "step %d: invalid case: %s: %s", k, e.field, e.message);
        uint8_t bytes[AF_FUZZ_MAX_ENCODED];
        size_t n = af_fuzz_encode(&c, bytes, sizeof bytes);
        af_case back;
        CHECK(n > 0 && af_fuzz_decode(bytes, n, lim, &back) == 0);
        CHECK_MSG(af_case_equal(&c, &back), "step %d: the encoding does not decode back", k);
        seen[0] += c.softcap != 0.0;
        seen[1] += c.softmax != AF_SOFTMAX_VANILLA;
        seen[2] += c.bias != AF_BIAS_NONE;
        seen[3] += c.alibi != AF_ALIBI_NO;
        ba_kinds[BA_BIAS_ROW] += af_bias_broadcasts_query(c.bias);
        ba_kinds[BA_ABS] += c.alibi == AF_ALIBI_ABS;
        ba_kinds[BA_SIGNED] += c.alibi == AF_ALIBI_SIGNED;
        ba_kinds[BA_RANDOM] += c.alibi_slopes == AF_SLOPES_RANDOM;
        ba_kinds[BA_RANDOM_BATCH] += c.alibi_slopes == AF_SLOPES_RANDOM_BATCH;
        seen[4] += c.lse_base2;
        seen[5] += c.dlse;
        seen[6] += c.dropout_p != 0.0; /* its seed and offset round-trip through the encoding above */
        kernel_stream += c.dropout_rng == AF_DROPOUT_RNG_KERNEL; /* the stream byte round-trips too */
        CHECK_MSG(c.dropout_rng == AF_DROPOUT_RNG_ATTNFUZZ || c.dropout_p != 0.0, "step %d: kernel stream, no dropout",
                  k);
        seen[7] += c.attention_chunk != 0;
        if (c.attention_chunk > 1) chunk_kinds[(c.attention_chunk & (c.attention_chunk - 1)) == 0]++; /* odd-ish, 2^k */
        seen[8] += c.n_documents > 0;
        seen[9] += c.global_keys > 0;
        int sum = 0;
        for (int d = 0; d < c.n_documents; d++) {
            int len = c.documents[d];
            sum += len;
            doc_kinds[DOC_LEN1] += len == 1;
            doc_kinds[DOC_ODD] += len > 1 && len % 2;
            doc_kinds[DOC_POW2] += len > 1 && (len & (len - 1)) == 0;
        }
        doc_kinds[DOC_SEVERAL] += c.n_documents > 1;
        doc_kinds[DOC_EMPTY_TAIL] += c.n_documents > 0 && sum == c.seqlen_kv;
        doc_kinds[DOC_TAIL] += c.n_documents > 0 && sum < c.seqlen_kv;
        doc_kinds[GLOBAL_ONE] += c.global_keys == 1;
        doc_kinds[GLOBAL_MORE] += c.global_keys > 1;
        for (int side = 0; side < 2 && c.block_mask_q > 0; side++) {
            int bs = side ? c.block_mask_k : c.block_mask_q;
            doc_kinds[BLOCK_POW2] += bs > 1 && (bs & (bs - 1)) == 0;
            doc_kinds[BLOCK_ODD] += bs > 1 && bs % 2;
            doc_kinds[BLOCK_ONE] += bs == 1;
        }
        doc_kinds[CUSTOM_ON] += c.custom_mask_p != 0.0;
        /* the drawn keep probabilities stay in [0.3, 1): most rows keep keys */
        CHECK_MSG(c.block_mask_q == 0 || (c.block_mask_p >= 0.3 && c.block_mask_p < 1.0), "step %d: block_mask P %g", k,
                  c.block_mask_p);
        CHECK_MSG(c.custom_mask_p == 0.0 || (c.custom_mask_p >= 0.3 && c.custom_mask_p < 1.0),
                  "step %d: custom_mask P %g", k, c.custom_mask_p);
        seen[10] += c.block_mask_q > 0;
        seen[11] += c.custom_mask_p != 0.0;
        seen[12] += c.score_mod != AF_SCORE_MOD_NONE;
        CHECK_MSG(c.score_mod == AF_SCORE_MOD_NONE || c.softcap == 0.0, "step %d: score_mod beside softcap", k);
        if (c.score_mod != AF_SCORE_MOD_NONE) score_mods[c.score_mod]++;
        *with_features += af_case_has_features(&c);
        for (int i = 0; i < c.n_data; i++) *far_low_lse += c.data[i].kind == AF_DATA_LOW_LSE && c.data[i].p1 > 1e4;
        if (k % 50 == 49) af_case_defaults(&c); /* restart: keep cases small and varied */
    }
}

int main(void) {
    af_fuzz_limits lim;
    af_fuzz_limits_default(&lim);
    int steps = 3000, feature_steps, seen[13], with, chunk_kinds[2], doc_kinds[DOC_KINDS], far;
    chain(&lim, steps, &feature_steps, seen, &with, chunk_kinds, doc_kinds, &far);
    printf("feature mutation on %d of %d steps; cases with softcap %d, sinks %d, bias %d, alibi %d, log2 %d, dlse %d, "
           "dropout %d, attention_chunk %d (%d of a power of two, %d other sizes); %d with any\n",
           feature_steps, steps, seen[0], seen[1], seen[2], seen[3], seen[4], seen[5], seen[6], seen[7], chunk_kinds[1],
           chunk_kinds[0], with);
    printf("low_lse far below -1e4 in %d; documents %d, global_keys %d, block_mask %d, custom_mask %d;", far, seen[8],
           seen[9], seen[10], seen[11]);
    for (int k = 0; k < DOC_KINDS; k++)
        printf(" %s %d%s", doc_kind_names[k], doc_kinds[k], k + 1 < DOC_KINDS ? "," : "\n");
    CHECK_MSG(feature_steps * 50 >= steps && feature_steps * 100 <= 15 * steps, "feature mutation rate %d / %d",
              feature_steps, steps);
    for (int f = 0; f < 13; f++) CHECK_MSG(seen[f] > 0, "feature %d never drawn", f);
    printf("score_mod squared %d, trig %d, trig2 %d\n", score_mods[1], score_mods[2], score_mods[3]);
    for (int m = 1; m < 4; m++) CHECK_MSG(score_mods[m] > 0, "score_mod %d never drawn", m);
    printf("bias row-broadcast %d, alibi abs %d, signed %d, slopes random %d, random_batch %d\n", ba_kinds[BA_BIAS_ROW],
           ba_kinds[BA_ABS], ba_kinds[BA_SIGNED], ba_kinds[BA_RANDOM], ba_kinds[BA_RANDOM_BATCH]);
    for (int k = 0; k < BA_KINDS; k++) CHECK_MSG(ba_kinds[k] > 0, "bias / ALiBi variant %d never drawn", k);
    printf("dropout with the kernel's own stream %d of %d\n", kernel_stream, seen[6]);
    CHECK_MSG(kernel_stream > 0 && kernel_stream < seen[6], "dropout_rng = kernel in %d of %d dropout cases",
              kernel_stream, seen[6]);
    for (int k = 0; k < DOC_KINDS; k++) CHECK_MSG(doc_kinds[k] > 0, "never drawn: %s", doc_kind_names[k]);
    CHECK_MSG(chunk_kinds[0] > 0 && chunk_kinds[1] > 0, "chunk sizes: %d powers of two, %d others", chunk_kinds[1],
              chunk_kinds[0]);
    CHECK_MSG(far > 0, "low_lse never shifted logits below -1e4");
    lim.features = false;
    chain(&lim, 600, &feature_steps, seen, &with, chunk_kinds, doc_kinds, &far);
    CHECK_MSG(with == 0, "%d cases with features under limits that forbid them", with);
    printf("test_fuzz_features: ok\n");
    return 0;
}
