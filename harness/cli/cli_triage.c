/* cli_triage.c — `attnfuzz triage DIR`: rebuild the reports of a findings directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "campaign/campaign.h"
#include "cli/cli_opts.h"
#include "triage/findings.h"
#include "triage/report.h"

static void triage_usage(FILE *f) {
    fprintf(f, "usage: attnfuzz triage DIR [--quiet] [--fail-on-findings]\n"
               "  reads DIR/findings/<bucket>/ and writes DIR/report.json, report.junit.xml,\n"
               "  report.sarif and report.html; exit 0, or 1 with --fail-on-findings when a\n"
               "  bucket exists (or the campaign saw findings it could not store), 2 on bad\n"
               "  usage, 4 when DIR holds no campaign (nothing written), 6 when the reports\n"
               "  cannot be written\n");
}

/* The buckets as listed: the reports' order (severity, then count, then signature). */
typedef struct {
    char bucket[AF_BUCKET_ID_LEN + 1];
    char signature[AF_SIGNATURE_MAX];
    long long count;
    int rank;
} listed_bucket;
typedef struct {
    listed_bucket *items;
    int n, cap;
} bucket_list;

static int collect_bucket(const af_finding_record *r, void *user) {
    bucket_list *l = user;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        listed_bucket *bigger = realloc(l->items, (size_t)cap * sizeof *bigger);
        if (!bigger) return 1;
        l->items = bigger;
        l->cap = cap;
    }
    listed_bucket *b = &l->items[l->n++];
    snprintf(b->bucket, sizeof b->bucket, "%s", r->bucket);
    snprintf(b->signature, sizeof b->signature, "%s", r->signature);
    b->count = r->count;
    b->rank = af_triage_severity_rank(af_verdict_from_name(r->kind));
    return 0;
}

static int cmp_listed(const void *a, const void *b) {
    const listed_bucket *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->signature, y->signature);
}

const struct option af_cli_triage_options[] = {{"quiet", no_argument, NULL, 'q'},
                                               {"fail-on-findings", no_argument, NULL, 'f'},
                                               {"help", no_argument, NULL, 'h'},
                                               {NULL, 0, NULL, 0}};

int af_cli_triage(int argc, char **argv) {
    const char *dir = NULL;
    bool quiet = false, fail_on_findings = false;
    const struct option *longopts = af_cli_triage_options;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz triage", argc, argv)) return AF_EXIT_USAGE;
    int opt;
    const char *v;
    while ((opt = af_cli_next(&a, "h", longopts, &v)) != -1) {
        if (opt == 'q')
            quiet = true;
        else if (opt == 'f')
            fail_on_findings = true;
        else if (opt == 'h') {
            af_cli_args_free(&a);
            triage_usage(stdout);
            return AF_EXIT_PASS;
        } else {
            af_cli_args_free(&a);
            triage_usage(stderr);
            return AF_EXIT_USAGE;
        }
    }
    int operands = a.argc - a.next_operand;
    if (operands > 1) {
        fprintf(stderr, "attnfuzz triage: one DIR only ('%s' and '%s')\n", a.argv[a.next_operand],
                a.argv[a.next_operand + 1]);
        af_cli_args_free(&a);
        return AF_EXIT_USAGE;
    }
    if (operands == 1) dir = a.argv[a.next_operand];
    af_cli_args_free(&a);
    if (!dir) {
        triage_usage(stderr);
        return AF_EXIT_USAGE;
    }
    char why[1024];
    /* a folder that is no campaign: refused before anything is written in it */
    if (af_triage_check_dir(dir, why, sizeof why)) {
        fprintf(stderr, "attnfuzz triage: %s\n", why);
        return AF_EXIT_BAD_FILE;
    }
    /* a campaign killed before it minimised them left findings in DIR/pending: stored
     * as found (unminimised) first, so the reports and --fail-on-findings count them */
    int recovered = af_campaign_recover_pending(dir, why, sizeof why);
    if (recovered < 0) {
        fprintf(stderr, "attnfuzz triage: %s/pending: %s\n", dir, why);
        return AF_EXIT_ERROR;
    }
    if (recovered > 0)
        fprintf(stderr,
                "attnfuzz triage: %d finding%s left in %s/pending by an interrupted campaign: stored "
                "unminimised\n",
                recovered, recovered == 1 ? "" : "s", dir);
    af_triage_summary s;
    if (af_triage_build(dir, &s, why, sizeof why)) {
        fprintf(stderr, "attnfuzz triage: %s\n", why);
        return AF_EXIT_ERROR; /* the output directory (README: error) */
    }
    if (!quiet) {
        printf("triage %s: %d bucket%s, %lld finding%s\n", dir, s.buckets, s.buckets == 1 ? "" : "s", s.findings,
               s.findings == 1 ? "" : "s");
        bucket_list l = {0};
        if (af_findings_scan(dir, collect_bucket, &l, why, sizeof why) < 0)
            fprintf(stderr, "attnfuzz triage: %s\n", why);
        if (l.n > 1) qsort(l.items, (size_t)l.n, sizeof *l.items, cmp_listed);
        for (int i = 0; i < l.n; i++)
            printf("  %s  x%-4lld %s\n", l.items[i].bucket, l.items[i].count, l.items[i].signature);
        free(l.items);
        printf("reports: %s/report.json %s/report.junit.xml %s/report.sarif %s/report.html\n", dir, dir, dir, dir);
    }
    if (s.findings_unstored)
        fprintf(stderr,
                "attnfuzz triage: %s: its campaign could not store %lld finding(s) (%lld write error(s), "
                "stats.json)\n",
                dir, s.findings_unstored, s.write_errors);
    return fail_on_findings && (s.buckets > 0 || s.findings_unstored > 0) ? AF_EXIT_FINDING : AF_EXIT_PASS;
}
