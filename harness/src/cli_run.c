/* cli_run.c — `attnfuzz run`, `print`, `backends`, `engines`. */
#include <stdlib.h>
#include <string.h>

#include "attnfuzz/cli.h"
#include "attnfuzz/cudnn_backend.h"
#include "attnfuzz/json.h"
#include "attnfuzz/runner.h"

typedef struct {
    const char *backend;
    const char *engine;
    bool json;
    bool no_probes;
    af_ref_choice reference; /* --reference cpu|gpu|auto */
    af_oracle_opts oracle;
} run_opts;

static int parse_tier(const char *s, af_oracle_tier *t) {
    if (!strcmp(s, "auto")) *t = AF_ORACLE_AUTO;
    else if (!strcmp(s, "mpfr")) *t = AF_ORACLE_MPFR;
    else if (!strcmp(s, "fp64")) *t = AF_ORACLE_FP64;
    else return -1;
    return 0;
}

/* Split argv into options and case paths. Returns number of paths or -1. */
static int parse_run_args(int argc, char **argv, run_opts *o, const char **paths) {
    int n = 0;
    af_oracle_opts_default(&o->oracle);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--backend") || !strcmp(a, "--engine") || !strcmp(a, "--oracle") || !strcmp(a, "--threads") ||
            !strcmp(a, "--reference")) {
            if (i + 1 >= argc) { fprintf(stderr, "attnfuzz: %s needs a value\n", a); return -1; }
            const char *v = argv[++i];
            if (!strcmp(a, "--reference")) {
                if (!strcmp(v, "auto")) o->reference = AF_REF_AUTO;
                else if (!strcmp(v, "cpu")) o->reference = AF_REF_CPU;
                else if (!strcmp(v, "gpu")) o->reference = AF_REF_GPU;
                else { fprintf(stderr, "attnfuzz: --reference: '%s' is not cpu, gpu or auto\n", v); return -1; }
            } else if (!strcmp(a, "--backend")) o->backend = v;
            else if (!strcmp(a, "--engine")) o->engine = v;
            else if (!strcmp(a, "--threads")) o->oracle.threads = atoi(v);
            else if (parse_tier(v, &o->oracle.tier)) { fprintf(stderr, "attnfuzz: --oracle: '%s' is not mpfr, fp64 or auto\n", v); return -1; }
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--no-probes")) {
            o->no_probes = true;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "attnfuzz: unknown option '%s'\n", a);
            return -1;
        } else {
            paths[n++] = a;
        }
    }
    return n;
}

/* Exit code from what happened: bad input > finding > declined > pass. */
typedef struct { bool bad, finding, declined; } outcome;
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
    char context_lost[768] = "";
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
        /* engines to run */
        char (*names)[AF_NAME_MAX] = NULL;
        int n_eng = 1;
        if (engine && !strcmp(engine, "all") && be->engines) {
            names = calloc(256, sizeof *names);
            n_eng = be->engines(be, &c, names, 256, why, sizeof why);
            if (n_eng <= 0) {
                declined_verdict(&v, bname, n_eng < 0 ? why : "no engine config finalizes for this case");
                report(&o, paths[i], &v);
                out.declined = true;
                free(names);
                continue;
            }
        }
        af_prepared prep;
        if (af_prepare(&runner, &c, &prep, why, sizeof why)) {
            fprintf(stderr, "attnfuzz: %s: %s\n", paths[i], why);
            out.bad = true;
            free(names);
            continue;
        }
        for (int e = 0; e < n_eng; e++) {
            const char *ename = names ? names[e] : (engine && strcmp(engine, "all") ? engine : "");
            if (af_context_lost_verdict(be, context_lost, bname, ename, &v)) {
                report(&o, paths[i], &v);
                out.declined = true;
                continue;
            }
            af_judge(&runner, &prep, be, ename, &v, NULL);
            report(&o, paths[i], &v);
            if (v.kind == AF_V_DECLINED) out.declined = true;
            else if (v.n_findings) out.finding = true;
            af_context_note(be, &v, paths[i], ename, context_lost, sizeof context_lost);
        }
        af_prepared_free(&prep);
        free(names);
    }
    af_registry_free(&reg);
    free(paths);
    return exit_code(&out);
}

int af_cli_print(int argc, char **argv) {
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
    (void)argv;
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
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) bname = argv[++i];
        else if (!path) path = argv[i];
        else { fprintf(stderr, "usage: attnfuzz engines FILE.case [--backend NAME]\n"); return AF_EXIT_USAGE; }
    }
    if (!path) { fprintf(stderr, "usage: attnfuzz engines FILE.case [--backend NAME]\n"); return AF_EXIT_USAGE; }
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
    if (!be) { fprintf(stderr, "attnfuzz: %s\n", why); rc = AF_EXIT_USAGE; goto done; }
    if (be->available(be, why, sizeof why)) { printf("%s: unavailable: %s\n", bname, why); rc = AF_EXIT_DECLINED; goto done; }
    if (!strcmp(be->name, "cudnn")) {
        /* every config with its heuristic rank, finalize result, workspace and notes */
        rc = af_cudnn_engines_report(be, &c, stdout, why, sizeof why);
        if (rc) printf("%s: %s\n", bname, why);
        goto done;
    }
    if (be->supports(be, &c, why, sizeof why) != AF_RUN_OK) { printf("%s: declined: %s\n", bname, why); rc = AF_EXIT_DECLINED; goto done; }
    if (!be->engines) { printf("%s: one engine (default)\n", bname); goto done; }
    {
        char (*names)[AF_NAME_MAX] = calloc(256, sizeof *names);
        int n = be->engines(be, &c, names, 256, why, sizeof why);
        if (n <= 0) { printf("%s: no engine config: %s\n", bname, n < 0 ? why : "none finalizes"); rc = AF_EXIT_DECLINED; }
        for (int i = 0; i < n; i++) printf("%s\n", names[i]);
        free(names);
    }
done:
    af_registry_free(&reg);
    return rc;
}
