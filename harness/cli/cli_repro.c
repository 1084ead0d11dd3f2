/* cli_repro.c — `attnfuzz repro`: run a stored finding's case again and say whether it
 * still fails the same way. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_finding.h"
#include "triage/findings.h"
#include "util/json.h"

/* The signature the finding was stored with, from verdict.json beside the case. */
static bool stored_signature(const char *case_path, char *out, size_t cap) {
    char path[2048], why[2200];
    const char *slash = strrchr(case_path, '/');
    snprintf(path, sizeof path, "%.*sverdict.json", slash ? (int)(slash - case_path + 1) : 0, case_path);
    json_t *verdict = af_json_load_object(path, why, sizeof why);
    if (!verdict) return false;
    bool found = af_json_get_text(verdict, "signature", out, cap) == 0;
    json_decref(verdict);
    return found;
}

/* The option tables of repro, minimize and campaign: the parsers' own, also the ones
 * `--help` lists (cli_help.c). */
const struct option af_cli_repro_options[] = {{"backend", required_argument, NULL, OPT_F_BACKEND},
                                              {"engine", required_argument, NULL, OPT_F_ENGINE},
                                              {"deadline", required_argument, NULL, OPT_F_DEADLINE},
                                              {"plugin-dir", required_argument, NULL, OPT_F_PLUGIN_DIR},
                                              {"worker-cmd", required_argument, NULL, OPT_F_WORKER_CMD},
                                              {"worker-config", required_argument, NULL, OPT_F_WORKER_CONFIG},
                                              {NULL, 0, NULL, 0}};

int af_cli_repro(int argc, char **argv) {
    const char *path = NULL;
    af_cli_finding_opts fo;
    memset(&fo, 0, sizeof fo);
    const struct option *longopts = af_cli_repro_options;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz repro", argc, argv)) return AF_EXIT_USAGE;
    int parse_rc = 0, opt;
    const char *v;
    while (parse_rc == 0 && (opt = af_cli_next(&a, "", longopts, &v)) != -1)
        if (!af_cli_finding_option(&a, opt, v, &fo, &parse_rc)) parse_rc = -1;
    int operands = parse_rc == 0 ? a.argc - a.next_operand : 0;
    if (operands == 1) path = a.argv[a.next_operand];
    af_cli_args_free(&a);
    if (parse_rc) return AF_EXIT_USAGE;
    if (!path) {
        fprintf(stderr, "usage: attnfuzz repro FILE.case [--backend NAME] [--engine E] [--deadline S] "
                        "[--plugin-dir DIR] [--worker-cmd \"ARGV...\" | --worker-config FILE]\n");
        return AF_EXIT_USAGE;
    }
    af_cli_finding_session *fs = malloc(sizeof *fs);
    af_session_result *r = malloc(sizeof *r);
    int open_rc = fs && r ? af_cli_finding_open("repro", path, &fo, fs) : AF_EXIT_ERROR;
    if (open_rc) {
        free(fs);
        free(r);
        return open_rc;
    }
    const af_case *c = &fs->c;
    const char *bname = fs->bname;
    af_cli_finding_run(fs, c, fo.deadline, r);
    int rc;
    char line[1024];
    if (r->status == AF_CASE_NOT_RUN) {
        fprintf(stderr, "attnfuzz repro: %s: %s\n", path, r->why);
        rc = AF_EXIT_ERROR;
    } else if (r->verdict.kind == AF_V_DECLINED || r->verdict.kind == AF_V_ERROR) {
        /* no verdict on the kernel: declined (or unavailable), or the harness / adapter failed */
        af_verdict_line(&r->verdict, line, sizeof line);
        printf("%s [%s]: %s\n", path, bname, line);
        rc = r->verdict.kind == AF_V_ERROR ? AF_EXIT_ERROR : AF_EXIT_DECLINED;
    } else {
        af_verdict_line(&r->verdict, line, sizeof line);
        printf("%s [%s%s%s]: %s\n", path, bname, r->verdict.info.engine[0] ? " " : "", r->verdict.info.engine, line);
        int n = r->verdict.n_findings < AF_MAX_FINDINGS ? r->verdict.n_findings : AF_MAX_FINDINGS;
        for (int i = 0; i < n; i++) {
            const af_finding *f = &r->verdict.findings[i];
            printf("  %-16s %-3s b%d h%d row %d col %d  err %.4g  allowed %.4g  ratio %.4g%s%s\n",
                   af_verdict_name(f->kind), af_tensor_name(f->tensor), f->b, f->h, f->row, f->col, f->error,
                   f->allowed, f->ratio, f->detail[0] ? "  " : "", f->detail);
        }
        if (n) {
            char sig[AF_SIGNATURE_MAX], want[AF_SIGNATURE_MAX], bucket[AF_BUCKET_ID_LEN + 1], id[AF_SIGNATURE_MAX];
            af_signature(c, &r->verdict, sig, sizeof sig);
            af_bucket_id(sig, bucket);
            af_finding_identity(c, &r->verdict, id, sizeof id);
            printf("  signature %s (bucket %s)\n", sig, bucket);
            printf("  identity  %s\n", id);
            if (stored_signature(path, want, sizeof want))
                printf("  %s the stored finding (%s)\n",
                       strcmp(sig, want) ? "DIFFERENT failure from" : "same failure as", want);
        }
        printf("  %s in %.3f s\n", n ? "still fails" : "passes", r->seconds);
        rc = n ? AF_EXIT_FINDING : AF_EXIT_PASS;
    }
    free(r);
    af_cli_finding_close(fs);
    free(fs);
    return rc;
}
