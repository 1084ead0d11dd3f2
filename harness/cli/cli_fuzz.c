/* cli_fuzz.c — `attnfuzz minimize`, `campaign`, `repro`. */
#include <stdlib.h>
#include <string.h>

#include "campaign/campaign.h"
#include "cli/cli.h"
#include "minimize/minimize.h"
#include "util/json.h"

static int load_case(const char *path, af_case *c) {
    af_error err;
    if (af_case_load(path, c, &err) == 0) return 0;
    char msg[1024];
    af_error_format(&err, msg, sizeof msg);
    fprintf(stderr, "attnfuzz: %s\n", msg);
    return -1;
}

static const char *need_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        fprintf(stderr, "attnfuzz: %s needs a value\n", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

static void describe_sizes(const af_case *c, char *buf, size_t cap) {
    snprintf(buf, cap, "b%d h%d/%d s%d/%d d%d/%d%s, cost %.6g", c->batch, c->heads_q, c->heads_kv, c->seqlen_q,
             c->seqlen_kv, c->head_dim_qk, c->head_dim_v, c->has_seqlens ? " ragged" : "", af_case_cost(c));
}

/* ---- repro ---------------------------------------------------------------------------- */

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

/* The common start of `repro` and `minimize`: check the deadline, load the case, open a
 * session on its backend (a GPU backend is only ever touched in forked children,
 * campaign.h). Returns 0, or the exit code after saying why on stderr. */
static int open_finding_session(const char *cmd, const char *path, const char *backend, const char *engine,
                                int deadline, af_case *c, af_session *s, const char **bname) {
    if (deadline < 0) {
        fprintf(stderr, "attnfuzz %s: --deadline must be positive\n", cmd);
        return AF_EXIT_USAGE;
    }
    if (load_case(path, c)) return AF_EXIT_USAGE;
    *bname = backend ? backend : c->backend[0] ? c->backend : "cpu";
    char why[512];
    if (af_session_open_ex(s, *bname, NULL, engine ? engine : "", "", AF_SESSION_NO_LIMITS, why, sizeof why)) {
        fprintf(stderr, "attnfuzz %s: %s\n", cmd, why);
        return strstr(why, "unknown backend") ? AF_EXIT_USAGE : AF_EXIT_DECLINED;
    }
    return 0;
}

int af_cli_repro(int argc, char **argv) {
    const char *path = NULL, *backend = NULL, *engine = NULL;
    int deadline = 0; /* 0 = the session's default (60 s, GPU backends 300 s) */
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--backend") || !strcmp(argv[i], "--engine") || !strcmp(argv[i], "--deadline")) {
            if (!(v = need_value(argc, argv, &i))) return AF_EXIT_USAGE;
            if (!strcmp(argv[i - 1], "--backend")) backend = v;
            else if (!strcmp(argv[i - 1], "--engine")) engine = v;
            else deadline = atoi(v) > 0 ? atoi(v) : -1;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "attnfuzz repro: unknown option '%s'\n", argv[i]);
            return AF_EXIT_USAGE;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "usage: attnfuzz repro FILE.case [--backend NAME] [--engine E] [--deadline S]\n");
            return AF_EXIT_USAGE;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: attnfuzz repro FILE.case [--backend NAME] [--engine E] [--deadline S]\n");
        return AF_EXIT_USAGE;
    }
    af_case c;
    af_session s;
    const char *bname;
    int open_rc = open_finding_session("repro", path, backend, engine, deadline, &c, &s, &bname);
    if (open_rc) return open_rc;
    af_case_result *r = malloc(sizeof *r);
    if (!r) {
        af_session_close(&s);
        return AF_EXIT_USAGE;
    }
    af_session_run_isolated(&s, &c, AF_STORE_NONE, NULL, deadline > 0 ? deadline : s.default_deadline_s, r);
    int rc;
    char line[1024];
    if (r->status == AF_CASE_NOT_RUN) {
        fprintf(stderr, "attnfuzz repro: %s: %s\n", path, r->why);
        rc = AF_EXIT_USAGE;
    } else if (r->verdict.kind == AF_V_DECLINED) {
        af_verdict_line(&r->verdict, line, sizeof line);
        printf("%s [%s]: %s\n", path, bname, line);
        rc = AF_EXIT_DECLINED;
    } else {
        af_verdict_line(&r->verdict, line, sizeof line);
        printf("%s [%s%s%s]: %s\n", path, bname, r->verdict.info.engine[0] ? " " : "", r->verdict.info.engine, line);
        int n = r->verdict.n_findings < AF_MAX_FINDINGS ? r->verdict.n_findings : AF_MAX_FINDINGS;
        for (int i = 0; i < n; i++) {
            const af_finding *f = &r->verdict.findings[i];
            printf("  %-16s %-3s b%d h%d row %d col %d  err %.4g  allowed %.4g  ratio %.4g%s%s\n",
                   af_verdict_name(f->kind), af_tensor_name(f->tensor), f->b, f->h, f->row, f->col, f->error,
                   f->floor, f->ratio, f->detail[0] ? "  " : "", f->detail);
        }
        if (n) {
            char sig[AF_SIGNATURE_MAX], want[AF_SIGNATURE_MAX], bucket[AF_BUCKET_ID_LEN + 1], id[AF_SIGNATURE_MAX];
            af_signature(&c, &r->verdict, sig, sizeof sig);
            af_bucket_id(sig, bucket);
            af_finding_identity(&c, &r->verdict, id, sizeof id);
            printf("  signature %s (bucket %s)\n", sig, bucket);
            printf("  identity  %s\n", id);
            if (stored_signature(path, want, sizeof want))
                printf("  %s the stored finding (%s)\n", strcmp(sig, want) ? "DIFFERENT failure from" : "same failure as",
                       want);
        }
        printf("  %s in %.3f s\n", n ? "still fails" : "passes", r->seconds);
        rc = n ? AF_EXIT_FINDING : AF_EXIT_PASS;
    }
    free(r);
    af_session_close(&s);
    return rc;
}

/* ---- minimize ------------------------------------------------------------------------- */

typedef struct {
    af_session *s;
    int deadline;
} cli_min_ctx;

static int cli_min_run(const af_case *c, void *user, af_verdict *v) {
    cli_min_ctx *m = user;
    af_case_result *r = malloc(sizeof *r);
    if (!r) return -1;
    af_session_run_isolated(m->s, c, AF_STORE_NONE, NULL, m->deadline, r);
    int rc = r->status == AF_CASE_NOT_RUN ? -1 : 0;
    *v = r->verdict;
    free(r);
    return rc;
}

int af_cli_minimize(int argc, char **argv) {
    const char *path = NULL, *out = NULL, *backend = NULL, *engine = NULL;
    int deadline = 0, max_runs = 300; /* deadline 0 = the session's default (60 s, GPU 300 s) */
    bool quiet = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-o") || !strcmp(a, "--backend") || !strcmp(a, "--engine") || !strcmp(a, "--deadline") ||
            !strcmp(a, "--max-runs")) {
            if (!(v = need_value(argc, argv, &i))) return AF_EXIT_USAGE;
            if (!strcmp(a, "-o")) out = v;
            else if (!strcmp(a, "--backend")) backend = v;
            else if (!strcmp(a, "--engine")) engine = v;
            else if (!strcmp(a, "--deadline")) deadline = atoi(v) > 0 ? atoi(v) : -1;
            else max_runs = atoi(v);
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "attnfuzz minimize: unknown option '%s'\n", a);
            return AF_EXIT_USAGE;
        } else if (!path) {
            path = a;
        } else {
            path = NULL;
            break;
        }
    }
    if (!path || !out) {
        fprintf(stderr, "usage: attnfuzz minimize FILE.case -o OUT.case [--backend NAME] [--engine E] "
                        "[--max-runs N] [--deadline S] [--quiet]\n");
        return AF_EXIT_USAGE;
    }
    af_case c;
    af_session s;
    const char *bname;
    /* every candidate runs in a forked child */
    int open_rc = open_finding_session("minimize", path, backend, engine, deadline, &c, &s, &bname);
    if (open_rc) return open_rc;
    cli_min_ctx ctx = {&s, deadline > 0 ? deadline : s.default_deadline_s};
    af_min_opts mo;
    af_min_opts_default(&mo);
    mo.max_runs = max_runs;
    mo.log = quiet ? NULL : stderr;
    af_min_result *r = malloc(sizeof *r);
    int rc = r ? af_minimize(&c, cli_min_run, &ctx, &mo, r) : -1;
    int exit_code;
    if (rc < 0) {
        fprintf(stderr, "attnfuzz minimize: %s: the case could not run\n", path);
        exit_code = AF_EXIT_USAGE;
    } else if (rc == 1) {
        char line[1024];
        af_verdict_line(&r->verdict, line, sizeof line);
        fprintf(stderr, "attnfuzz minimize: %s does not fail on %s (%s): nothing to minimise\n", path, bname, line);
        exit_code = r->verdict.kind == AF_V_DECLINED ? AF_EXIT_DECLINED : AF_EXIT_USAGE;
    } else {
        af_case best = r->best;
        snprintf(best.backend, sizeof best.backend, "%s", bname);
        if (engine && engine[0]) snprintf(best.engine, sizeof best.engine, "%s", engine);
        if (af_case_save(&best, out)) {
            fprintf(stderr, "attnfuzz minimize: cannot write %s\n", out);
            exit_code = AF_EXIT_USAGE;
        } else {
            char before[256], after[256], line[1024];
            describe_sizes(&c, before, sizeof before);
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
            printf("reproduce: attnfuzz repro %s --backend %s\n", out, bname);
            exit_code = AF_EXIT_PASS;
        }
    }
    free(r);
    af_session_close(&s);
    return exit_code;
}

/* ---- campaign ------------------------------------------------------------------------- */

int af_cli_campaign(int argc, char **argv) {
    af_campaign_opts o;
    af_campaign_opts_default(&o);
    const char **corpus = calloc((size_t)argc + 1, sizeof *corpus);
    if (!corpus) return AF_EXIT_USAGE;
    int n_corpus = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "--time") || !strcmp(a, "--backend") || !strcmp(a, "--engine") || !strcmp(a, "--jobs") ||
            !strcmp(a, "--out") || !strcmp(a, "--deadline") || !strcmp(a, "--max-work") || !strcmp(a, "--seed") ||
            !strcmp(a, "--minimize-runs") || !strcmp(a, "--fuzzer") || !strcmp(a, "--rss-limit-mb") ||
            !strcmp(a, "--total-time")) {
            if (!(v = need_value(argc, argv, &i))) { free(corpus); return AF_EXIT_USAGE; }
            if (!strcmp(a, "--time")) o.time_s = atof(v);
            else if (!strcmp(a, "--total-time")) o.total_s = atof(v) > 0 ? atof(v) : -1;
            else if (!strcmp(a, "--backend")) o.backend = v;
            else if (!strcmp(a, "--engine")) o.engine = v;
            else if (!strcmp(a, "--jobs")) o.jobs = atoi(v);
            else if (!strcmp(a, "--out")) o.out_dir = v;
            else if (!strcmp(a, "--deadline")) o.deadline_s = atoi(v) > 0 ? atoi(v) : -1;
            else if (!strcmp(a, "--max-work")) o.max_work = atof(v);
            else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 0);
            else if (!strcmp(a, "--minimize-runs")) o.minimize_runs = atoi(v);
            else if (!strcmp(a, "--fuzzer")) o.fuzzer_path = v;
            else o.rss_limit_mb = atoi(v);
        } else if (!strcmp(a, "--inprocess")) {
            o.force_inprocess = true;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "attnfuzz campaign: unknown option '%s'\n", a);
            free(corpus);
            return AF_EXIT_USAGE;
        } else {
            corpus[n_corpus++] = a;
        }
    }
    if (o.time_s <= 0 || o.jobs < 1 || o.deadline_s < 0 || o.total_s < 0) {
        fprintf(stderr, "attnfuzz campaign: --time, --total-time, --jobs and --deadline must be positive\n");
        free(corpus);
        return AF_EXIT_USAGE;
    }
    o.corpus = corpus;
    o.n_corpus = n_corpus;
    int rc = af_campaign_run(&o);
    free(corpus);
    return rc;
}
