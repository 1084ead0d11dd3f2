/* cli_select.c — `attnfuzz select`, and the claim check of every case with a selector
 * (`run --policy / --selector-cmd`, `campaign --policy / --selector-cmd`: gate/claims.h).
 *
 * Exit codes (cli_table.c): select 0 when a backend is chosen, 3 (declined) when none
 * is (with every reason); a policy file that does not parse is 4 (bad-file) with
 * file:line: key; a selector command that fails is 6 (error) naming it. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opts.h"
#include "cli/cli_run_pool.h"
#include "gate/claims.h"
#include "gate/claims_campaign.h"
#include "gate/gate.h"
#include "util/datadir.h"

#define DEFAULT_POLICY "policies/default.policy"

/* Open a selector from --policy / --selector-cmd; the exit code of a failure. */
static int open_selector(const char *cmd, const char *policy, const char *selector_cmd, af_selector *sel) {
    af_error e;
    memset(&e, 0, sizeof e);
    int rc;
    if (selector_cmd) {
        char spec[4096];
        snprintf(spec, sizeof spec, "cmd:%s", selector_cmd);
        rc = af_selector_open(sel, spec, &e);
    } else if (policy) {
        rc = af_selector_open(sel, policy, &e);
    } else { /* the default policy: ./, $ATTNFUZZ_DATA_DIR or beside the binary (util/datadir.h) */
        char found[PATH_MAX + 64];
        af_datadir_search search;
        if (af_datadir_find(DEFAULT_POLICY, found, sizeof found, &search)) {
            char tried[4 * (PATH_MAX + 64)];
            af_datadir_tried(&search, tried, sizeof tried);
            fprintf(stderr,
                    "%s: no --policy given and the default %s is missing: looked at %s; set ATTNFUZZ_DATA_DIR "
                    "to the folder holding policies/, or pass --policy\n",
                    cmd, DEFAULT_POLICY, tried);
            return AF_EXIT_BAD_FILE;
        }
        rc = af_selector_open(sel, found, &e);
    }
    if (rc == 0) return 0;
    char msg[1200];
    af_error_format(&e, msg, sizeof msg);
    fprintf(stderr, "%s: %s\n", cmd, msg);
    return selector_cmd ? AF_EXIT_USAGE : AF_EXIT_BAD_FILE;
}

const struct option af_cli_select_options[] = {
    {"policy", required_argument, NULL, 'p'},
    {"selector-cmd", required_argument, NULL, 'c'},
    {NULL, 0, NULL, 0},
};

int af_cli_select(int argc, char **argv) {
    const char *policy = NULL, *selector_cmd = NULL;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz select", argc, argv)) return AF_EXIT_USAGE;
    int opt;
    const char *v;
    while ((opt = af_cli_next(&a, "", af_cli_select_options, &v)) != -1) {
        if (opt == 'p')
            policy = v;
        else if (opt == 'c')
            selector_cmd = v;
        else {
            af_cli_args_free(&a);
            return AF_EXIT_USAGE;
        }
    }
    const char *path = a.argc - a.next_operand == 1 ? a.argv[a.next_operand] : NULL;
    af_cli_args_free(&a);
    if (!path || (policy && selector_cmd)) {
        fprintf(stderr, "usage: attnfuzz select FILE.case [--policy P | --selector-cmd \"PROGRAM ARGS\"]\n");
        return AF_EXIT_USAGE;
    }
    af_case c;
    int rc = af_cli_load_case("attnfuzz select", path, &c);
    if (rc) return rc;
    af_selector sel;
    if ((rc = open_selector("attnfuzz select", policy, selector_cmd, &sel))) return rc;
    af_select_facts f;
    af_select_facts_unknown(&f);
    af_choice ch;
    char why[1024];
    if (af_selector_choose(&sel, &c, &f, &ch, why, sizeof why)) {
        fprintf(stderr, "attnfuzz select: %s\n", why);
        af_selector_close(&sel);
        return AF_EXIT_ERROR;
    }
    af_choice_print(&ch, sel.label, stdout);
    af_selector_close(&sel);
    return ch.served ? AF_EXIT_PASS : AF_EXIT_DECLINED;
}

int af_cli_run_claims(const char *const *paths, int n, const af_cli_claims_opts *o) {
    const char *policy = o->policy, *selector_cmd = o->selector_cmd;
    bool json = o->json;
    af_selector sel;
    int rc = open_selector("attnfuzz run", policy, selector_cmd, &sel);
    if (rc) return rc;
    af_claims_ctx *x = malloc(sizeof *x);
    af_claim_result *r = malloc(sizeof *r);
    if (!x || !r) {
        free(x), free(r);
        af_selector_close(&sel);
        return AF_EXIT_ERROR;
    }
    af_claims_init(x);
    x->probes = !o->no_probes;
    if (o->deadline_s > 0) x->deadline_s = o->deadline_s;
    x->in_process = o->in_process;
    x->runner_set = o->runner_set;
    x->oracle = o->oracle;
    x->ref_choice = o->reference;
    x->repeats = o->repeats;
    x->max_memory = o->max_memory;
    af_select_facts f;
    af_select_facts_unknown(&f);
    bool finding = false, declined = false;
    int input_rc = 0;
    for (int i = 0; i < n; i++) {
        af_case c;
        int lrc = af_cli_load_case("attnfuzz run", paths[i], &c);
        if (lrc) {
            input_rc = input_rc ? input_rc : lrc;
            continue;
        }
        char why[1024];
        if (af_claims_check(x, &sel, &f, &c, true, r, why, sizeof why)) {
            fprintf(stderr, "attnfuzz run: %s: %s\n", paths[i], why);
            input_rc = input_rc ? input_rc : AF_EXIT_ERROR;
            continue;
        }
        if (r->ran) {
            af_cli_run_report(json, paths[i], &r->verdict);
            finding |= r->verdict.n_findings > 0;
        } else {
            printf("%s: no backend chosen by %s\n", paths[i], sel.label);
            for (int k = 0; k < r->choice.n_reasons; k++)
                printf("  not %s (line %d): %s\n", r->choice.reasons[k].backend, r->choice.reasons[k].line,
                       r->choice.reasons[k].reason);
            declined = true;
        }
        for (int k = 0; k < r->n_notes; k++) printf("%s: note: %s\n", paths[i], r->notes[k]);
        fflush(stdout);
    }
    af_claims_close(x);
    free(x), free(r);
    af_selector_close(&sel);
    if (input_rc) return input_rc;
    return finding ? AF_EXIT_FINDING : declined ? AF_EXIT_DECLINED : AF_EXIT_PASS;
}

int af_cli_campaign_claims(const char *policy, const char *selector_cmd, double time_s, const char *out_dir,
                           uint64_t seed, double max_work, int min_runs, int deadline_s, int jobs, bool resume) {
    if (policy && selector_cmd) {
        fprintf(stderr, "attnfuzz campaign: --policy and --selector-cmd exclude each other\n");
        return AF_EXIT_USAGE;
    }
    af_selector sel;
    int rc = open_selector("attnfuzz campaign", policy, selector_cmd, &sel);
    if (rc) return rc;
    af_claims_campaign_opts o;
    af_claims_campaign_opts_default(&o);
    o.sel = &sel;
    o.loop.time_s = time_s;
    o.out_dir = out_dir ? out_dir : "campaign-out";
    if (seed) o.loop.seed = seed;
    if (max_work > 0) o.loop.max_work = max_work;
    if (min_runs > 0) o.loop.min_runs = min_runs;
    o.deadline_s = deadline_s;
    o.jobs = jobs;
    o.resume = resume;
    o.log = stderr;
    af_claims_ctx *x = malloc(sizeof *x);
    if (!x) {
        af_selector_close(&sel);
        return AF_EXIT_ERROR;
    }
    af_claims_init(x);
    af_claims_campaign_summary s;
    char why[1024] = "";
    int c = af_claims_campaign_run(&o, x, &s, why, sizeof why);
    af_claims_close(x);
    free(x);
    if (c < 0 || c == AF_CLAIMS_CAMPAIGN_BUSY) {
        fprintf(stderr, "attnfuzz campaign: %s\n", why);
        af_selector_close(&sel);
        return c < 0 ? AF_EXIT_ERROR : AF_EXIT_BUSY;
    }
    printf("claims campaign %s: %lld cases (%lld served, %lld with no backend chosen), %lld claim mismatches in %d "
           "bucket(s) (%d minimised), %lld unclaimed capabilities, %.1f s; stats.json and reports in %s\n",
           sel.label, s.cases, s.served, s.none_chosen, s.claim_mismatches, s.buckets, s.minimised, s.unclaimed,
           s.elapsed_s, o.out_dir);
    af_selector_close(&sel);
    return c ? AF_EXIT_FINDING : AF_EXIT_PASS;
}
