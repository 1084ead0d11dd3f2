/* cli_merge.c — `attnfuzz merge OUT DIR...`: campaign directories (shards) merged into
 * one, with its reports (campaign/merge.h). */
#include <stdio.h>

#include "campaign/merge.h"
#include "cli/cli.h"
#include "cli/cli_opts.h"

const struct option af_cli_merge_options[] = {{"quiet", no_argument, NULL, 'q'}, {NULL, 0, NULL, 0}};

int af_cli_merge(int argc, char **argv) {
    bool quiet = false;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz merge", argc, argv)) return AF_EXIT_USAGE;
    int opt;
    const char *v;
    while ((opt = af_cli_next(&a, "", af_cli_merge_options, &v)) != -1) {
        if (opt != 'q') {
            af_cli_args_free(&a);
            return AF_EXIT_USAGE;
        }
        quiet = true;
    }
    int operands = a.argc - a.next_operand;
    if (operands < 2) {
        fprintf(stderr, "attnfuzz merge: usage: attnfuzz merge OUT DIR... (OUT and at least one campaign DIR)\n");
        af_cli_args_free(&a);
        return AF_EXIT_USAGE;
    }
    const char *out = a.argv[a.next_operand];
    const char *const *dirs = (const char *const *)&a.argv[a.next_operand + 1];
    char why[2048] = "";
    af_merge_summary sum;
    int rc = af_campaign_merge(out, dirs, operands - 1, &sum, why, sizeof why);
    af_cli_args_free(&a);
    if (rc != AF_MERGE_OK) {
        fprintf(stderr, "attnfuzz merge: %s\n", why);
        return rc == AF_MERGE_BUSY ? AF_EXIT_BUSY : AF_EXIT_ERROR;
    }
    if (!quiet)
        printf("merge %s: %d dir(s), %d bucket(s) (%d over the dirs), %lld finding(s), %lld cases, %d corpus "
               "input(s) (%d distinct over the dirs); reports: %s/report.{json,junit.xml,sarif,html}\n",
               out, sum.dirs, sum.buckets, sum.buckets_in, sum.findings, sum.cases, sum.corpus, sum.corpus_united, out);
    return sum.buckets > 0 ? AF_EXIT_FINDING : AF_EXIT_PASS;
}
