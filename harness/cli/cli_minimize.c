/* cli_minimize.c — `attnfuzz minimize`: shrink a finding's case to a small reproducer. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_finding.h"
#include "minimize/minimize.h"
#include "triage/findings.h"

static void describe_sizes(const af_case *c, char *buf, size_t cap) {
    snprintf(buf, cap, "b%d h%d/%d s%d/%d d%d/%d%s, cost %.6g", c->batch, c->heads_q, c->heads_kv, c->seqlen_q,
             c->seqlen_kv, c->head_dim_qk, c->head_dim_v, c->has_seqlens ? " ragged" : "", af_case_cost(c));
}

typedef struct {
    af_cli_finding_session *fs;
    int deadline;
} cli_min_ctx;

static int cli_min_run(const af_case *c, void *user, af_verdict *v) {
    cli_min_ctx *m = user;
    af_session_result *r = malloc(sizeof *r);
    if (!r) return -1;
    af_cli_finding_run(m->fs, c, m->deadline, r);
    /* a case that could not run, or an adapter error (no verdict on the kernel), is no
     * evidence that the finding survives: the minimiser does not keep that candidate
     * (and on the first run: "could not run") */
    int rc = r->status == AF_CASE_NOT_RUN || r->verdict.kind == AF_V_ERROR ? -1 : 0;
    *v = r->verdict;
    free(r);
    return rc;
}

const struct option af_cli_minimize_options[] = {
    {"backend", required_argument, NULL, OPT_F_BACKEND},
    {"engine", required_argument, NULL, OPT_F_ENGINE},
    {"deadline", required_argument, NULL, OPT_F_DEADLINE},
    {"max-runs", required_argument, NULL, 'r'},
    {"quiet", no_argument, NULL, 'q'},
    {"plugin-dir", required_argument, NULL, OPT_F_PLUGIN_DIR},
    {"worker-cmd", required_argument, NULL, OPT_F_WORKER_CMD},
    {"worker-config", required_argument, NULL, OPT_F_WORKER_CONFIG},
    {NULL, 0, NULL, 0},
};

int af_cli_minimize(int argc, char **argv) {
    const char *path = NULL, *out = NULL;
    af_cli_finding_opts fo;
    memset(&fo, 0, sizeof fo);
    int max_runs = 300;
    bool quiet = false;
    const struct option *longopts = af_cli_minimize_options;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz minimize", argc, argv)) return AF_EXIT_USAGE;
    int parse_rc = 0, opt;
    const char *v;
    while (parse_rc == 0 && (opt = af_cli_next(&a, "o:", longopts, &v)) != -1) {
        if (af_cli_finding_option(&a, opt, v, &fo, &parse_rc)) continue;
        if (opt == 'o')
            out = v;
        else if (opt == 'r')
            parse_rc = af_cli_int(&a, v, 1, 1000000000, &max_runs);
        else if (opt == 'q')
            quiet = true;
        else
            parse_rc = -1;
    }
    if (parse_rc == 0 && a.argc - a.next_operand == 1) path = a.argv[a.next_operand];
    af_cli_args_free(&a);
    if (parse_rc) return AF_EXIT_USAGE;
    if (!path || !out) {
        fprintf(stderr, "usage: attnfuzz minimize FILE.case -o OUT.case [--backend NAME] [--engine E] "
                        "[--max-runs N] [--deadline S] [--quiet] [--plugin-dir DIR] [--worker-cmd \"ARGV...\" | "
                        "--worker-config FILE]\n");
        return AF_EXIT_USAGE;
    }
    /* every candidate runs in a forked child (a worker backend: in its worker process) */
    af_cli_finding_session *fs = malloc(sizeof *fs);
    int open_rc = fs ? af_cli_finding_open("minimize", path, &fo, fs) : AF_EXIT_ERROR;
    if (open_rc) {
        free(fs);
        return open_rc;
    }
    const af_case *c = &fs->c;
    const char *bname = fs->bname, *engine = fo.engine;
    cli_min_ctx ctx = {fs, fo.deadline};
    af_min_opts mo;
    af_min_opts_default(&mo);
    mo.max_runs = max_runs;
    mo.log = quiet ? NULL : stderr;
    af_min_result *r = malloc(sizeof *r);
    int rc = r ? af_minimize(c, cli_min_run, &ctx, &mo, r) : -1;
    int exit_code;
    if (rc < 0) {
        fprintf(stderr, "attnfuzz minimize: %s: the case could not run\n", path);
        exit_code = AF_EXIT_ERROR;
    } else if (rc == 1) {
        char line[1024];
        af_verdict_line(&r->verdict, line, sizeof line);
        fprintf(stderr, "attnfuzz minimize: %s does not fail on %s (%s): nothing to minimise, %s not written\n", path,
                bname, line, out);
        /* the table's code for the condition: a passing case passes (not bad input) */
        exit_code = r->verdict.kind == AF_V_DECLINED ? AF_EXIT_DECLINED : AF_EXIT_PASS;
    } else {
        af_case best = r->best;
        snprintf(best.backend, sizeof best.backend, "%s", bname);
        if (engine && engine[0]) snprintf(best.engine, sizeof best.engine, "%s", engine);
        if (af_case_save(&best, out)) {
            fprintf(stderr, "attnfuzz minimize: cannot write %s\n", out);
            exit_code = AF_EXIT_ERROR;
        } else {
            char before[256], after[256], line[1024], repro[8192];
            describe_sizes(c, before, sizeof before);
            describe_sizes(&best, after, sizeof after);
            af_verdict_line(&r->verdict, line, sizeof line);
            char bucket[AF_BUCKET_ID_LEN + 1], raw_bucket[AF_BUCKET_ID_LEN + 1];
            af_bucket_id(r->signature, bucket);
            af_bucket_id(r->raw_signature, raw_bucket);
            printf("identity:  %s (kept while minimising)\n", r->identity);
            printf("raw:       %s (raw id %s)\n", r->raw_signature, raw_bucket);
            printf("signature: %s (bucket %s)\n", r->signature, bucket);
            printf("before:    %s\n", before);
            printf("after:     %s  (%d runs, %d steps accepted%s)\n", after, r->runs, r->accepted,
                   r->budget_exhausted ? ", run budget exhausted" : "");
            printf("verdict:   %s\n", line);
            /* the same Reproduce line a campaign stores (triage/findings.h), the worker's
             * command included */
            if (af_repro_command(out, bname, fs->s.repro_options, repro, sizeof repro) < sizeof repro)
                printf("reproduce: %s\n", repro);
            exit_code = AF_EXIT_PASS;
        }
    }
    free(r);
    af_cli_finding_close(fs);
    free(fs);
    return exit_code;
}
