/* campaign/outdir.c — what a campaign writes in its directory DIR: the subdirectories
 * checked before anything is written (no symlink takes a write or a deletion outside
 * DIR) and the final count of what DIR holds
 * (campaign_internal.h). A finding is either in DIR/findings, counted by the reports, or
 * the campaign fails. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "campaign/campaign_internal.h"
#include "triage/findings.h"
#include "util/fsutil.h"

int af_campaign_check_subdirs(const char *dir, char *why, size_t cap) {
    static const char *const sub[] = {"corpus",   "corpus.merge", "corpus.old", "coverage", "pending",
                                      "findings", "crashes",      "current",    "workers",  "rawmap",
                                      "errors",   "interrupted",  "lost"};
    return af_subdirs_real(dir, sub, (int)(sizeof sub / sizeof sub[0]), why, cap);
}

static int add_count(const af_finding_record *r, void *user) {
    *(long long *)user += r->count;
    return 0;
}

void af_camp_count_stored(af_campaign_state *cp) {
    long long on_disk = 0;
    char why[512];
    int buckets = af_findings_scan(cp->dir, add_count, &on_disk, why, sizeof why);
    if (buckets < 0) {
        af_camp_write_failed(cp, "the findings", why);
        return;
    }
    long long seen = cp->st.findings;
    cp->st.findings_unstored = !cp->libfuzzer && seen > on_disk ? seen - on_disk : 0;
    cp->st.findings = on_disk; /* what the reports count: the two always agree */
    cp->st.buckets = buckets;
}

static int pending_left(const af_campaign_state *cp) {
    char path[1200];
    af_camp_subdir(cp, "pending", path, sizeof path);
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        n += len > 5 && !strcmp(e->d_name + len - 5, ".case");
    }
    if (d) closedir(d);
    return n;
}

bool af_camp_report_failure(const af_campaign_state *cp) {
    if (cp->st.write_errors == 0 && cp->st.findings_unstored == 0) return false;
    int left = pending_left(cp);
    fprintf(stderr,
            "attnfuzz campaign: FAILED to keep what it found: %lld write error(s) in %s, %lld finding(s) seen but not "
            "in %s/findings (%d left in %s/pending%s)\n",
            cp->st.write_errors, cp->dir, cp->st.findings_unstored, cp->dir, left, cp->dir,
            left ? ": `attnfuzz triage DIR` stores them once DIR is writable" : "");
    return true;
}
