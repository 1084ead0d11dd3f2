/* cli_fuzz.c — `attnfuzz minimize`, `campaign`, `repro`. */
#include <stdlib.h>
#include <string.h>

#include "backends/worker/worker.h"
#include "campaign/campaign.h"
#include "campaign/session.h"
#include "cli/cli.h"
#include "cli/cli_opts.h"
#include "cli/cli_workers.h"
#include "minimize/minimize.h"
#include "triage/findings.h"
#include "util/json.h"

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

#define DEADLINE_MAX_S  604800 /* a week: any longer is a mistake */
#define MAX_PLUGIN_DIRS 8

/* The options `repro` and `minimize` share: which backend, and where its code may come
 * from (plugin directories, a worker's command). */
typedef struct {
    const char *backend, *engine;
    const char *plugin_dirs[MAX_PLUGIN_DIRS];
    int n_plugin_dirs;
    const char *worker_cmd, *worker_config; /* --backend worker:NAME's command */
    int deadline;                           /* 0 = the session's default (60 s, GPU 300 s) */
} finding_opts;

/* A finding's session: the case, its backend, and how its runs go. */
typedef struct {
    af_case c;
    af_session s;
    const char *bname;
    af_registry workers; /* the worker:NAME of --worker-cmd / --worker-config, if any */
    bool in_process;     /* a worker backend: its process is the isolation (as in `run`) */
} finding_session;

/* The common start of `repro` and `minimize`: load the case, open a session on its
 * backend (a GPU backend is only ever touched in forked children, campaign/session.h;
 * a worker backend runs here, its kernel in the worker process). Returns 0, or the exit
 * code after saying why on stderr; on 0 the caller ends with close_finding_session. */
static int open_finding_session(const char *cmd, const char *path, const finding_opts *fo, finding_session *fs) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "attnfuzz %s", cmd);
    af_registry_init(&fs->workers);
    int rc = af_cli_load_case(prefix, path, &fs->c);
    if (rc == 0)
        rc = af_cli_choose_backend(cmd, path, &fs->c, fo->backend, fo->plugin_dirs, fo->n_plugin_dirs, &fs->bname);
    char why[512];
    af_backend *obj = NULL;
    if (rc == 0 &&
        af_cli_worker_register(&fs->workers, fs->bname, fo->worker_cmd, fo->worker_config, why, sizeof why)) {
        fprintf(stderr, "%s: %s\n", prefix, why);
        rc = AF_EXIT_USAGE;
    }
    fs->in_process = rc == 0 && !strncmp(fs->bname, "worker:", 7);
    if (fs->in_process && !(obj = af_registry_find(&fs->workers, fs->bname, why, sizeof why))) {
        fprintf(stderr, "%s: %s\n", prefix, why);
        rc = AF_EXIT_USAGE;
    }
    unsigned flags = AF_SESSION_NO_LIMITS | (fs->in_process ? AF_SESSION_INPROCESS : AF_SESSION_ISOLATE);
    if (rc == 0 &&
        af_session_open_ex(&fs->s, fs->bname, obj, fo->engine ? fo->engine : "", "", flags, why, sizeof why)) {
        fprintf(stderr, "%s: %s\n", prefix, why);
        rc = af_cli_open_exit_code(fs->s.open_error);
    }
    if (rc) af_registry_free(&fs->workers);
    return rc;
}

static void close_finding_session(finding_session *fs) {
    af_session_close(&fs->s);
    af_registry_free(&fs->workers); /* after the session: it ran the worker, not owning it */
}

/* One run of c on the finding's session into r. */
static void run_finding(finding_session *fs, const af_case *c, int deadline, af_session_result *r) {
    if (fs->in_process)
        af_session_run(&fs->s, c, AF_STORE_NONE, NULL, r);
    else
        af_session_run_isolated(&fs->s, c, AF_STORE_NONE, NULL, deadline > 0 ? deadline : fs->s.default_deadline_s, r);
}

/* --plugin-dir DIR (repeatable): 0, or -1 after the message. */
static int add_plugin_dir(finding_opts *fo, const char *dir) {
    if (fo->n_plugin_dirs == MAX_PLUGIN_DIRS) {
        fprintf(stderr, "attnfuzz: --plugin-dir: at most %d directories\n", MAX_PLUGIN_DIRS);
        return -1;
    }
    fo->plugin_dirs[fo->n_plugin_dirs++] = dir;
    return 0;
}

/* An option `repro` and `minimize` share: 1 when it was one of them (parse_rc set), 0 when not. */
enum {
    OPT_F_BACKEND = 'b',
    OPT_F_ENGINE = 'e',
    OPT_F_DEADLINE = 'd',
    OPT_F_PLUGIN_DIR = 'p',
    OPT_F_WORKER_CMD = 'w',
    OPT_F_WORKER_CONFIG = 'W'
};
static int finding_option(af_cli_args *a, int opt, const char *v, finding_opts *fo, int *parse_rc) {
    switch (opt) {
        case OPT_F_BACKEND:
            fo->backend = v;
            return 1;
        case OPT_F_ENGINE:
            fo->engine = v;
            return 1;
        case OPT_F_DEADLINE:
            *parse_rc = af_cli_int(a, v, 1, DEADLINE_MAX_S, &fo->deadline);
            return 1;
        case OPT_F_PLUGIN_DIR:
            *parse_rc = add_plugin_dir(fo, v);
            return 1;
        case OPT_F_WORKER_CMD:
            fo->worker_cmd = v;
            return 1;
        case OPT_F_WORKER_CONFIG:
            fo->worker_config = v;
            return 1;
        default:
            return 0;
    }
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
    finding_opts fo;
    memset(&fo, 0, sizeof fo);
    const struct option *longopts = af_cli_repro_options;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz repro", argc, argv)) return AF_EXIT_USAGE;
    int parse_rc = 0, opt;
    const char *v;
    while (parse_rc == 0 && (opt = af_cli_next(&a, "", longopts, &v)) != -1)
        if (!finding_option(&a, opt, v, &fo, &parse_rc)) parse_rc = -1;
    int operands = parse_rc == 0 ? a.argc - a.next_operand : 0;
    if (operands == 1) path = a.argv[a.next_operand];
    af_cli_args_free(&a);
    if (parse_rc) return AF_EXIT_USAGE;
    if (!path) {
        fprintf(stderr, "usage: attnfuzz repro FILE.case [--backend NAME] [--engine E] [--deadline S] "
                        "[--plugin-dir DIR] [--worker-cmd \"ARGV...\" | --worker-config FILE]\n");
        return AF_EXIT_USAGE;
    }
    finding_session *fs = malloc(sizeof *fs);
    af_session_result *r = malloc(sizeof *r);
    int open_rc = fs && r ? open_finding_session("repro", path, &fo, fs) : AF_EXIT_ERROR;
    if (open_rc) {
        free(fs);
        free(r);
        return open_rc;
    }
    const af_case *c = &fs->c;
    const char *bname = fs->bname;
    run_finding(fs, c, fo.deadline, r);
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
    close_finding_session(fs);
    free(fs);
    return rc;
}

/* ---- minimize ------------------------------------------------------------------------- */

typedef struct {
    finding_session *fs;
    int deadline;
} cli_min_ctx;

static int cli_min_run(const af_case *c, void *user, af_verdict *v) {
    cli_min_ctx *m = user;
    af_session_result *r = malloc(sizeof *r);
    if (!r) return -1;
    run_finding(m->fs, c, m->deadline, r);
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
    finding_opts fo;
    memset(&fo, 0, sizeof fo);
    int max_runs = 300;
    bool quiet = false;
    const struct option *longopts = af_cli_minimize_options;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz minimize", argc, argv)) return AF_EXIT_USAGE;
    int parse_rc = 0, opt;
    const char *v;
    while (parse_rc == 0 && (opt = af_cli_next(&a, "o:", longopts, &v)) != -1) {
        if (finding_option(&a, opt, v, &fo, &parse_rc)) continue;
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
    finding_session *fs = malloc(sizeof *fs);
    int open_rc = fs ? open_finding_session("minimize", path, &fo, fs) : AF_EXIT_ERROR;
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
    close_finding_session(fs);
    free(fs);
    return exit_code;
}

/* ---- campaign ------------------------------------------------------------------------- */

#define CAMPAIGN_TIME_MAX_S   31536000.0 /* a year */
#define CAMPAIGN_JOBS_MAX     1024       /* the in-process engine keeps at most 64 in flight */
#define CAMPAIGN_GPU_JOBS_MAX 64         /* --gpus: the in-process engine's workers in flight */

enum {
    OPT_TIME = 1000,
    OPT_TOTAL,
    OPT_BACKEND,
    OPT_ENGINE,
    OPT_JOBS,
    OPT_OUT,
    OPT_DEADLINE,
    OPT_MAX_WORK,
    OPT_SEED,
    OPT_MIN_RUNS,
    OPT_FUZZER,
    OPT_RSS,
    OPT_INPROCESS,
    OPT_REPEATS,
    OPT_WORKERS_PER_GPU, /* issue 16: N workers on one GPU = N cases in flight */
    OPT_WORKER_CASES,
    OPT_SHARD, /* issue 16: --shard I/N (campaign/shard.h) */
    OPT_POLICY,
    OPT_SELECTOR_CMD, /* issue 15: a campaign of claim checks (cli_select.c) */
    OPT_RESUME,       /* issue 16: --resume continues the campaign in --out DIR */
    OPT_GPUS,         /* issue 16: --gpus all|0,1,...: workers per GPU (campaign/gpus.h) */
    OPT_MERGE_EVERY,  /* corpus merge every N cases */
    OPT_WORKER_CMD,   /* issue 13: a campaign on a worker:NAME backend (in-process engine) */
    OPT_WORKER_CONFIG
};
const struct option af_cli_campaign_options[] = {
    {"time", required_argument, NULL, OPT_TIME},
    {"total-time", required_argument, NULL, OPT_TOTAL},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"engine", required_argument, NULL, OPT_ENGINE},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"out", required_argument, NULL, OPT_OUT},
    {"deadline", required_argument, NULL, OPT_DEADLINE},
    {"max-work", required_argument, NULL, OPT_MAX_WORK},
    {"seed", required_argument, NULL, OPT_SEED},
    {"minimize-runs", required_argument, NULL, OPT_MIN_RUNS},
    {"fuzzer", required_argument, NULL, OPT_FUZZER},
    {"rss-limit-mb", required_argument, NULL, OPT_RSS},
    {"in-process", no_argument, NULL, OPT_INPROCESS}, /* also read as --inprocess (cli_opts.c) */
    {"repeats", required_argument, NULL, OPT_REPEATS},
    {"workers-per-gpu", required_argument, NULL, OPT_WORKERS_PER_GPU},
    {"worker-cases", required_argument, NULL, OPT_WORKER_CASES},
    {"shard", required_argument, NULL, OPT_SHARD},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"selector-cmd", required_argument, NULL, OPT_SELECTOR_CMD},
    {"resume", no_argument, NULL, OPT_RESUME},
    {"gpus", required_argument, NULL, OPT_GPUS},
    {"merge-every", required_argument, NULL, OPT_MERGE_EVERY},
    {"worker-cmd", required_argument, NULL, OPT_WORKER_CMD},
    {"worker-config", required_argument, NULL, OPT_WORKER_CONFIG},
    {NULL, 0, NULL, 0},
};

/* --gpus LIST with --workers-per-gpu W (default 1): o->gpus, jobs = GPUs x W. --jobs
 * with --gpus is refused (the GPUs say how many). AF_EXIT_PASS, AF_EXIT_USAGE (a bad
 * list, exit 2) or AF_EXIT_DECLINED (all: no GPU here), after the message. */
static int resolve_gpus(const char *spec, bool jobs_given, int workers_per_gpu, af_gpu_list *list,
                        af_campaign_opts *o) {
    char why[512];
    if (jobs_given) {
        fprintf(stderr, "attnfuzz campaign: --jobs with --gpus: give --workers-per-gpu N instead (jobs = GPUs x N)\n");
        return AF_EXIT_USAGE;
    }
    int rc = af_gpus_resolve(spec, getenv("CUDA_VISIBLE_DEVICES"), AF_GPUS_PROC_DIR, list, why, sizeof why);
    if (rc != AF_GPUS_OK) {
        fprintf(stderr, "attnfuzz campaign: %s\n", why);
        return rc == AF_GPUS_NONE ? AF_EXIT_DECLINED : AF_EXIT_USAGE;
    }
    o->workers_per_gpu = workers_per_gpu > 0 ? workers_per_gpu : 1;
    if ((long long)list->n * o->workers_per_gpu > CAMPAIGN_GPU_JOBS_MAX) {
        fprintf(stderr, "attnfuzz campaign: --gpus: %d GPU(s) x %d worker(s) per GPU is over %d workers\n", list->n,
                o->workers_per_gpu, CAMPAIGN_GPU_JOBS_MAX);
        return AF_EXIT_USAGE;
    }
    o->gpus = list;
    o->jobs = list->n * o->workers_per_gpu;
    return AF_EXIT_PASS;
}

int af_cli_campaign(int argc, char **argv) {
    af_campaign_opts o;
    af_campaign_opts_default(&o);
    const char **corpus = calloc((size_t)argc + 1, sizeof *corpus);
    if (!corpus) return AF_EXIT_USAGE;
    int n_corpus = 0;
    const char *policy = NULL, *selector_cmd = NULL, *gpus_spec = NULL;
    bool jobs_given = false;
    int workers_per_gpu = 0;
    af_gpu_list gpu_list;
    const char *worker_cmd = NULL, *worker_config = NULL; /* --backend worker:NAME's command */
    const struct option *longopts = af_cli_campaign_options;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz campaign", argc, argv)) {
        free(corpus);
        return AF_EXIT_USAGE;
    }
    int parse_rc = 0, opt;
    const char *v;
    while (parse_rc == 0 && (opt = af_cli_next(&a, "", longopts, &v)) != -1) {
        switch (opt) {
            case OPT_TIME:
                parse_rc = af_cli_double(&a, v, 0, true, CAMPAIGN_TIME_MAX_S, &o.time_s);
                break;
            case OPT_TOTAL:
                parse_rc = af_cli_double(&a, v, 0, true, CAMPAIGN_TIME_MAX_S, &o.total_s);
                break;
            case OPT_BACKEND:
                o.backend = v;
                break;
            case OPT_ENGINE:
                o.engine = v;
                break;
            case OPT_JOBS:
                parse_rc = af_cli_int(&a, v, 1, CAMPAIGN_JOBS_MAX, &o.jobs);
                jobs_given = true;
                break;
            case OPT_OUT:
                o.out_dir = v;
                break;
            case OPT_DEADLINE:
                parse_rc = af_cli_int(&a, v, 1, DEADLINE_MAX_S, &o.deadline_s);
                break;
            case OPT_MAX_WORK:
                parse_rc = af_cli_double(&a, v, 1024, false, 1e18, &o.max_work);
                break;
            case OPT_SEED:
                parse_rc = af_cli_u64(&a, v, &o.seed);
                break;
            case OPT_MIN_RUNS:
                parse_rc = af_cli_int(&a, v, 1, 1000000000, &o.minimize_runs);
                break;
            case OPT_FUZZER:
                o.fuzzer_path = v;
                break;
            case OPT_RSS:
                parse_rc = af_cli_int(&a, v, 0, 1 << 30, &o.rss_limit_mb);
                break;
            case OPT_INPROCESS:
                o.force_inprocess = true;
                break;
            case OPT_REPEATS:
                parse_rc = af_cli_repeats(&a, v, &o.repeats);
                break;
            case OPT_WORKERS_PER_GPU:
                parse_rc = af_cli_jobs(&a, v, &o.jobs);
                workers_per_gpu = o.jobs;
                break;
            case OPT_GPUS:
                gpus_spec = v;
                break;
            case OPT_MERGE_EVERY: {
                int every = 0;
                parse_rc = af_cli_int(&a, v, 1, 1000000000, &every);
                o.merge_every = every;
                break;
            }
            case OPT_WORKER_CASES:
                parse_rc = af_cli_worker_cases(&a, v, &o.worker_cases);
                break;
            case OPT_SHARD: {
                char why[160];
                parse_rc = af_shard_parse(v, &o.shard, why, sizeof why);
                if (parse_rc) fprintf(stderr, "attnfuzz campaign: %s\n", why);
                break;
            }
            case OPT_POLICY:
                policy = v;
                break;
            case OPT_SELECTOR_CMD:
                selector_cmd = v;
                break;
            case OPT_RESUME:
                o.resume = true;
                break;
            case OPT_WORKER_CMD:
                worker_cmd = v;
                break;
            case OPT_WORKER_CONFIG:
                worker_config = v;
                break;
            default:
                parse_rc = -1;
                break;
        }
    }
    for (int i = a.next_operand; parse_rc == 0 && i < a.argc; i++) corpus[n_corpus++] = a.argv[i];
    af_cli_args_free(&a);
    if (parse_rc) {
        free(corpus);
        return AF_EXIT_USAGE;
    }
    if (policy || selector_cmd) { /* a campaign of claim checks: the options it takes, the others refused */
        af_campaign_opts d;
        af_campaign_opts_default(&d);
        /* backend / engine: the defaults' own strings unless the option was given */
        const char *refused = o.backend != d.backend             ? "--backend"
                              : o.engine != d.engine             ? "--engine"
                              : o.total_s != d.total_s           ? "--total-time"
                              : o.fuzzer_path                    ? "--fuzzer"
                              : o.force_inprocess                ? "--in-process"
                              : o.rss_limit_mb != d.rss_limit_mb ? "--rss-limit-mb"
                              : o.repeats != d.repeats           ? "--repeats"
                              : o.worker_cases != d.worker_cases ? "--worker-cases"
                              : o.shard.count > 1                ? "--shard"
                              : gpus_spec                        ? "--gpus"
                              : n_corpus                         ? "a seed corpus"
                                                                 : NULL;
        free(corpus);
        if (refused) {
            fprintf(stderr,
                    "attnfuzz campaign: %s is not supported with --policy / --selector-cmd (the selector "
                    "chooses each case's backend)\n",
                    refused);
            return AF_EXIT_USAGE;
        }
        return af_cli_campaign_claims(policy, selector_cmd, o.time_s, o.out_dir, o.seed, o.max_work, o.minimize_runs,
                                      o.deadline_s, o.jobs, o.resume);
    }
    if (gpus_spec) {
        int gpus_rc = resolve_gpus(gpus_spec, jobs_given, workers_per_gpu, &gpu_list, &o);
        if (gpus_rc != AF_EXIT_PASS) {
            free(corpus);
            return gpus_rc;
        }
    }
    o.corpus = corpus;
    o.n_corpus = n_corpus;
    af_registry workers; /* the worker:NAME of --worker-cmd / --worker-config, if any */
    af_registry_init(&workers);
    if ((worker_cmd || worker_config) && (gpus_spec || o.jobs > 1)) { /* one worker, in process */
        fprintf(stderr,
                "attnfuzz campaign: %s is not supported with --worker-cmd / --worker-config (the campaign "
                "runs one worker process, in process)\n",
                gpus_spec ? "--gpus" : "--jobs > 1 / --workers-per-gpu");
        free(corpus);
        return AF_EXIT_USAGE;
    }
    if (worker_cmd || worker_config) { /* the campaign runs it in process (campaign.h backend_obj) */
        char why[512];
        if (af_cli_worker_register(&workers, o.backend, worker_cmd, worker_config, why, sizeof why) ||
            !(o.backend_obj = af_registry_find(&workers, o.backend, why, sizeof why))) {
            fprintf(stderr, "attnfuzz campaign: %s\n", why);
            af_registry_free(&workers);
            free(corpus);
            return AF_EXIT_USAGE;
        }
    }
    /* the command line as typed, for DIR/provenance.json; the summary block on stdout */
    const char **words = calloc((size_t)argc + 3, sizeof *words);
    if (words) {
        words[0] = "attnfuzz";
        words[1] = "campaign";
        for (int i = 0; i < argc; i++) words[i + 2] = argv[i];
        o.argv = words;
        o.argc = argc + 2;
    }
    o.summary = stdout;
    int rc = af_campaign_run(&o);
    free(words);
    af_registry_free(&workers);
    free(corpus);
    switch (rc) {
        case AF_CAMPAIGN_CLEAN:
            return AF_EXIT_PASS;
        case AF_CAMPAIGN_FINDINGS:
            return AF_EXIT_FINDING;
        case AF_CAMPAIGN_UNAVAILABLE:
            return AF_EXIT_DECLINED;
        case AF_CAMPAIGN_PLUGIN_ERROR:
            return AF_EXIT_PLUGIN;
        case AF_CAMPAIGN_INTERRUPTED:
            return AF_EXIT_INTERRUPTED;
        case AF_CAMPAIGN_BUSY:
            return AF_EXIT_BUSY;
        case AF_CAMPAIGN_NO_DATA: /* the default seed corpus is missing: a missing case path */
            return AF_EXIT_BAD_FILE;
        case AF_CAMPAIGN_WRITE_ERROR: /* the output directory: the README's "error" */
            return AF_EXIT_ERROR;
        case AF_CAMPAIGN_SETUP_ERROR:
        default:
            return AF_EXIT_USAGE;
    }
}
