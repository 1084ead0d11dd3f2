/* test_probe_capacity.c — the capacity-invariance probe (judge/probes/capacity.c) as a
 * specification:
 *   planted:pad_to_tile (its key loop runs to len_kv rounded up to 64, cut at the
 *   allocation, unmasked) passes the judge and every other probe on cases whose
 *   allocation is tight (padded bshd, thd without gaps, paged, backward, GQA), and the
 *   capacity probe alone finds it there: a leak whose detail says "capacity", after two
 *   larger-allocation runs;
 *   planted:none, flash_ref and cpu give no finding on the same cases and on padded,
 *   window, sink and stride-gap cases (one run each: nothing moved);
 *   fp8 and bias cases are skipped with a note, no run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/tests/plugin_fixture.h"
#include "judge/runner.h"
#include "judge/tests/probe_fixture.h"
#include "util/check.h"

/* After the judged run (probe_fixture.h; a declined case runs no probe): the capacity
 * probe alone (capacity = true) or every other one. */
static void probe(af_backend *be, af_backend *cpu, const char *text, bool capacity, af_verdict *pv,
                  af_probe_stats *ps) {
    af_probe_opts o;
    if (capacity) {
        memset(&o, 0, sizeof o);
        o.determinism = o.capacity = true;
        o.determinism_runs = 1;
    } else {
        af_probe_opts_default(&o);
        o.capacity = false;
    }
    fx_probe_judged(be, cpu, text, &o, true, pv, ps);
}

/* Tight allocations: the planted kernel reads nothing past a sequence in them. */
static const char *const tight_cases[] = {
    "dtype = fp16\nseqlen = 16\nhead_dim = 64\n",
    ("dtype = bf16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 20\nseqlen_kv = 44\nhead_dim = 32\n"
     "backward = yes\n"),
    ("dtype = fp16\nbatch = 3\nheads = 2\nseqlen = 64\nseqlens_q = 20,64,7\nseqlens_kv = 30,50,64\n"
     "layout = thd\nhead_dim = 64\nmask = padding\n"),
    "dtype = bf16\nbatch = 2\nseqlen_q = 16\nseqlen_kv = 100\npage_size = 16\nhead_dim = 64\n",
    "dtype = fp16\nbatch = 2\nheads = 3\nseqlen = 37\nhead_dim = 48\nlayout = sbhd\nstride_gap = 8\n",
};
/* More for the correct kernels: padding rows, a window, sinks, bottom-right causal. */
static const char *const more_cases[] = {
    ("dtype = fp16\nbatch = 2\nheads = 2\nseqlen = 48\nseqlens_q = 40,48\nseqlens_kv = 30,41\nhead_dim = 32\n"
     "mask = padding_causal\nbackward = yes\n"),
    "dtype = bf16\nseqlen_q = 30\nseqlen_kv = 61\nhead_dim = 64\nmask = causal_bottom_right\nwindow = 5,0\n",
    "dtype = fp16\nheads = 2\nseqlen = 33\nhead_dim = 40\nsoftmax = learnable\n",
};

int main(void) {
    af_backend *cpu = af_backend_cpu_new();
    af_backend *bug = fx_load_plugin("planted_pad_to_tile"), *none = fx_load_plugin("planted_none");
    af_backend *flash = fx_load_plugin("flash_ref");
    size_t n_tight = sizeof tight_cases / sizeof tight_cases[0], n_more = sizeof more_cases / sizeof more_cases[0];
    af_verdict v;
    af_probe_stats ps;
    char line[1024];
    for (size_t k = 0; k < n_tight; k++) {
        probe(bug, cpu, tight_cases[k], false, &v, &ps); /* the other probes see nothing */
        af_verdict_line(&v, line, sizeof line);
        CHECK_MSG(v.n_findings == 0, "the other probes found pad_to_tile: %s\n%s", line, tight_cases[k]);
        probe(bug, cpu, tight_cases[k], true, &v, &ps);
        af_verdict_line(&v, line, sizeof line);
        printf("  pad_to_tile: %s\n", line);
        CHECK_MSG(fx_has_finding(&v, AF_V_LEAK, "capacity: in a larger allocation") && ps.capacity_runs == 2 &&
                      ps.probe_s[8] > 0,
                  "capacity missed pad_to_tile (%d runs, %s): %s\n%s", ps.capacity_runs, ps.notes, line,
                  tight_cases[k]);
    }
    af_backend *kernels[3] = {none, flash, cpu};
    for (int i = 0; i < 3; i++)
        for (size_t k = 0; k < n_tight + n_more; k++) {
            const char *text = k < n_tight ? tight_cases[k] : more_cases[k - n_tight];
            probe(kernels[i], cpu, text, true, &v, &ps);
            if (ps.extra_runs == 0 && !ps.capacity_runs) continue; /* declined (sinks on flash_ref) */
            af_verdict_line(&v, line, sizeof line);
            CHECK_MSG(ps.capacity_runs == 1 && v.n_findings == 0, "%s: %d runs, %s (%s)\n%s", kernels[i]->name,
                      ps.capacity_runs, line, ps.notes, text);
        }
    /* skipped: fp8 (per-tensor scales), bias (generated over the maximum shape) */
    const char *skipped[2] = {"dtype = fp8_e4m3\nseqlen = 16\nhead_dim = 64\n",
                              "dtype = fp16\nseqlen = 16\nhead_dim = 64\nbias = bhss\n"};
    for (int k = 0; k < 2; k++) {
        probe(cpu, cpu, skipped[k], true, &v, &ps);
        CHECK_MSG(ps.capacity_runs == 0 && v.n_findings == 0 && strstr(ps.notes, "capacity: skipped"), "%s\n%s",
                  ps.notes, skipped[k]);
    }
    bug->destroy(bug);
    none->destroy(none);
    flash->destroy(flash);
    cpu->destroy(cpu);
    printf("capacity: pad_to_tile caught on %zu tight cases the other probes pass; planted:none, flash_ref and cpu "
           "unchanged on %zu\n",
           n_tight, n_tight + n_more);
    return 0;
}
