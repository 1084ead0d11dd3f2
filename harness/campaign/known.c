/* campaign/known.c — the buckets this campaign's minimisations produced (the catalogue
 * of campaign_internal.h): which stored bucket a new raw finding belongs to without
 * minimising it, and which buckets one defect links (DIR/links).
 *
 * A raw finding's bucket is the signature of its MINIMISED case (campaign.c), so it is
 * only known after minimising. Two answers come before that:
 *   exact     the raw case's own signature is a stored bucket's: it is in that bucket;
 *   predicted the stored buckets with the raw finding's identity (kind | backend |
 *             tensor: the minimiser's invariant) whose class the raw case could reach
 *             (minimize.h af_min_could_reach); the one most specific of them (it can
 *             reach none other of them that cannot reach it back), when there is one.
 * Links: a case whose verdict holds findings of several identities (a mismatch on O and
 * on LSE, a mismatch and the feature probe's feature_ignored), or a candidate of a
 * minimisation that failed with another identity (the same case made simpler: a single
 * key, no custom scale), shows one defect seen through several tensors or probes: the
 * bucket the case belongs to is linked with the bucket each other identity predicts
 * (when that bucket is stored later: then, from the witness kept). DIR/links/<bucket> lists its linked buckets, one id a
 * line; the reports group linked buckets (triage/report.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "campaign/campaign_internal.h"
#include "minimize/minimize.h"
#include "util/fsutil.h"

/* Add (or find) a bucket; NULL when the catalogue is full or out of memory. */
static af_camp_known_bucket *known_find(af_camp_known *k, const char *bucket);

static af_camp_known_bucket *known_put(af_camp_known *k, const af_rawmap_entry *e) {
    af_camp_known_bucket *have = known_find(k, e->bucket);
    if (have) return have;
    if (k->n == k->cap) {
        int cap = k->cap ? k->cap * 2 : 16;
        if (cap > AF_CAMP_KNOWN_MAX) return NULL;
        af_camp_known_bucket *bigger = realloc(k->items, (size_t)cap * sizeof *bigger);
        if (!bigger) return NULL;
        k->items = bigger;
        k->cap = cap;
    }
    af_camp_known_bucket *b = &k->items[k->n++];
    memset(b, 0, sizeof *b);
    b->entry = *e;
    af_finding_identity(&e->best, &e->verdict, b->identity, sizeof b->identity);
    af_signature(&e->best, &e->verdict, b->signature, sizeof b->signature);
    return b;
}

/* On first use: the buckets DIR/rawmap already maps to (a resumed campaign), each
 * counted as minimised once. */
static void known_load(af_campaign_state *cp) {
    af_camp_known *k = &cp->known;
    if (k->loaded) return;
    k->loaded = true;
    char dir[1200];
    af_camp_subdir(cp, "rawmap", dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d) return;
    af_rawmap_entry *e = malloc(sizeof *e);
    for (struct dirent *de; e && (de = readdir(d));) {
        if (!af_camp_is_bucket_name(de->d_name, strlen(de->d_name)) || af_rawmap_get(cp->dir, de->d_name, e)) continue;
        af_camp_known_bucket *b = known_put(k, e);
        if (b && b->minimisations == 0) b->minimisations = 1;
    }
    free(e);
    closedir(d);
}

void af_camp_known_free(af_camp_known *k) {
    free(k->items);
    memset(k, 0, sizeof *k);
}

const af_camp_known_bucket *af_camp_known_exact(af_campaign_state *cp, const char *signature) {
    known_load(cp);
    for (int i = 0; i < cp->known.n; i++)
        if (!strcmp(cp->known.items[i].signature, signature)) return &cp->known.items[i];
    return NULL;
}

const af_camp_known_bucket *af_camp_known_predict(af_campaign_state *cp, const af_case *c, const char *identity) {
    known_load(cp);
    const af_camp_known *k = &cp->known;
    const af_camp_known_bucket *best = NULL;
    int maximal = 0;
    for (int i = 0; i < k->n; i++) {
        const af_camp_known_bucket *a = &k->items[i];
        if (strcmp(a->identity, identity) || !af_min_could_reach(c, &a->entry.best)) continue;
        /* a is maximal unless another candidate is strictly more specific than it */
        bool dominated = false;
        for (int j = 0; j < k->n && !dominated; j++) {
            const af_camp_known_bucket *b = &k->items[j];
            if (j == i || strcmp(b->identity, identity) || !af_min_could_reach(c, &b->entry.best)) continue;
            dominated = af_min_could_reach(&b->entry.best, &a->entry.best) &&
                        !af_min_could_reach(&a->entry.best, &b->entry.best);
        }
        if (dominated) continue;
        maximal++;
        best = a;
    }
    return maximal == 1 ? best : NULL;
}

/* ---- links ------------------------------------------------------------------------------ */

/* DIR/links/<a> lists b (added when missing). 0 or -1. */
static int link_one(const af_campaign_state *cp, const char *a, const char *b) {
    char path[1300];
    af_camp_subdir(cp, "links", path, sizeof path);
    if (af_mkdirs(path, NULL, 0)) return -1;
    snprintf(path, sizeof path, "%s/links/%s", cp->dir, a);
    char text[4096] = "";
    size_t n = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        n = fread(text, 1, sizeof text - 1, f);
        text[n] = 0;
        fclose(f);
    }
    for (const char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line))
        if (!strncmp(line, b, AF_BUCKET_ID_LEN)) return 0;
    if (n + AF_BUCKET_ID_LEN + 2 > sizeof text) return -1; /* full: the links of one bucket are few */
    snprintf(text + n, sizeof text - n, "%s\n", b);
    return af_write_file_atomic(path, text, strlen(text), NULL, 0);
}

static void link_pair(const af_campaign_state *cp, const char *a, const char *b) {
    if (!strcmp(a, b)) return;
    if (link_one(cp, a, b) || link_one(cp, b, a))
        fprintf(stderr, "attnfuzz campaign: cannot write %s/links/%s\n", cp->dir, a);
}

static af_camp_known_bucket *known_find(af_camp_known *k, const char *bucket) {
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->items[i].entry.bucket, bucket)) return &k->items[i];
    return NULL;
}

/* Link b with the bucket witness w predicts, if any. */
static void link_witness(af_campaign_state *cp, const char *bucket, const af_camp_witness *w) {
    const af_camp_known_bucket *other = af_camp_known_predict(cp, &w->c, w->identity);
    if (other) link_pair(cp, bucket, other->entry.bucket);
}

void af_camp_known_link(af_campaign_state *cp, const char *bucket, const af_case *c, const af_verdict *v) {
    known_load(cp);
    af_camp_known_bucket *b = known_find(&cp->known, bucket);
    af_verdict *one = malloc(sizeof *one);
    af_camp_witness *w = malloc(sizeof *w);
    if (!one || !w) {
        free(one);
        free(w);
        return;
    }
    char own[AF_SIGNATURE_MAX];
    if (b)
        snprintf(own, sizeof own, "%s", b->identity);
    else
        af_finding_identity(c, v, own, sizeof own);
    int n = v->n_findings < AF_MAX_FINDINGS ? v->n_findings : AF_MAX_FINDINGS;
    for (int i = 0; i < n; i++) {
        /* the identity this finding would give if it led the verdict */
        *one = *v;
        one->kind = v->findings[i].kind;
        one->findings[0] = v->findings[i];
        w->c = *c;
        af_finding_identity(c, one, w->identity, sizeof w->identity);
        if (!strcmp(w->identity, own)) continue;
        link_witness(cp, bucket, w);
        if (!b) continue;
        /* kept (one case per identity) for the buckets stored later */
        bool have = false;
        for (int k = 0; k < b->n_witness && !have; k++) have = !strcmp(b->witness[k].identity, w->identity);
        if (!have && b->n_witness < AF_CAMP_WITNESSES) b->witness[b->n_witness++] = *w;
    }
    free(one);
    free(w);
}

void af_camp_known_add(af_campaign_state *cp, const af_rawmap_entry *e, bool minimised) {
    known_load(cp);
    int before = cp->known.n;
    af_camp_known_bucket *b = known_put(&cp->known, e);
    if (!b) return;
    b->minimisations += minimised;
    if (cp->known.n == before) return;
    af_camp_known_link(cp, e->bucket, &e->best, &e->verdict); /* its own verdict's other findings */
    /* a new bucket: the stored buckets' witnesses that predict it link to it */
    for (int i = 0; i < cp->known.n; i++) {
        const af_camp_known_bucket *k = &cp->known.items[i];
        for (int j = 0; j < k->n_witness; j++) link_witness(cp, k->entry.bucket, &k->witness[j]);
    }
}
