/* campaign/resume.c — continuing the campaign an earlier run left in DIR (stopped,
 * interrupted or killed): its counters go on, its corpus is loaded, the cases it had in
 * flight are kept aside (campaign/campaign.h, "Resume"). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "campaign/campaign_internal.h"
#include "triage/findings.h"
#include "util/fsutil.h"
#include "util/hash.h"

int af_camp_resume_check(const af_campaign_state *cp, const af_campaign_stats *prior, char *why, size_t cap) {
    const char *shard = cp->st.shard[0] ? cp->st.shard : "none";
    const char *prior_shard = prior->shard[0] ? prior->shard : "none";
    if (strcmp(prior->backend, cp->s.backend_name) != 0 || strcmp(prior->engine, cp->s.engine) != 0)
        snprintf(why, cap, "%s holds a campaign of backend '%s' engine '%s', not '%s' engine '%s' (another --out?)",
                 cp->dir, prior->backend, prior->engine, cp->s.backend_name, cp->s.engine);
    else if (strcmp(shard, prior_shard) != 0)
        snprintf(why, cap, "%s holds a campaign of shard %s, not %s (another --out?)", cp->dir, prior_shard, shard);
    else
        return 0;
    return -1;
}

void af_camp_resume_apply(af_campaign_state *cp, const af_campaign_stats *prior) {
    af_campaign_stats *st = &cp->st;
    st->start_unix = prior->start_unix;
    st->cases = prior->cases;
    st->declined = prior->declined;
    st->errors = prior->errors;
    st->crashes = prior->crashes;
    st->hangs = prior->hangs;
    st->judge_timeouts = prior->judge_timeouts;
    st->prepared_ahead = prior->prepared_ahead;
    st->plans_from_disk = prior->plans_from_disk;
    st->plans_to_disk = prior->plans_to_disk;
    st->findings = prior->findings;
    st->minimised = prior->minimised;
    st->unminimised = prior->unminimised;
    st->deduplicated = prior->deduplicated;
    st->time_to_first_finding_s = prior->time_to_first_finding_s;
    memcpy(st->seqlen_q_hist, prior->seqlen_q_hist, sizeof st->seqlen_q_hist);
    memcpy(st->seqlen_kv_hist, prior->seqlen_kv_hist, sizeof st->seqlen_kv_hist);
    memcpy(st->seqlen_kv_judged_hist, prior->seqlen_kv_judged_hist, sizeof st->seqlen_kv_judged_hist);
    memcpy(st->field_cases, prior->field_cases, sizeof st->field_cases);
    st->cudnn_graph_build_seconds = prior->cudnn_graph_build_seconds;
    st->plan_cache_hits = prior->plan_cache_hits;
    st->plan_cache_misses = prior->plan_cache_misses;
    memcpy(st->config_cells_seen, prior->config_cells_seen, sizeof st->config_cells_seen);
    memcpy(st->timeline, prior->timeline, sizeof st->timeline);
    st->timeline_n = prior->timeline_n;
    st->timeline_interval_s = prior->timeline_interval_s;
    st->resumed = prior->resumed + 1;
    /* cases per GPU go on (a GPU of this run's --gpus that the earlier ones lacked: added) */
    for (int i = 0; i < prior->n_gpus; i++) af_stats_note_gpu(st, prior->gpus[i], prior->gpu_cases[i]);
    cp->prior_elapsed_s = prior->elapsed_s;
    cp->resumed = true;
}

static bool queue_holds(const uint64_t *hashes, int n, uint64_t h) {
    for (int i = 0; i < n; i++)
        if (hashes[i] == h) return true;
    return false;
}

int af_camp_resume_corpus(af_campaign_state *cp) {
    char dir[1200];
    af_camp_subdir(cp, "corpus", dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n_hashes = cp->queue.count, cap_hashes = cp->queue.count + 256;
    uint64_t *hashes = malloc((size_t)cap_hashes * sizeof *hashes); /* (cap_hashes,) content hashes */
    if (!hashes) {
        closedir(d);
        return 0;
    }
    for (int i = 0; i < cp->queue.count; i++) hashes[i] = af_fnv1a64(cp->queue.items[i].data, cp->queue.items[i].size);
    int added = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[1500];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        uint8_t buf[AF_FUZZ_MAX_ENCODED];
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        uint64_t h = af_fnv1a64(buf, n);
        if (queue_holds(hashes, n_hashes, h)) continue;
        if (n_hashes == cap_hashes) {
            uint64_t *more = realloc(hashes, (size_t)(2 * cap_hashes) * sizeof *more);
            if (!more) break;
            hashes = more;
            cap_hashes *= 2;
        }
        hashes[n_hashes++] = h;
        af_queue_offer(&cp->queue, buf, n, NULL, true);
        added++;
    }
    closedir(d);
    free(hashes);
    return added;
}

void af_camp_clear_inflight(af_campaign_state *cp) {
    char cur[1200];
    af_camp_subdir(cp, "current", cur, sizeof cur);
    DIR *d = opendir(cur);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".case") != 0) continue;
        char path[1500];
        snprintf(path, sizeof path, "%s/%s", cur, e->d_name);
        remove(path);
    }
    closedir(d);
}

/* from moved to to without replacing anything there: to, else to with -2, -3 ... before
 * ".case" (a resume killed before its stats.json write reuses its run number). */
static int move_unique(const char *from, const char *to_dir, const char *name, char *to, size_t cap) {
    size_t stem = strlen(name) - 5; /* name ends in ".case" */
    for (int k = 1; k < 1000; k++) {
        if (k == 1)
            snprintf(to, cap, "%s/%s", to_dir, name);
        else
            snprintf(to, cap, "%s/%.*s-%d.case", to_dir, (int)stem, name, k);
        if (link(from, to) == 0) return unlink(from);
        if (errno != EEXIST) return -1;
    }
    return -1;
}

int af_camp_resume_keep_inflight(af_campaign_state *cp) {
    char cur[1200], kept[1200];
    af_camp_subdir(cp, "current", cur, sizeof cur);
    af_camp_subdir(cp, "interrupted", kept, sizeof kept);
    DIR *d = opendir(cur);
    if (!d) return 0;
    int moved = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".case") != 0) continue;
        if (!moved) af_mkdirs(kept, NULL, 0);
        char from[1500], name[600], to[1800];
        snprintf(from, sizeof from, "%s/%s", cur, e->d_name);
        /* the run number first: a later resume's cases never replace these */
        snprintf(name, sizeof name, "run%d-%s", cp->st.resumed, e->d_name);
        if (move_unique(from, kept, name, to, sizeof to) != 0) continue;
        moved++;
        /* a fuzzed case runs on the campaign's backend (its own field is empty) */
        af_case c;
        af_error err;
        bool named = af_case_load(to, &c, &err) == 0 && c.backend[0];
        fprintf(stderr, "attnfuzz campaign: interrupted case %s (backend %s): in flight when run %d stopped\n", to,
                named ? c.backend : cp->s.backend_name, cp->st.resumed);
    }
    closedir(d);
    return moved;
}

int af_camp_count_interrupted(const af_campaign_state *cp) {
    char kept[1200];
    af_camp_subdir(cp, "interrupted", kept, sizeof kept);
    DIR *d = opendir(kept);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        n += len >= 6 && strcmp(e->d_name + len - 5, ".case") == 0;
    }
    closedir(d);
    return n;
}

static int add_count(const af_finding_record *r, void *user) {
    *(long long *)user += r->count;
    return 0;
}

long long af_camp_resume_recount_findings(af_campaign_state *cp) {
    long long on_disk = 0;
    char why[512], pending[1200];
    if (af_findings_scan(cp->dir, add_count, &on_disk, why, sizeof why) < 0) return 0;
    af_camp_subdir(cp, "pending", pending, sizeof pending);
    DIR *d = opendir(pending);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        on_disk += len > 5 && !strcmp(e->d_name + len - 5, ".case") && af_camp_is_bucket_name(e->d_name, len);
    }
    if (d) closedir(d);
    long long missed = on_disk - cp->st.findings;
    /* fewer: an earlier run could not store them (it failed and said so): this run
     * counts on from what DIR holds, as the reports do */
    cp->st.findings = on_disk;
    return missed > 0 ? missed : 0;
}
