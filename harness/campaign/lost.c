/* campaign/lost.c — the backend going away in the middle of a campaign (a GPU that falls
 * off the bus, a driver reset). Without this, every later case is declined in a moment
 * ("no usable CUDA device"), the declines teach the learnt envelope that every cell is
 * outside, the minimiser calls each new finding "passes now", and the campaign's remaining
 * time goes to nothing. Here the first sign stops the campaign: a fresh child's decline
 * whose available() failed (session.c: af_session_result.unavailable), or, after a crash
 * or hang of a GPU backend, available() failing in a fresh child. What was found stays;
 * the cases in flight and the one answered unavailable go to DIR/lost/run<R>-<n>.case. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "campaign/campaign_internal.h"
#include "util/clock.h"
#include "util/fsutil.h"

void af_camp_keep_lost(af_campaign_state *cp, const af_case *c, const char *why) {
    char dir[1200], path[1400], err[1600];
    af_camp_subdir(cp, "lost", dir, sizeof dir);
    if (af_mkdirs(dir, err, sizeof err)) {
        af_camp_write_failed(cp, "a case in flight when the backend went away", err);
        return;
    }
    /* the run number first: a resumed run's cases never replace an earlier run's ("x") */
    snprintf(path, sizeof path, "%s/run%d-%d.case", dir, cp->st.resumed, cp->st.lost_cases);
    FILE *f = fopen(path, "wx");
    if (f) {
        fprintf(f, "# not judged: %s\n", why);
        af_case_write(c, f);
        if (fclose(f) == 0) {
            cp->st.lost_cases++;
            return;
        }
    }
    snprintf(err, sizeof err, "%s: %s", path, strerror(errno));
    af_camp_write_failed(cp, "a case in flight when the backend went away", err);
}

static void mark_lost(af_campaign_state *cp, const char *why) {
    snprintf(cp->st.backend_lost, sizeof cp->st.backend_lost, "%s", why[0] ? why : "backend unavailable");
    cp->st.backend_lost_at_s = af_camp_elapsed(cp);
    fprintf(stderr,
            "%sattnfuzz campaign: the backend became unavailable after %.1f s (%s): stopping; every finding so "
            "far is kept, the cases in flight go to %s/lost/\n",
            cp->tty ? "\r\033[K" : "", cp->st.backend_lost_at_s, cp->st.backend_lost, cp->dir);
}

bool af_camp_backend_lost(af_campaign_state *cp, const af_case *c, const af_session_result *r) {
    if (af_camp_is_lost(cp)) return true;
    if (r && r->unavailable) {
        mark_lost(cp, r->why);
        if (c) af_camp_keep_lost(cp, c, r->why);
        return true;
    }
    /* a persistent worker's context outlives the device without declining: its runs
     * crash or hang instead; a fresh child tells (at most once per AF_CAMP_LOST_PROBE_S) */
    if (!af_backend_runs_on_gpu(cp->s.backend)) return false;
    if (r && r->status != AF_CASE_CRASHED && r->status != AF_CASE_HUNG && !af_session_result_is_crash(r)) return false;
    double now = af_clock_mono();
    if (cp->last_lost_probe > 0 && now - cp->last_lost_probe < AF_CAMP_LOST_PROBE_S) return false;
    cp->last_lost_probe = now;
    char why[512] = "", said[600];
    if (af_session_available(&cp->s, why, sizeof why) == 0) return false;
    snprintf(said, sizeof said, "backend %s became unavailable: %s", cp->s.backend_name, why);
    mark_lost(cp, said);
    return true;
}
