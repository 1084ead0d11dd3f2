/* campaign/sweep.c — the deterministic sweep into a campaign's queue (campaign_internal.h):
 * af_fuzz_sweep's variants of the default case and of the default case causal with a
 * backward (the features that need a mask or a backward), and with seeds of the user's own
 * of the smallest of them too; kept in cp->sweep, which the in-process engine runs once
 * after the seeds (a variant joins the queue only when it reaches a new feature, as a mutant
 * does), and written to DIR/corpus as seed-sweep-N (libFuzzer's workers read them there). */
#include <stdio.h>
#include <stdlib.h>

#include "campaign/campaign_internal.h"
#include "util/fsutil.h"

#define SWEEP_BASES 3

/* The queued seed of least work (not the default case, queue entry 0), into *c; false
 * when there is none. */
static bool smallest_seed(const af_campaign_state *cp, af_case *c) {
    bool found = false;
    double least = 0;
    for (int i = 1; i < cp->queue.count; i++) {
        af_case s;
        af_fuzz_decode(cp->queue.items[i].data, cp->queue.items[i].size, &cp->s.limits, &s);
        double w = af_fuzz_budget_work(&s);
        if (!found || w < least) *c = s, least = w, found = true;
    }
    return found;
}

int af_camp_queue_sweep(af_campaign_state *cp, const char *corpus_dir) {
    af_case bases[SWEEP_BASES];
    int nb = 0;
    af_case_defaults(&bases[nb]);
    af_fuzz_repair(&bases[nb++], &cp->s.limits);
    bases[nb] = bases[0];
    bases[nb].mask = AF_MASK_CAUSAL;
    bases[nb].backward = true;
    af_fuzz_repair(&bases[nb++], &cp->s.limits);
    if (cp->o->n_corpus > 0 && smallest_seed(cp, &bases[nb])) nb++;
    af_case *all = malloc(SWEEP_BASES * AF_FUZZ_SWEEP_MAX * sizeof *all);
    if (!all) return 0;
    int n = 0;
    for (int b = 0; b < nb; b++) {
        int start = n, got = af_fuzz_sweep(&bases[b], &cp->s.limits, all + start, AF_FUZZ_SWEEP_MAX);
        for (int k = 0; k < got; k++) { /* a variant two bases share runs once; n <= start + k */
            bool seen = false;
            for (int j = 0; j < start && !seen; j++) seen = af_case_equal(&all[j], &all[start + k]);
            if (!seen) {
                all[n] = all[start + k];
                n++;
            }
        }
    }
    int queued = 0;
    for (int k = 0; k < n; k++) {
        uint8_t bytes[AF_FUZZ_MAX_ENCODED];
        size_t len = af_fuzz_encode(&all[k], bytes, sizeof bytes);
        if (len == 0) continue;
        af_queue_offer(&cp->sweep, bytes, len, NULL, true);
        queued++;
        char path[1400], why[1500];
        snprintf(path, sizeof path, "%s/seed-sweep-%d", corpus_dir, k);
        if (af_write_file_atomic(path, bytes, len, why, sizeof why)) af_camp_write_failed(cp, "a sweep input", why);
    }
    free(all);
    return queued;
}
