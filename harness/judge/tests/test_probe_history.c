/* test_probe_history.c — the process-history probe (judge/probes/history.c) as a
 * specification:
 *   planted:kernel_cache_scale (its instance caches compiled kernels keyed by shape only,
 *   the scale baked in at the first compile) passes the judge on each case (its first
 *   case of that shape); the determinism probe alone sees nothing, and the history probe
 *   finds it: a nondeterministic finding whose detail names the scale, after two runs
 *   (forward, backward, GQA, causal, thd);
 *   planted:none and flash_ref (plugins: the probe runs by default) and cpu (with
 *   history_all; by default it keeps no state and the probe does not run) give no
 *   finding after two runs on the same cases;
 *   a plugin backend that cannot make a fresh instance is skipped with a note.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/tests/plugin_fixture.h"
#include "judge/runner.h"
#include "judge/tests/probe_fixture.h"
#include "util/check.h"

/* The determinism probe and, when history, the history probe (history_all: on any
 * backend) after the judged run (probe_fixture.h). */
static void probe(af_backend *be, af_backend *cpu, const char *text, bool history, bool history_all, af_verdict *pv,
                  af_probe_stats *ps) {
    af_probe_opts o;
    memset(&o, 0, sizeof o);
    o.determinism = true;
    o.determinism_runs = 1;
    o.history = history;
    o.history_all = history_all;
    fx_probe_judged(be, cpu, text, &o, false, pv, ps);
}

/* Each a shape of its own: the planted kernel's first compile of it is right. */
static const char *const cases[] = {
    "dtype = fp16\nseqlen = 16\nhead_dim = 64\n",
    ("dtype = bf16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 20\nseqlen_kv = 44\nhead_dim = 32\n"
     "backward = yes\n"),
    "dtype = fp16\nheads = 2\nseqlen = 33\nhead_dim = 40\nmask = causal\nbackward = yes\n",
    ("dtype = fp16\nbatch = 3\nheads = 2\nseqlen = 64\nseqlens_q = 20,64,7\nseqlens_kv = 30,50,64\n"
     "layout = thd\nhead_dim = 64\nmask = padding_causal\n"),
};

int main(void) {
    af_backend *cpu = af_backend_cpu_new();
    af_backend *bug = fx_load_plugin("planted_kernel_cache_scale"), *none = fx_load_plugin("planted_none");
    af_backend *flash = fx_load_plugin("flash_ref");
    size_t n = sizeof cases / sizeof cases[0];
    af_verdict v;
    af_probe_stats ps;
    char line[1024];
    for (size_t k = 0; k < n; k++) {
        probe(bug, cpu, cases[k], false, false, &v, &ps); /* determinism alone sees nothing */
        af_verdict_line(&v, line, sizeof line);
        CHECK_MSG(v.n_findings == 0 && ps.history_runs == 0, "without history: %s\n%s", line, cases[k]);
        probe(bug, cpu, cases[k], true, false, &v, &ps);
        af_verdict_line(&v, line, sizeof line);
        CHECK_MSG(fx_has_finding(&v, AF_V_NONDETERMINISTIC, "history: scale") && ps.history_runs == 2,
                  "history missed kernel_cache_scale (%d runs, %s): %s\n%s", ps.history_runs, ps.notes, line, cases[k]);
        af_backend *controls[3] = {none, flash, cpu};
        for (int i = 0; i < 3; i++) {
            probe(controls[i], cpu, cases[k], true, controls[i] == cpu, &v, &ps);
            af_verdict_line(&v, line, sizeof line);
            CHECK_MSG(ps.history_runs == 2 && v.n_findings == 0, "%s: %d runs, %s (%s)\n%s", controls[i]->name,
                      ps.history_runs, line, ps.notes, cases[k]);
        }
    }
    /* the cpu keeps no state: by default the probe does not run on it */
    probe(cpu, cpu, cases[0], true, false, &v, &ps);
    CHECK_MSG(ps.history_runs == 0 && v.n_findings == 0, "cpu ran history by default: %d runs", ps.history_runs);
    /* a plugin without a fresh instance: skipped with a note, no run */
    af_backend no_fresh = *none;
    no_fresh.fresh = NULL;
    probe(&no_fresh, cpu, cases[0], true, false, &v, &ps);
    CHECK_MSG(ps.history_runs == 0 && v.n_findings == 0 && strstr(ps.notes, "history: skipped"), "%s", ps.notes);
    bug->destroy(bug);
    none->destroy(none);
    flash->destroy(flash);
    cpu->destroy(cpu);
    printf("history: kernel_cache_scale caught on %zu cases; planted:none, flash_ref and cpu unchanged\n", n);
    return 0;
}
