/* cli_run.c — `attnfuzz run`, `print`, `backends`, `engines`. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "backends/cudnn/cudnn_backend.h"
#include "judge/verdict_json.h"
#include "judge/engines.h"
#include "judge/runner.h"
#include "cli/cli_opts.h"
#include "cli/cli_run_pool.h"

typedef struct {
    const char *backend;
    const char *engine;
    bool json;
    bool no_probes;
    af_ref_choice reference; /* --reference cpu|gpu|auto */
    af_oracle_opts oracle;
    int jobs;           /* --jobs N: N > 1 runs through persistent workers (cli_run_pool.c) */
    int worker_cases;   /* --worker-cases M (-1 = default) */
    bool threads_given; /* --threads was given */
} run_opts;

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

/* Options and case paths of `run`. Returns the number of paths, or -1 after saying why. */
static int parse_run_args(int argc, char **argv, run_opts *o, const char **paths) {
    enum { OPT_BACKEND = 1000, OPT_ENGINE, OPT_ORACLE, OPT_THREADS, OPT_JSON, OPT_NO_PROBES, OPT_REFERENCE };
    enum { OPT_JOBS = 1100, OPT_WORKER_CASES };
    static const struct option longopts[] = {
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"engine", required_argument, NULL, OPT_ENGINE},
        {"oracle", required_argument, NULL, OPT_ORACLE},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"json", no_argument, NULL, OPT_JSON},
        {"no-probes", no_argument, NULL, OPT_NO_PROBES},
        {"reference", required_argument, NULL, OPT_REFERENCE},
        {"jobs", required_argument, NULL, OPT_JOBS},
        {"worker-cases", required_argument, NULL, OPT_WORKER_CASES},
        {NULL, 0, NULL, 0},
    };
    af_oracle_opts_default(&o->oracle);
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
            case OPT_NO_PROBES:
                o->no_probes = true;
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

/* Exit code from what happened: bad input > finding > declined > pass. */
typedef struct {
    bool bad, finding, declined;
} outcome;
static int exit_code(const outcome *o) {
    if (o->bad) return AF_EXIT_USAGE;
    if (o->finding) return AF_EXIT_FINDING;
    if (o->declined) return AF_EXIT_DECLINED;
    return AF_EXIT_PASS;
}

static void report(const run_opts *o, const char *path, const af_verdict *v) {
    if (o->json) {
        af_json_verdict(stdout, path, v);
        fputc('\n', stdout);
    } else {
        char line[1024];
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

/* One engine's verdict of `run`: print it, note the outcome. */
typedef struct {
    const run_opts *o;
    const char *path;
    outcome *out;
} run_reporting;

static void report_engine_verdict(void *user, const char *engine, const af_verdict *v, bool ran, const af_tensors *t) {
    run_reporting *rep = user;
    (void)engine;
    (void)t;
    report(rep->o, rep->path, v);
    if (!ran || v->kind == AF_V_DECLINED)
        rep->out->declined = true;
    else if (v->n_findings)
        rep->out->finding = true;
}

int af_cli_run(int argc, char **argv) {
    run_opts o;
    memset(&o, 0, sizeof o);
    const char **paths = calloc((size_t)argc + 1, sizeof *paths);
    int n = parse_run_args(argc, argv, &o, paths);
    if (n <= 0) {
        if (n == 0) fprintf(stderr, "attnfuzz run: no case files given\n");
        free(paths);
        return AF_EXIT_USAGE;
    }
    if (o.jobs > 1) {
        af_run_pool_opts po = {o.backend, o.engine,        o.json, o.no_probes,   o.reference,
                               o.oracle,  o.threads_given, o.jobs, o.worker_cases};
        int rc = af_cli_run_pool(&po, (const char *const *)paths, n);
        free(paths);
        return rc;
    }
    af_registry reg;
    af_registry_init(&reg);
    af_runner runner;
    memset(&runner, 0, sizeof runner);
    runner.oracle = o.oracle;
    runner.probes = !o.no_probes;
    runner.ref_choice = o.reference;
    af_probe_opts_default(&runner.probe_opts);
    char why[512];
    runner.reference = af_registry_find(&reg, "cpu", why, sizeof why);
    outcome out = {0};
    /* A crash on a GPU backend can leave the device context sticky-broken: every later
     * run in this process would "crash" too. Those runs are not made; they are reported
     * as declined with the reason, so no false crash is ever reported. */
    af_context_state context;
    memset(&context, 0, sizeof context);
    for (int i = 0; i < n; i++) {
        af_case c;
        af_error err;
        if (af_case_load(paths[i], &c, &err)) {
            char msg[1024];
            af_error_format(&err, msg, sizeof msg);
            fprintf(stderr, "attnfuzz: %s\n", msg);
            out.bad = true;
            continue;
        }
        const char *bname = o.backend ? o.backend : (c.backend[0] ? c.backend : "cpu");
        const char *engine = o.engine ? o.engine : c.engine;
        af_backend *be = af_registry_find(&reg, bname, why, sizeof why);
        af_verdict v;
        if (!be) {
            fprintf(stderr, "attnfuzz: %s: %s\n", paths[i], why);
            out.bad = true;
            continue;
        }
        if (be->available(be, why, sizeof why)) {
            declined_verdict(&v, bname, why);
            report(&o, paths[i], &v);
            out.declined = true;
            continue;
        }
        if (be->supports(be, &c, why, sizeof why) != AF_RUN_OK) {
            declined_verdict(&v, bname, why);
            report(&o, paths[i], &v);
            out.declined = true;
            continue;
        }
        af_engine_list engines;
        if (af_engine_list_make(be, &c, engine, &engines, why, sizeof why)) {
            declined_verdict(&v, bname, why);
            report(&o, paths[i], &v);
            out.declined = true;
            af_engine_list_free(&engines);
            continue;
        }
        af_prepared prep;
        if (af_prepare(&runner, &c, &prep, why, sizeof why)) {
            fprintf(stderr, "attnfuzz: %s: %s\n", paths[i], why);
            out.bad = true;
            af_engine_list_free(&engines);
            continue;
        }
        run_reporting rep = {&o, paths[i], &out};
        af_judge_engines(&runner, &prep, be, &engines, paths[i], false, &context, report_engine_verdict, &rep);
        af_prepared_free(&prep);
        af_engine_list_free(&engines);
    }
    af_registry_free(&reg);
    free(paths);
    return exit_code(&out);
}

void af_cli_run_report(bool json, const char *path, const af_verdict *v) {
    run_opts o;
    memset(&o, 0, sizeof o);
    o.json = json;
    report(&o, path, v);
}

static int print_case(int argc, char **argv);

/* A subcommand without options: its operands start at *first. -1 after a message. */
static int no_options(const char *cmd, int argc, char **argv, af_cli_args *a) {
    static const struct option none[] = {{NULL, 0, NULL, 0}};
    if (af_cli_args_init(a, cmd, argc, argv)) return -1;
    const char *v;
    if (af_cli_next(a, "", none, &v) != -1) {
        af_cli_args_free(a);
        return -1;
    }
    return 0;
}

int af_cli_print(int argc, char **argv) {
    af_cli_args a;
    if (no_options("attnfuzz print", argc, argv, &a)) return AF_EXIT_USAGE;
    argv = a.argv + a.next_operand;
    argc = a.argc - a.next_operand;
    int rc = print_case(argc, argv);
    af_cli_args_free(&a);
    return rc;
}

static int print_case(int argc, char **argv) {
    if (argc != 1) {
        fprintf(stderr, "usage: attnfuzz print FILE.case\n");
        return AF_EXIT_USAGE;
    }
    af_case c;
    af_error err;
    if (af_case_load(argv[0], &c, &err)) {
        char msg[1024];
        af_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "attnfuzz: %s\n", msg);
        return AF_EXIT_USAGE;
    }
    return af_case_write(&c, stdout) ? AF_EXIT_USAGE : 0;
}

int af_cli_backends(int argc, char **argv) {
    af_cli_args a;
    if (no_options("attnfuzz backends", argc, argv, &a)) return AF_EXIT_USAGE;
    argc = a.argc - a.next_operand;
    af_cli_args_free(&a);
    if (argc) {
        fprintf(stderr, "usage: attnfuzz backends\n");
        return AF_EXIT_USAGE;
    }
    af_registry reg;
    af_registry_init(&reg);
    for (int i = 0; i < reg.count; i++) {
        af_backend *be = reg.items[i];
        char why[512] = "";
        int rc = be->available(be, why, sizeof why);
        printf("%-28s %-11s %s%s%s%s\n", be->name, rc ? "unavailable" : "available", be->description,
               (be->flags & AF_BACKEND_PLANTED) ? " [planted bug]" : "", rc ? " -- " : "", rc ? why : "");
    }
    af_registry_free(&reg);
    return 0;
}

int af_cli_engines(int argc, char **argv) {
    const char *path = NULL, *bname = "cudnn";
    static const struct option longopts[] = {{"backend", required_argument, NULL, 'b'}, {NULL, 0, NULL, 0}};
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz engines", argc, argv)) return AF_EXIT_USAGE;
    int opt;
    const char *v;
    while ((opt = af_cli_next(&a, "", longopts, &v)) != -1) {
        if (opt != 'b') {
            af_cli_args_free(&a);
            return AF_EXIT_USAGE;
        }
        bname = v;
    }
    int operands = a.argc - a.next_operand;
    if (operands == 1) path = a.argv[a.next_operand];
    af_cli_args_free(&a);
    if (!path) {
        fprintf(stderr, "usage: attnfuzz engines FILE.case [--backend NAME]\n");
        return AF_EXIT_USAGE;
    }
    af_case c;
    af_error err;
    if (af_case_load(path, &c, &err)) {
        char msg[1024];
        af_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "attnfuzz: %s\n", msg);
        return AF_EXIT_USAGE;
    }
    af_registry reg;
    af_registry_init(&reg);
    char why[512] = "";
    int rc = 0;
    af_backend *be = af_registry_find(&reg, bname, why, sizeof why);
    if (!be) {
        fprintf(stderr, "attnfuzz: %s\n", why);
        rc = AF_EXIT_USAGE;
        goto done;
    }
    if (be->available(be, why, sizeof why)) {
        printf("%s: unavailable: %s\n", bname, why);
        rc = AF_EXIT_DECLINED;
        goto done;
    }
    if (!strcmp(be->name, "cudnn")) {
        /* every config with its heuristic rank, finalize result, workspace and notes */
        rc = af_cudnn_engines_report(be, &c, stdout, why, sizeof why);
        if (rc) printf("%s: %s\n", bname, why);
        goto done;
    }
    if (be->supports(be, &c, why, sizeof why) != AF_RUN_OK) {
        printf("%s: declined: %s\n", bname, why);
        rc = AF_EXIT_DECLINED;
        goto done;
    }
    if (!be->engines) {
        printf("%s: one engine (default)\n", bname);
        goto done;
    }
    {
        char(*names)[AF_NAME_MAX] = calloc(256, sizeof *names);
        int n = be->engines(be, &c, names, 256, why, sizeof why);
        if (n <= 0) {
            printf("%s: no engine config: %s\n", bname, n < 0 ? why : "none finalizes");
            rc = AF_EXIT_DECLINED;
        }
        for (int i = 0; i < n; i++) printf("%s\n", names[i]);
        free(names);
    }
done:
    af_registry_free(&reg);
    return rc;
}
