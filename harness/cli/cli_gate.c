/* cli_gate.c — `attnfuzz gate`: compare two selection policies (or two builds of a
 * library) over generated configurations and judge what changed (gate/gate.h).
 *
 * Exit codes (cli_table.c): 0 passed, 1 failed (a newly chosen backend failed its claim,
 * or a configuration is no longer served). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opts.h"
#include "gate/gate.h"

const struct option af_cli_gate_options[] = {
    {"base", required_argument, NULL, 'b'},          {"head", required_argument, NULL, 'H'},
    {"time", required_argument, NULL, 't'},          {"out", required_argument, NULL, 'o'},
    {"seed", required_argument, NULL, 's'},          {"max-work", required_argument, NULL, 'w'},
    {"minimize-runs", required_argument, NULL, 'm'}, {"minimize-time", required_argument, NULL, 'M'},
    {"no-probes", no_argument, NULL, 'n'},           {"quiet", no_argument, NULL, 'q'},
    {"base-lib", required_argument, NULL, 'B'},      {"head-lib", required_argument, NULL, 'L'},
    {"backend", required_argument, NULL, 'k'},       {NULL, 0, NULL, 0},
};

int af_cli_gate(int argc, char **argv) {
    const char *base = NULL, *head = NULL, *out = NULL, *base_lib = NULL, *head_lib = NULL, *lib_backend = NULL;
    af_gate_opts o;
    af_gate_opts_default(&o);
    o.log = stderr;
    af_cli_args a;
    if (af_cli_args_init(&a, "attnfuzz gate", argc, argv)) return AF_EXIT_USAGE;
    int opt, rc = 0;
    const char *v;
    while (rc == 0 && (opt = af_cli_next(&a, "", af_cli_gate_options, &v)) != -1) {
        switch (opt) {
            case 'b':
                base = v;
                break;
            case 'H':
                head = v;
                break;
            case 'o':
                out = v;
                break;
            case 't':
                rc = af_cli_double(&a, v, 0, true, 86400 * 7, &o.loop.time_s);
                break;
            case 's':
                rc = af_cli_u64(&a, v, &o.loop.seed);
                break;
            case 'w':
                rc = af_cli_double(&a, v, 1024, false, 1e15, &o.loop.max_work);
                break;
            case 'm':
                rc = af_cli_int(&a, v, 1, 100000, &o.loop.min_runs);
                break;
            case 'M':
                rc = af_cli_double(&a, v, 1, false, 86400, &o.loop.min_seconds);
                break;
            case 'n':
                o.loop.probes = false;
                break;
            case 'q':
                o.log = NULL;
                break;
            case 'B':
                base_lib = v;
                break;
            case 'L':
                head_lib = v;
                break;
            case 'k':
                lib_backend = v;
                break;
            default:
                rc = -1;
                break;
        }
    }
    int operands = a.argc - a.next_operand;
    af_cli_args_free(&a);
    if (!rc && !operands && (base_lib || head_lib || lib_backend)) {
        if (!base_lib || !head_lib || !lib_backend || base || head) {
            fprintf(stderr, "usage: attnfuzz gate --base-lib PATH --head-lib PATH --backend cudnn|plugin [--time SEC] "
                            "[--out DIR] [--seed N] (not with --base / --head)\n");
            return AF_EXIT_USAGE;
        }
        return af_cli_gate_libs(base_lib, head_lib, lib_backend, o.loop.time_s, out ? out : "gate-out", o.loop.seed,
                                o.loop.max_work);
    }
    if (rc || operands || !base || !head) {
        if (!rc) fprintf(stderr, "usage: attnfuzz gate --base SEL --head SEL [--time SEC] [--out DIR] [--seed N]\n");
        return AF_EXIT_USAGE;
    }
    char default_out[64];
    if (!out) {
        snprintf(default_out, sizeof default_out, "gate-out");
        out = default_out;
    }
    o.out_dir = out;
    af_selector bsel, hsel;
    af_error e;
    char msg[1200];
    if (af_selector_open(&bsel, base, &e)) {
        af_error_format(&e, msg, sizeof msg);
        fprintf(stderr, "attnfuzz gate: --base: %s\n", msg);
        return strncmp(base, "cmd:", 4) ? AF_EXIT_BAD_FILE : AF_EXIT_USAGE;
    }
    if (af_selector_open(&hsel, head, &e)) {
        af_error_format(&e, msg, sizeof msg);
        fprintf(stderr, "attnfuzz gate: --head: %s\n", msg);
        af_selector_close(&bsel);
        return strncmp(head, "cmd:", 4) ? AF_EXIT_BAD_FILE : AF_EXIT_USAGE;
    }
    o.base = &bsel;
    o.head = &hsel;
    af_gate_summary s;
    char why[1024] = "";
    int g = af_gate_run(&o, &s, why, sizeof why);
    af_selector_close(&bsel);
    af_selector_close(&hsel);
    if (g < 0) {
        fprintf(stderr, "attnfuzz gate: %s\n", why);
        return AF_EXIT_ERROR;
    }
    printf("gate %s: examined %lld, differing %lld (newly served %lld, no longer served %lld, switched %lld), "
           "newly chosen failing %lld, buckets %d (%d minimised), %.1f s; reports in %s\n",
           g ? "FAILED" : "passed", s.examined, s.differing, s.newly_served, s.no_longer_served, s.switched,
           s.newly_failed, s.buckets, s.minimised, s.elapsed_s, out);
    return g ? AF_EXIT_FINDING : AF_EXIT_PASS;
}
