/* test_probes_recent.c — the probes that recent real bugs needed (judge/probes/probes.h),
 * as a specification: each catches its planted bug (harness/plugins/probe_bug) and
 * passes flash_ref (a correct flash-style kernel) and the cpu backend:
 *   batch invariance  probe_bug:batch_variant (batch-1 runs flip a last bit of O) is
 *                     nondeterministic, "not batch invariant"; ragged, thd, paged and
 *                     GQA batches of flash_ref and cpu give their rows bitwise alone;
 *   stale data        probe_bug:reads_padding (its last tile reads the key past the
 *                     end, masked by x0) turns O NaN under NaN padding; flash_ref and
 *                     cpu keep every output under NaN and huge values in padding rows,
 *                     page tails, unused pages, thd and stride gaps;
 *   LSE convention    probe_bug:lse_log2 is one convention finding on LSE naming the
 *                     fix (ln 2) and no mismatch; probe_bug:masked_pos_inf is a
 *                     convention finding naming the fix (-inf) and no mismatch or
 *                     nan_inf; flash_ref and cpu have no convention finding.
 * Each probe runs alone (af_probes_run on the judged run's buffers) so that the
 * finding is its own; the convention cases go through the whole runner, which drops
 * the LSE mismatches a base-2 LSE explains.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/tests/plugin_fixture.h"
#include "judge/clone.h"
#include "judge/runner.h"
#include "judge/tests/probe_fixture.h"
#include "util/check.h"

typedef enum { ONLY_BATCH, ONLY_STALE } which_probe;

/* One probe alone after the judged run (probe_fixture.h): its findings into *pv, its
 * statistics into *ps. */
static void probe_alone(af_backend *be, af_backend *cpu, const char *text, which_probe which, af_verdict *pv,
                        af_probe_stats *ps) {
    af_probe_opts o;
    memset(&o, 0, sizeof o);
    o.determinism = true;
    o.determinism_runs = 1;
    o.batch = which == ONLY_BATCH;
    o.stale = which == ONLY_STALE;
    fx_probe_judged(be, cpu, text, &o, false, pv, ps);
}

static void print_first(const char *what, const af_verdict *v) {
    char line[1024];
    af_verdict_line(v, line, sizeof line);
    printf("  %s: %s\n", what, line);
}

/* ---- batch invariance ------------------------------------------------------------ */

static const char *const batch_cases[] = {
    /* ragged, the last sequence longest */
    "dtype = fp16\nbatch = 3\nheads = 2\nseqlen = 64\nseqlens_q = 20,33,64\nseqlens_kv = 30,50,64\n"
    "head_dim = 32\nmask = padding_causal\nbackward = yes\n",
    "dtype = bf16\nbatch = 3\nheads = 2\nseqlen = 48\nseqlens_q = 7,20,48\nseqlens_kv = 9,30,48\nlayout = thd\n"
    "thd_gap = 3\nhead_dim = 64\nmask = padding_causal_bottom_right\nbackward = yes\n",
    "dtype = bf16\nbatch = 2\nheads = 2\nseqlen_q = 20\nseqlen_kv = 100\nhead_dim = 64\npage_size = 16\n"
    "mask = padding_causal_bottom_right\nseqlens_q = 11,20\nseqlens_kv = 37,100\n",
    "dtype = fp16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen = 300\nhead_dim = 16\nbackward = yes\n",
};

static void batch_invariance(af_backend *cpu) {
    af_backend *bug = fx_load_plugin("probe_bug_batch_variant"), *flash = fx_load_plugin("flash_ref");
    af_backend *kernels[2] = {flash, cpu};
    for (size_t k = 0; k < sizeof batch_cases / sizeof batch_cases[0]; k++) {
        af_verdict v;
        af_probe_stats ps;
        probe_alone(bug, cpu, batch_cases[k], ONLY_BATCH, &v, &ps);
        print_first("batch_variant", &v);
        CHECK_MSG(ps.batch_checked && fx_has_finding(&v, AF_V_NONDETERMINISTIC, "not batch invariant"),
                  "batch invariance missed probe_bug:batch_variant on\n%s", batch_cases[k]);
        CHECK(v.findings[0].tensor == AF_T_O && v.findings[0].row == 0);
        for (int i = 0; i < 2; i++) {
            probe_alone(kernels[i], cpu, batch_cases[k], ONLY_BATCH, &v, &ps);
            char line[1024];
            af_verdict_line(&v, line, sizeof line);
            CHECK_MSG(ps.batch_checked && v.n_findings == 0, "%s: %s (%s)\n%s", kernels[i]->name, line, ps.notes,
                      batch_cases[k]);
        }
    }
    /* batch 1 has nothing to compare; a nondeterministic backend is not asked */
    af_verdict v;
    af_probe_stats ps;
    probe_alone(bug, cpu, "dtype = fp16\nseqlen = 32\nhead_dim = 32\n", ONLY_BATCH, &v, &ps);
    CHECK(!ps.batch_checked && v.n_findings == 0);
    bug->destroy(bug);
    flash->destroy(flash);
    printf("batch invariance: caught on %zu cases, flash_ref and cpu invariant\n",
           sizeof batch_cases / sizeof batch_cases[0]);
}

/* ---- stale data --------------------------------------------------------------------- */

static const char *const stale_cases[] = {
    /* padding rows past each sequence (K/V and Q/dO) */
    "dtype = fp16\nbatch = 2\nheads = 2\nseqlen = 48\nseqlens_q = 40,48\nseqlens_kv = 30,41\nhead_dim = 32\n"
    "mask = padding_causal\nbackward = yes\n",
    /* page tails and unused pages */
    "dtype = bf16\nbatch = 2\nheads = 2\nseqlen_q = 20\nseqlen_kv = 100\nhead_dim = 64\npage_size = 16\n"
    "mask = padding_causal_bottom_right\nseqlens_q = 20,11\nseqlens_kv = 100,37\n",
    /* stride gaps, sbhd */
    "dtype = bf16\nbatch = 2\nheads = 3\nseqlen = 37\nseqlens_q = 37,20\nseqlens_kv = 37,25\nhead_dim = 48\n"
    "layout = sbhd\nstride_gap = 8\nmask = padding\nbackward = yes\n",
};
/* thd gaps: the planted kernel reads past the end only in padded layouts, so this one
 * is for the correct kernels */
static const char *const stale_thd_case =
    "dtype = fp16\nbatch = 3\nheads = 2\nseqlen = 64\nseqlens_q = 20,64,7\nseqlens_kv = 30,50,64\n"
    "layout = thd\nthd_gap = 3\nhead_dim = 64\nmask = padding_causal_bottom_right\nbackward = yes\n";

static void stale_data(af_backend *cpu) {
    af_backend *bug = fx_load_plugin("probe_bug_reads_padding"), *flash = fx_load_plugin("flash_ref");
    af_backend *kernels[2] = {flash, cpu};
    size_t n = sizeof stale_cases / sizeof stale_cases[0];
    for (size_t k = 0; k <= n; k++) {
        const char *text = k < n ? stale_cases[k] : stale_thd_case;
        af_verdict v;
        af_probe_stats ps;
        if (k < n) {
            probe_alone(bug, cpu, text, ONLY_STALE, &v, &ps);
            print_first("reads_padding", &v);
            CHECK_MSG(fx_has_finding(&v, AF_V_NAN_INF, "stale data: NaN"), "stale data missed reads_padding on\n%s",
                      text);
            CHECK(v.findings[0].tensor == AF_T_O);
        }
        for (int i = 0; i < 2; i++) {
            probe_alone(kernels[i], cpu, text, ONLY_STALE, &v, &ps);
            char line[1024];
            af_verdict_line(&v, line, sizeof line);
            CHECK_MSG(ps.stale_runs == 2 && v.n_findings == 0, "%s: %s (%s)\n%s", kernels[i]->name, line, ps.notes,
                      text);
        }
    }
    bug->destroy(bug);
    flash->destroy(flash);
    printf("stale data: caught on %zu cases, flash_ref and cpu unchanged on %zu\n", n, n + 1);
}

/* ---- LSE convention (through the runner, all probes) ------------------------------ */

static void judge_all(af_backend *be, af_backend *cpu, const char *text, af_verdict *v) {
    af_case c;
    fx_parse_case(&c, text);
    af_runner r;
    fx_probe_runner(&r, cpu, true);
    af_prepared p;
    char why[512] = "";
    CHECK_MSG(af_prepare(&r, &c, &p, why, sizeof why) == 0, "%s", why);
    af_judge(&r, &p, be, "", v, NULL);
    af_prepared_free(&p);
}

static int count_kind(const af_verdict *v, af_verdict_kind kind) {
    int n = 0;
    for (int i = 0; i < v->n_findings && i < AF_MAX_FINDINGS; i++) n += v->findings[i].kind == kind;
    return n;
}

/* rows 24.. of a causal 40 x 24 top-left case with a window see no key */
static const char *const masked_case =
    "dtype = bf16\nseqlen_q = 40\nseqlen_kv = 24\nhead_dim = 64\nmask = causal\nwindow = 3,0\nbackward = yes\n";
static const char *const plain_cases[] = {
    "dtype = fp16\nbatch = 2\nheads = 2\nseqlen = 48\nseqlens_q = 40,48\nseqlens_kv = 30,48\n"
    "mask = padding_causal\nhead_dim = 32\nbackward = yes\n",
    "dtype = bf16\nheads_q = 4\nheads_kv = 1\nseqlen_q = 14\nseqlen_kv = 300\nhead_dim = 64\nbackward = yes\n"
    "data = normal:4\n",
};

static void lse_convention(af_backend *cpu) {
    af_backend *log2_bug = fx_load_plugin("probe_bug_lse_log2"), *inf_bug = fx_load_plugin("probe_bug_masked_pos_inf");
    af_backend *flash = fx_load_plugin("flash_ref");
    af_verdict v;
    for (size_t k = 0; k < 2; k++) {
        judge_all(log2_bug, cpu, plain_cases[k], &v);
        print_first("lse_log2", &v);
        CHECK(v.kind == AF_V_CONVENTION && v.findings[0].tensor == AF_T_LSE);
        CHECK(strstr(v.findings[0].detail, "base 2") && strstr(v.findings[0].detail, "fix: store lse2 * ln 2"));
        CHECK(count_kind(&v, AF_V_MISMATCH) == 0 && v.n_findings == 1);
        CHECK(v.stats[AF_T_LSE].ratio > 1); /* the criterion alone saw a mismatch */
    }
    judge_all(log2_bug, cpu, masked_case, &v);
    CHECK(v.kind == AF_V_CONVENTION && count_kind(&v, AF_V_MISMATCH) == 0);
    judge_all(inf_bug, cpu, masked_case, &v);
    print_first("masked_pos_inf", &v);
    CHECK(v.kind == AF_V_CONVENTION && v.findings[0].tensor == AF_T_LSE);
    CHECK(strstr(v.findings[0].detail, "LSE = inf") && strstr(v.findings[0].detail, "fix: store -inf"));
    CHECK(count_kind(&v, AF_V_MISMATCH) == 0 && count_kind(&v, AF_V_NAN_INF) == 0);
    af_backend *kernels[2] = {flash, cpu};
    for (int i = 0; i < 2; i++) {
        judge_all(kernels[i], cpu, masked_case, &v);
        CHECK_MSG(v.kind == AF_V_PASS, "%s on the masked case: %s", kernels[i]->name, v.findings[0].detail);
        for (size_t k = 0; k < 2; k++) {
            judge_all(kernels[i], cpu, plain_cases[k], &v);
            CHECK_MSG(v.kind == AF_V_PASS, "%s: %s", kernels[i]->name, v.findings[0].detail);
        }
    }
    log2_bug->destroy(log2_bug);
    inf_bug->destroy(inf_bug);
    flash->destroy(flash);
    printf("LSE convention: base 2 and +inf reported as conventions with their fix; flash_ref and cpu pass\n");
}

int main(void) {
    af_backend *cpu = af_backend_cpu_new();
    batch_invariance(cpu);
    stale_data(cpu);
    lse_convention(cpu);
    cpu->destroy(cpu);
    CHECK_DONE("test_probes_recent");
}
