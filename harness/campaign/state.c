/* campaign/state.c — the campaign's shared state (af_campaign_state, campaign_internal.h)
 * and what every part of a campaign asks of it: a failed write counted (it ends the run),
 * the deadline now, DIR's subfolders, the
 * bucket count, elapsed time, the stats and progress line, the corpus count and merge.
 * The engines (inprocess.c, libfuzzer.c), the pending findings (pending.c) and the
 * resume (resume.c) call these; af_campaign_run (campaign.c) calls the engines. Nothing
 * here calls back into campaign.c, so the call graph has no circle through it. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "campaign/campaign_internal.h"
#include "campaign/corpus_merge.h"
#include "util/clock.h"

#define WRITE_ERRORS_SAID 10 /* failed writes said one line each; the rest only counted */

void af_camp_write_failed(af_campaign_state *cp, const char *what, const char *why) {
    cp->st.write_errors++;
    cp->write_failed = true;
    if (cp->st.write_errors <= WRITE_ERRORS_SAID)
        fprintf(stderr, "%sattnfuzz campaign: cannot store %s: %s%s\n", cp->tty ? "\r\033[K" : "", what, why,
                cp->st.write_errors == 1 ? " (the campaign stops fuzzing and ends with exit 6)" : "");
}

/* The per-run deadline now: --deadline, cut to what is left before --total-time's end
 * (less a margin for the reports), never below 1 s. */
int af_camp_deadline_now(const af_campaign_state *cp) {
    if (cp->end_at <= 0) return cp->deadline_s;
    double left = cp->end_at - af_clock_mono() - 2;
    int d = left < cp->deadline_s ? (int)left : cp->deadline_s;
    return d < 1 ? 1 : d;
}

/* A run that got a deadline cut by --total-time, or a minimisation candidate's shorter
 * deadline (pending.c), and ran past it did not hang: it was stopped for time, and is
 * neither a finding nor a minimisation step. */
bool af_camp_stopped_for_time(const af_campaign_state *cp, const af_session_result *r, int deadline) {
    return r->status == AF_CASE_HUNG && deadline < cp->deadline_s;
}

void af_camp_subdir(const af_campaign_state *cp, const char *name, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", cp->dir, name);
}

bool af_camp_is_bucket_name(const char *s, size_t n) {
    if (n < AF_BUCKET_ID_LEN) return false;
    for (size_t i = 0; i < AF_BUCKET_ID_LEN; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
    return true;
}

static bool rawmap_has(const af_campaign_state *cp, const char *raw_id) {
    char path[1300];
    struct stat st;
    snprintf(path, sizeof path, "%s/rawmap/%.*s", cp->dir, AF_BUCKET_ID_LEN, raw_id);
    return stat(path, &st) == 0;
}

/* Buckets on disk: stored ones, plus one per pending raw signature not minimised yet
 * (it may still land in a stored bucket: an estimate until it is minimised). */
int af_camp_count_buckets(af_campaign_state *cp) {
    char path[1200];
    char seen[512][AF_BUCKET_ID_LEN + 1];
    int n = 0;
    const char *dirs[2] = {"findings", "pending"};
    for (int k = 0; k < 2; k++) {
        af_camp_subdir(cp, dirs[k], path, sizeof path);
        DIR *d = opendir(path);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!af_camp_is_bucket_name(e->d_name, strlen(e->d_name))) continue;
            if (k == 1 && rawmap_has(cp, e->d_name)) continue;
            bool dup = false;
            for (int i = 0; i < n && !dup; i++) dup = !strncmp(seen[i], e->d_name, AF_BUCKET_ID_LEN);
            if (dup || n >= 512) continue;
            snprintf(seen[n++], AF_BUCKET_ID_LEN + 1, "%.*s", AF_BUCKET_ID_LEN, e->d_name);
        }
        closedir(d);
    }
    return n;
}

bool af_camp_found_enough(af_campaign_state *cp) {
    return cp->o->stop_after_buckets > 0 && af_camp_count_buckets(cp) >= cp->o->stop_after_buckets;
}

double af_camp_elapsed(const af_campaign_state *cp) {
    return cp->prior_elapsed_s + (cp->fuzz_end > 0 ? cp->fuzz_end : af_clock_mono()) - cp->t0;
}

/* The progress line's period: about once a second on a terminal, else every 10 s. */
static double progress_period(const af_campaign_state *cp) { return cp->tty ? 1.0 : 10.0; }

void af_camp_update_stats(af_campaign_state *cp, bool final) {
    cp->st.elapsed_s = af_camp_elapsed(cp);
    cp->st.buckets = af_camp_count_buckets(cp);
    if (!cp->libfuzzer) cp->st.corpus = af_camp_corpus_count(cp);
    char why[700];
    if (af_stats_write(cp->dir, &cp->st, why, sizeof why)) af_camp_write_failed(cp, "stats", why);
    if (af_stats_plot_append(cp->dir, &cp->st, cp->queue.features, final, why, sizeof why))
        af_camp_write_failed(cp, "plot_data", why);
    double now = af_clock_mono();
    if (final || now - cp->last_progress >= progress_period(cp)) {
        af_stats_progress(&cp->st, cp->tty, final);
        cp->last_progress = now;
    }
}

void af_camp_progress_tick(af_campaign_state *cp) {
    if (af_clock_mono() - cp->last_progress >= progress_period(cp)) af_camp_update_stats(cp, false);
}

void af_camp_note_finding(af_campaign_state *cp) {
    cp->st.findings++;
    /* a resumed campaign: fuzzing time, not the wall time since its first start */
    if (cp->st.time_to_first_finding_s < 0)
        cp->st.time_to_first_finding_s = cp->resumed ? af_camp_elapsed(cp) : af_clock_unix() - cp->st.start_unix;
}

int af_camp_corpus_count(const af_campaign_state *cp) {
    return cp->corpus_merged ? cp->corpus_kept + cp->queue.count - cp->queue_at_merge : cp->queue.count;
}

void af_camp_merge_corpus(af_campaign_state *cp) {
    af_corpus_merge_summary sum;
    char why[512];
    if (af_corpus_merge(cp->dir, &cp->s.limits, &sum, why, sizeof why)) {
        af_camp_write_failed(cp, "the merged corpus", why);
        return;
    }
    cp->corpus_merged = true;
    cp->corpus_kept = sum.kept;
    cp->queue_at_merge = cp->queue.count;
    cp->st.corpus = sum.kept;
    fprintf(stderr,
            "%sattnfuzz campaign: corpus merged: %d input(s) -> %d (%d duplicate(s) dropped; %d feature(s), %d config "
            "cell(s))\n",
            cp->tty ? "\r\033[K" : "", sum.before, sum.kept, sum.duplicates, sum.features, sum.cells);
}
