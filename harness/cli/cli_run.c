/* cli_run.c — `attnfuzz run` (`print` is cli_print.c, `backends` cli_backends.c, `engines`
 * cli_engines.c).
 *
 * `run` judges every case through the campaign's session (campaign/session.h): each case
 * in a forked child with a deadline and an optional memory limit, so a plugin that
 * crashes, aborts, corrupts its heap, loops or calls exit() becomes a crash / hang
 * verdict for its case and the next cases still run; --in-process runs them here. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "backends/worker/worker.h"
#include "campaign/session.h"
#include "judge/verdict_json.h"
#include "judge/engines.h"
#include "judge/runner.h"
#include "cli/cli_opts.h"
#include "cli/cli_workers.h"
#include "model/case_measure.h"
#include "cli/cli_run_pool.h"
#include "cli/cli_run_tally.h"

typedef struct {
    const char *backend;
    const char *engine;
    bool json;
    bool no_probes;
    af_ref_choice reference; /* --reference cpu|gpu|auto */
    int repeats;             /* --repeats N (0 = AF_REPEATS_DEFAULT) */
    af_oracle_opts oracle;
    bool in_process;               /* --in-process: no child per case (debugging) */
    int deadline_s;                /* --deadline; 0 = from the case's size */
    unsigned long long max_memory; /* --max-memory MB, in bytes; 0 = no limit */
    const char **plugin_dirs;      /* --plugin-dir (repeatable) */
    int n_plugin_dirs;
    const char *worker_cmd;    /* --worker-cmd "argv..." of worker:NAME */
    const char *worker_config; /* --worker-config FILE */
    af_registry *workers;      /* the worker:NAME backend of --worker-cmd / --worker-config */
    int jobs;                  /* --jobs N: N > 1 runs through persistent workers (cli_run_pool.c) */
    int worker_cases;          /* --worker-cases M (-1 = default) */
    bool threads_given;        /* --threads was given */
    const char *policy;        /* --policy FILE: check the policy's claims (cli_select.c) */
    const char *selector_cmd;  /* --selector-cmd "ARGV...": the same for an external selector */
    bool allow_declined;       /* --allow-declined: declines pass when some case passed */
} run_opts;

#define RUN_MEMORY_MAX_MB (1 << 30)

static int parse_tier(const char *s, af_oracle_tier *t) {
    if (!strcmp(s, "auto"))
        *t = AF_ORACLE_AUTO;
    else if (!strcmp(s, "mpfr"))
        *t = AF_ORACLE_MPFR;
    else if (!strcmp(s, "fp64"))
        *t = AF_ORACLE_FP64;
    else
        return -1;
    return 0;
}

/* The options of `run`: the parser's table, also the one `--help` lists (cli_help.c). */
enum {
    OPT_BACKEND = 1000,
    OPT_ENGINE,
    OPT_ORACLE,
    OPT_THREADS,
    OPT_JSON,
    OPT_NO_PROBES,
    OPT_REFERENCE,
    OPT_IN_PROCESS,
    OPT_DEADLINE,
    OPT_MAX_MEMORY,
    OPT_PLUGIN_DIR,
    OPT_WORKER_CMD,
    OPT_WORKER_CONFIG,
    OPT_REPEATS,
    OPT_JOBS,
    OPT_WORKER_CASES,
    OPT_POLICY,
    OPT_SELECTOR_CMD,
    OPT_ALLOW_DECLINED
};
const struct option af_cli_run_options[] = {
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"engine", required_argument, NULL, OPT_ENGINE},
    {"oracle", required_argument, NULL, OPT_ORACLE},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"json", no_argument, NULL, OPT_JSON},
    {"no-probes", no_argument, NULL, OPT_NO_PROBES},
    {"reference", required_argument, NULL, OPT_REFERENCE},
    {"in-process", no_argument, NULL, OPT_IN_PROCESS},
    {"deadline", required_argument, NULL, OPT_DEADLINE},
    {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
    {"plugin-dir", required_argument, NULL, OPT_PLUGIN_DIR},
    {"worker-cmd", required_argument, NULL, OPT_WORKER_CMD},
    {"worker-config", required_argument, NULL, OPT_WORKER_CONFIG},
    {"repeats", required_argument, NULL, OPT_REPEATS},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"worker-cases", required_argument, NULL, OPT_WORKER_CASES},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"selector-cmd", required_argument, NULL, OPT_SELECTOR_CMD},
    {"allow-declined", no_argument, NULL, OPT_ALLOW_DECLINED},
    {NULL, 0, NULL, 0},
};

/* Options and case paths of `run`. Returns the number of paths, or -1 after saying why. */
static int parse_run_args(int argc, char **argv, run_opts *o, const char **paths) {
    const struct option *longopts = af_cli_run_options;
    af_runner_oracle_defaults(&o->oracle);
    o->jobs = 1;
    o->worker_cases = -1;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz run", argc, argv)) return -1;
    int rc = 0, opt;
    const char *v;
    while (rc == 0 && (opt = af_cli_next(&a, "", longopts, &v)) != -1) {
        switch (opt) {
            case OPT_BACKEND:
                o->backend = v;
                break;
            case OPT_ENGINE:
                o->engine = v;
                break;
            case OPT_THREADS:
                rc = af_cli_int(&a, v, 0, 1024, &o->oracle.threads);
                o->threads_given = true;
                break;
            case OPT_JOBS:
                rc = af_cli_jobs(&a, v, &o->jobs);
                break;
            case OPT_WORKER_CASES:
                rc = af_cli_worker_cases(&a, v, &o->worker_cases);
                break;
            case OPT_ORACLE:
                if (parse_tier(v, &o->oracle.tier)) {
                    fprintf(stderr, "attnfuzz run: --oracle: '%s' is not mpfr, fp64 or auto\n", v);
                    rc = -1;
                }
                break;
            case OPT_JSON:
                o->json = true;
                break;
            case OPT_IN_PROCESS:
                o->in_process = true;
                break;
            case OPT_DEADLINE:
                rc = af_cli_int(&a, v, 1, AF_CLI_DEADLINE_MAX_S, &o->deadline_s);
                break;
            case OPT_MAX_MEMORY: {
                int mb = 0;
                rc = af_cli_int(&a, v, 1, RUN_MEMORY_MAX_MB, &mb);
                o->max_memory = (unsigned long long)mb << 20;
                break;
            }
            case OPT_PLUGIN_DIR:
                o->plugin_dirs[o->n_plugin_dirs++] = v;
                break;
            case OPT_WORKER_CMD:
                o->worker_cmd = v;
                break;
            case OPT_WORKER_CONFIG:
                o->worker_config = v;
                break;
            case OPT_POLICY:
                o->policy = v;
                break;
            case OPT_SELECTOR_CMD:
                o->selector_cmd = v;
                break;
            case OPT_NO_PROBES:
                o->no_probes = true;
                break;
            case OPT_ALLOW_DECLINED:
                o->allow_declined = true;
                break;
            case OPT_REPEATS:
                rc = af_cli_repeats(&a, v, &o->repeats);
                break;
            case OPT_REFERENCE:
                if (!strcmp(v, "auto"))
                    o->reference = AF_REF_AUTO;
                else if (!strcmp(v, "cpu"))
                    o->reference = AF_REF_CPU;
                else if (!strcmp(v, "gpu"))
                    o->reference = AF_REF_GPU;
                else {
                    fprintf(stderr, "attnfuzz run: --reference: '%s' is not cpu, gpu or auto\n", v);
                    rc = -1;
                }
                break;
            default:
                rc = -1;
                break;
        }
    }
    int n = 0;
    for (int i = a.next_operand; rc == 0 && i < a.argc; i++) paths[n++] = a.argv[i];
    af_cli_args_free(&a);
    return rc ? -1 : n;
}

static void report(const run_opts *o, const char *path, const af_verdict *v) {
    if (o->json) {
        af_json_verdict(stdout, path, v);
        fputc('\n', stdout);
    } else {
        char line[1024];
        const af_finding *f = v->n_findings ? &v->findings[0] : NULL;
        if (f && f->tensor == AF_T_NONE && (f->kind == AF_V_CRASH || f->kind == AF_V_HANG))
            snprintf(line, sizeof line, "FINDING %s (%s)", af_verdict_name(f->kind), f->detail); /* no numbers */
        else
            af_verdict_line(v, line, sizeof line);
        if (v->info.engine[0])
            printf("%s [%s %s]: %s\n", path, v->backend, v->info.engine, line);
        else
            printf("%s [%s]: %s\n", path, v->backend, line);
    }
    fflush(stdout);
}

static void declined_verdict(af_verdict *v, const char *backend, const char *reason) {
    af_verdict_init(v, backend);
    v->kind = AF_V_DECLINED;
    snprintf(v->reason, sizeof v->reason, "%s", reason);
}

/* Every engine's verdict, printed where it was judged (in an isolated run: by the
 * child, at once, so that a later crash of the same case loses no line). */
typedef struct {
    const run_opts *o;
    const af_session *s; /* its verdict_label names the case (also in a persistent worker) */
} run_reporting;

static void print_engine_verdict(void *user, const char *engine, const af_verdict *v, bool ran) {
    run_reporting *rep = user;
    (void)engine;
    (void)ran;
    report(rep->o, rep->s->verdict_label, v);
}

/* One session per backend name the cases use (usually one), opened on first use. */
#define RUN_MAX_SESSIONS 8
typedef struct {
    char name[AF_NAME_MAX + 8];
    af_session s;
    int open_rc; /* 0 open, else the exit code its failure maps to */
    char why[512];
    bool in_process; /* cases run in this process (--in-process, or a worker backend) */
} run_session;

static run_session *session_for(run_session *cache, int *n, const run_opts *o, const char *bname) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(cache[i].name, bname)) return &cache[i];
    if (*n == RUN_MAX_SESSIONS) return NULL;
    run_session *rs = &cache[(*n)++];
    memset(rs, 0, sizeof *rs);
    snprintf(rs->name, sizeof rs->name, "%s", bname);
    /* isolated: even available() runs in a child; the backend's code never runs here.
     * A worker:NAME backend is its own isolation (the kernel runs in the worker process,
     * whose crash, hang or exit the backend reports): it runs in this process, so one
     * worker lives for many cases. */
    af_backend *obj = NULL;
    rs->in_process = o->in_process;
    if (!strncmp(bname, "worker:", 7)) {
        obj = af_registry_find(o->workers, bname, rs->why, sizeof rs->why);
        if (!obj) {
            rs->open_rc = AF_EXIT_USAGE;
            return rs;
        }
        rs->in_process = true;
    }
    unsigned flags = AF_SESSION_NO_LIMITS | (rs->in_process ? AF_SESSION_INPROCESS : AF_SESSION_ISOLATE);
    if (af_session_open_ex(&rs->s, bname, obj, o->engine ? o->engine : "", "", flags, rs->why, sizeof rs->why)) {
        rs->open_rc = af_cli_open_exit_code(rs->s.open_error);
        return rs;
    }
    af_runner *runner = &rs->s.runner;
    runner->oracle = o->oracle;
    runner->probes = !o->no_probes;
    runner->ref_choice = o->reference;
    runner->repeats = o->repeats;
    rs->s.max_memory = o->max_memory;
    if (o->worker_cases >= 0) rs->s.worker_cases = o->worker_cases;
    rs->s.on_verdict = print_engine_verdict;
    if (rs->in_process) af_session_allow_ahead(&rs->s); /* (isolated: each persistent worker) */
    return rs;
}

/* The deadline of one case when --deadline is not given: the backend's default (60 s,
 * GPU 300 s) plus one second per 2e8 units of attention work, at most an hour. */
static int case_deadline(const run_opts *o, const af_session *s, const af_case *c) {
    if (o->deadline_s > 0) return o->deadline_s;
    double d = s->default_deadline_s + af_case_work(c) / 2e8;
    return d > 3600 ? 3600 : (int)d;
}

/* One case of `run`: load, pick its backend, run it (isolated unless --in-process). */
static void run_one(const run_opts *o, const char *path, const char *next_path, run_session *cache, int *n_sessions,
                    af_session_result *r, af_run_tally *out) {
    af_case c;
    int rc = af_cli_load_case("attnfuzz run", path, &c);
    const char *bname = NULL;
    if (rc == 0) rc = af_cli_choose_backend("run", path, &c, o->backend, o->plugin_dirs, o->n_plugin_dirs, &bname);
    if (rc) {
        af_run_tally_not_judged(out, rc);
        return;
    }
    run_session *rs = session_for(cache, n_sessions, o, bname);
    if (!rs) {
        fprintf(stderr, "attnfuzz run: %s: more than %d backends in one run\n", path, RUN_MAX_SESSIONS);
        af_run_tally_not_judged(out, AF_EXIT_USAGE);
        return;
    }
    if (rs->open_rc == AF_EXIT_DECLINED) { /* unavailable here: a declined verdict, with the reason */
        af_verdict v;
        declined_verdict(&v, bname, rs->why);
        report(o, path, &v);
        af_run_tally_unavailable(out);
        return;
    }
    if (rs->open_rc) {
        fprintf(stderr, "attnfuzz run: %s: %s\n", path, rs->why);
        af_run_tally_not_judged(out, rs->open_rc);
        return;
    }
    run_reporting rep = {o, &rs->s};
    snprintf(rs->s.verdict_label, sizeof rs->s.verdict_label, "%s", path);
    rs->s.on_verdict_user = &rep;
    /* the next file's case, when it loads and runs on the same backend: its builds may
     * start while this one is judged (errors are its own turn's to report) */
    af_case *next = next_path ? malloc(sizeof *next) : NULL;
    af_error next_err;
    if (next && (af_case_load(next_path, next, &next_err) != 0 || (!o->backend && strcmp(next->backend, c.backend)))) {
        free(next);
        next = NULL;
    }
    rs->s.next_hint = next;
    if (rs->in_process)
        af_session_run(&rs->s, &c, AF_STORE_NONE, NULL, r);
    else
        af_session_run_isolated(&rs->s, &c, AF_STORE_NONE, NULL, case_deadline(o, &rs->s, &c), r);
    rs->s.on_verdict_user = NULL;
    rs->s.next_hint = NULL;
    free(next);
    if (r->status == AF_CASE_NOT_RUN) fprintf(stderr, "attnfuzz run: %s: %s\n", path, r->why);
    if (r->status == AF_CASE_CRASHED || r->status == AF_CASE_HUNG)
        report(o, path, &r->verdict); /* the child died before it could say */
    af_run_tally_result(out, r);
}

int af_cli_run(int argc, char **argv) {
    run_opts o;
    memset(&o, 0, sizeof o);
    const char **paths = calloc((size_t)argc + 1, sizeof *paths);
    const char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
    run_session *cache = calloc(RUN_MAX_SESSIONS, sizeof *cache);
    af_session_result *r = malloc(sizeof *r);
    if (!paths || !dirs || !cache || !r) {
        fprintf(stderr, "attnfuzz run: out of memory\n");
        free(paths);
        free(dirs);
        free(cache);
        free(r);
        return AF_EXIT_ERROR;
    }
    o.plugin_dirs = dirs;
    int n = parse_run_args(argc, argv, &o, paths);
    af_run_tally out = {0};
    if (n <= 0) {
        if (n == 0) fprintf(stderr, "attnfuzz run: no case files given\n");
        out.usage = true;
    }
    if (n > 0 && (o.policy || o.selector_cmd)) {
        /* the selector chooses backend and engine, one case at a time */
        const char *refused = o.backend                    ? "--backend"
                              : o.engine                   ? "--engine"
                              : o.jobs > 1                 ? "--jobs"
                              : o.worker_cmd               ? "--worker-cmd"
                              : o.worker_config            ? "--worker-config"
                              : o.n_plugin_dirs            ? "--plugin-dir"
                              : o.worker_cases >= 0        ? "--worker-cases"
                              : o.allow_declined           ? "--allow-declined"
                              : o.policy && o.selector_cmd ? "--selector-cmd together with --policy"
                                                           : NULL;
        int rc = AF_EXIT_USAGE;
        if (refused)
            fprintf(stderr,
                    "attnfuzz run: %s is not supported with --policy / --selector-cmd (the selector chooses "
                    "the backend and engine of each case, run one at a time)\n",
                    refused);
        else {
            af_cli_claims_opts co = {o.policy, o.selector_cmd, o.no_probes, o.json,    o.in_process, o.deadline_s,
                                     true,     o.oracle,       o.reference, o.repeats, o.max_memory};
            rc = af_cli_run_claims((const char *const *)paths, n, &co);
        }
        free(cache), free(r), free(dirs), free(paths);
        return rc;
    }
    if (n > 0 && o.jobs > 1) {
        af_run_pool_opts po = {o.backend,    o.engine,        o.json,        o.no_probes,     o.reference,
                               o.oracle,     o.threads_given, o.jobs,        o.worker_cases,  o.repeats,
                               o.deadline_s, o.max_memory,    o.plugin_dirs, o.n_plugin_dirs, o.allow_declined};
        int rc = af_cli_run_pool(&po, (const char *const *)paths, n);
        free(cache);
        free(r);
        free(dirs);
        free(paths);
        return rc;
    }
    af_registry workers; /* the worker:NAME of --worker-cmd / --worker-config, if any */
    af_registry_init(&workers);
    o.workers = &workers;
    char why[512];
    if (n > 0 && af_cli_worker_register(&workers, o.backend, o.worker_cmd, o.worker_config, why, sizeof why)) {
        fprintf(stderr, "attnfuzz run: %s\n", why);
        out.usage = true;
        n = 0;
    }
    int n_sessions = 0;
    for (int i = 0; i < n; i++) run_one(&o, paths[i], i + 1 < n ? paths[i + 1] : NULL, cache, &n_sessions, r, &out);
    if (n > 0) af_run_tally_print(&out, stderr);
    for (int i = 0; i < n_sessions; i++)
        if (cache[i].open_rc == 0) af_session_close(&cache[i].s);
    af_registry_free(&workers); /* after the sessions: they ran its backends, not owning them */
    free(cache);
    free(r);
    free(dirs);
    free(paths);
    return af_run_tally_exit(&out, o.allow_declined);
}

void af_cli_run_report(bool json, const char *path, const af_verdict *v) {
    run_opts o;
    memset(&o, 0, sizeof o);
    o.json = json;
    report(&o, path, v);
}
