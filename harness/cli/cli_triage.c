/* cli_triage.c — `attnfuzz triage DIR`: rebuild the reports of a findings directory. */
#include <stdio.h>
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

static int print_bucket(const af_finding_record *r, void *user) {
    (void)user;
    printf("  %s  x%-4lld %s\n", r->bucket, r->count, r->signature);
    return 0;
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
        if (af_findings_scan(dir, print_bucket, NULL, why, sizeof why) < 0)
            fprintf(stderr, "attnfuzz triage: %s\n", why);
        printf("reports: %s/report.json %s/report.junit.xml %s/report.sarif %s/report.html\n", dir, dir, dir, dir);
    }
    if (s.findings_unstored)
        fprintf(stderr,
                "attnfuzz triage: %s: its campaign could not store %lld finding(s) (%lld write error(s), "
                "stats.json)\n",
                dir, s.findings_unstored, s.write_errors);
    return fail_on_findings && (s.buckets > 0 || s.findings_unstored > 0) ? AF_EXIT_FINDING : AF_EXIT_PASS;
}
