/* test_oracle_cert.c — host logic of the fp64 tiers' certification by MPFR (runs in CI).
 *
 *  - the sampled set grows with the case: more hashed rows per sequence, a larger work
 *    budget (cert_fraction of the total) up to the time budget cert_seconds;
 *  - af_cert_ratio: 0 for equal values (infinities included), the gap over the bound;
 *  - tier GPU without a usable GPU falls back to the CPU fp64 tier with a note, and is
 *    still certified (rows and key columns > 0, gap / bound <= 1); with a GPU it is the
 *    GPU tier; AUTO over budget does the same;
 *  - the CPU fp64 tier stays within its stated bound on every sampled element of 40
 *    random problems (gap / bound <= 1).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "oracle/src/oracle_internal.h"
#include "oracle/gpu/oracle_gpu.h"
#include "oracle/tests/oracle_testlib.h"

static void sampling_grows(void) {
    CHECK(af_oracle_sample_hashed(10, 1) == 4);
    CHECK(af_oracle_sample_hashed(4096, 16) > af_oracle_sample_hashed(1024, 16));
    CHECK(af_oracle_sample_hashed(131072, 16) >= 150);

    af_oracle_opts o;
    af_oracle_opts_default(&o);
    double counts[2], budgets[2];
    int seqs[2] = {256, 1024};
    for (int k = 0; k < 2; k++) {
        test_shape s = {1, 2, 2, seqs[k], seqs[k], 8, 8, true, false, -1, -1, true, 0};
        test_problem t;
        test_problem_init(&t, &s);
        o.mpfr_budget = 1e3; /* so that the growth term decides */
        o.cert_fraction = 0.05;
        double rb, kb;
        af_oracle_sample_budgets(&t.p, &o, 2, &rb, &kb);
        CHECK(rb == kb && rb >= 0.5 * o.mpfr_budget);
        CHECK(fabs(rb - 0.5 * o.cert_fraction * af_oracle_total_work(&t.p)) <= 1e-9 * rb);
        af_sample_item *items = NULL;
        int n = af_oracle_sample_rows(&t.p, rb, &items);
        CHECK(n > 0);
        free(items);
        counts[k] = n;
        budgets[k] = rb;
        /* the time budget caps the growth */
        af_oracle_opts capped = o;
        capped.cert_seconds = 1e-3;
        af_oracle_sample_budgets(&t.p, &capped, 2, &rb, &kb);
        double cap = 1e-3 * 2 / AF_ORACLE_MPFR_UNIT_SECONDS;
        CHECK(rb <= 0.5 * fmax(capped.mpfr_budget, cap) * (1 + 1e-12));
        if (0.5 * o.cert_fraction * af_oracle_total_work(&t.p) > cap) CHECK(rb < budgets[k]);
        test_problem_free(&t);
    }
    CHECK(budgets[1] > 10 * budgets[0]);
    CHECK_MSG(counts[1] > 2 * counts[0], "sampled rows %g -> %g", counts[0], counts[1]);
    printf("sampled rows: s=256 %g, s=1024 %g\n", counts[0], counts[1]);
}

static void ratio_semantics(void) {
    double x[4] = {1.0, -INFINITY, 2.0, 0.0}, y[4] = {1.0, -INFINITY, 2.0 + 1e-10, 0.0}, m[4] = {1, 1, 1, 1};
    CHECK(af_cert_ratio(x, x, 4, m, 1e-16, 1e-16, 0.0) == 0.0);
    double r = af_cert_ratio(x, y, 4, m, 0.0, 1e-10, 0.0);
    CHECK(r > 0.99 && r < 1.0);
    CHECK(af_cert_ratio(x, y, 4, m, 0.0, 1e-11, 0.0) > 9.0);
    double inf = INFINITY, one = 1.0;
    CHECK(af_cert_ratio(&one, &inf, 1, m, 0.1, 0.1, 0.0) == INFINITY);
}

static void gpu_tier_selection(void) {
    char why[256];
    bool gpu = af_oracle_gpu_usable(why, sizeof why) == 0;
    printf("GPU usable here: %s%s%s\n", gpu ? "yes" : "no (", gpu ? "" : why, gpu ? "" : ")");
    test_shape s = {2, 4, 2, 40, 50, 16, 12, true, true, 3, -1, true, 0};
    test_problem t;
    test_problem_init(&t, &s);
    test_problem_randomize(&t, 7, 1.0);
    t.len_q[1] = 30;
    af_oracle_tier tiers[2] = {AF_ORACLE_GPU, AF_ORACLE_AUTO};
    af_oracle_result fp64;
    test_run(&t, AF_ORACLE_FP64, 128, 2, &fp64);
    for (int k = 0; k < 2; k++) {
        af_oracle_opts o;
        af_oracle_opts_default(&o);
        o.tier = tiers[k];
        o.threads = 2;
        o.mpfr_budget = 1.0; /* AUTO: over budget */
        af_oracle_result r;
        CHECK_MSG(af_oracle_run(&t.p, &o, &r, why, sizeof why) == 0, "%s", why);
        CHECK(!r.all_mpfr);
        if (gpu) {
            CHECK_MSG(r.tier_used == AF_ORACLE_GPU && r.note[0] == 0, "tier %d note '%s'", (int)r.tier_used, r.note);
        } else {
            CHECK(r.tier_used == AF_ORACLE_FP64);
            CHECK_MSG(strstr(r.note, "GPU fp64 tier not used") && strstr(r.note, "CPU fp64 tier instead"), "note '%s'",
                      r.note);
            /* every element not certified is the CPU fp64 tier's, bit for bit */
            size_t rows = test_rows(&t);
            int same = 0;
            for (size_t x = 0; x < rows * t.p.Dv; x++) same += r.out.o[x] == fp64.out.o[x];
            CHECK(same > 0);
        }
        CHECK(r.cert_rows > 0 && r.cert_keys > 0 && r.mpfr_rows == r.cert_rows);
        CHECK_MSG(r.cert_gap_over_bound <= 1.0, "gap / bound %g", r.cert_gap_over_bound);
        printf("tier %s: used %s, %d rows + %d keys certified, gap/bound %.3g%s%s\n", k ? "auto" : "gpu",
               r.tier_used == AF_ORACLE_GPU ? "gpu" : "cpu fp64", r.cert_rows, r.cert_keys, r.cert_gap_over_bound,
               r.note[0] ? ", note: " : "", r.note);
        af_oracle_result_free(&r);
    }
    /* FP64 stays uncertified, MPFR is exact */
    CHECK(fp64.cert_rows == 0 && fp64.tier_used == AF_ORACLE_FP64);
    af_oracle_result_free(&fp64);
    test_problem_free(&t);
}

static void cpu_fp64_within_bound(void) {
    double worst = 0.0;
    for (int k = 0; k < 40; k++) {
        test_problem t;
        test_problem_random(&t, 500 + (uint64_t)k);
        af_oracle_opts o;
        af_oracle_opts_default(&o);
        o.mpfr_budget = 1.0;
        o.threads = 2;
        af_oracle_result r;
        char why[512];
        CHECK_MSG(af_oracle_run(&t.p, &o, &r, why, sizeof why) == 0, "case %d: %s", k, why);
        CHECK_MSG(r.cert_gap_over_bound <= 1.0, "case %d: %g", k, r.cert_gap_over_bound);
        worst = fmax(worst, r.cert_gap_over_bound);
        af_oracle_result_free(&r);
        test_problem_free(&t);
    }
    printf("CPU fp64 tier: worst gap / stated bound on sampled elements %.3g\n", worst);
}

int main(void) {
    sampling_grows();
    ratio_semantics();
    gpu_tier_selection();
    cpu_fp64_within_bound();
    CHECK_DONE("test_oracle_cert");
}
