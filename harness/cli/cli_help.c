/* cli_help.c — `attnfuzz --help`, `attnfuzz VERB --help`, `attnfuzz --version`.
 *
 * The help is generated: the verbs from af_cli_commands (cli_table.c), the options of
 * each from the very getopt_long table its parser uses, the words for each option from
 * option_docs below (looked up by verb and name; test_cli_help fails when an option of
 * a table has none, or when the help names an option that no table has).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/hostinfo.h"
#include "util/suggest.h"
#include "util/version.h"

typedef struct {
    const char *verb;
    const char *option; /* the long name, or "-o" for a short-only option */
    const char *arg;    /* the value's name ("" for a flag) */
    const char *help;
} option_doc;

#define BACKEND_HELP "backend: cpu, cudnn, plugin:PATH.so, planted:BUG (default: the case's, else cpu)"

static const option_doc option_docs[] = {
    {"run", "backend", "NAME", BACKEND_HELP},
    {"run", "engine", "NAME|all", "engine config of the backend (all: every engine, one verdict each)"},
    {"run", "oracle", "mpfr|fp64|auto", "oracle tier (auto: MPFR where affordable, else fp64)"},
    {"run", "threads", "N", "oracle threads (0 = one per core; at most 1024)"},
    {"run", "json", "", "one JSON verdict object per line instead of text"},
    {"run", "no-probes", "", "skip the probes (visibility, inclusion, sensitivity, determinism)"},
    {"run", "reference", "cpu|gpu|auto", "who computes the floor's reference (auto: the GPU one for large cases)"},
    {"run", "in-process", "", "run the cases in attnfuzz itself, no child per case (debugging)"},
    {"run", "deadline", "SEC", "per-case deadline, 1 to 604800 (default: the backend's 60 / GPU 300 s + size share)"},
    {"run", "max-memory", "MB", "per-case memory limit (RLIMIT_AS; default none)"},
    {"run", "plugin-dir", "DIR", "a directory a case's backend = plugin:PATH may load from (repeatable)"},
    {"run", "worker-cmd", "\"ARGV...\"", "the command of the --backend worker:NAME (no shell)"},
    {"run", "worker-config", "FILE", "a worker config file (command, name, timeout, transport)"},
    {"run", "repeats", "N", "runs of a nondeterministic backend, each judged (default 3)"},
    {"run", "jobs", "N", "N cases at once in persistent workers (one line per case, in case order)"},
    {"run", "worker-cases", "M", "cases one persistent worker serves before it is replaced (0: a fresh child each)"},
    {"run", "policy", "FILE", "check claims: the policy's chosen backend must serve each case (claim_mismatch)"},
    {"run", "selector-cmd", "\"ARGV...\"", "check claims of an external selector (case on stdin; no shell)"},
    {"run", "allow-declined", "", "exit 0 when every case passed or was declined and at least one passed"},
    {"campaign", "policy", "FILE",
     "a campaign of claim checks: each case's chosen backend must serve it (claim_mismatch)"},
    {"campaign", "selector-cmd", "\"ARGV...\"", "the same with an external selector (case on stdin; no shell)"},
    {"select", "policy", "FILE", "policy file (default policies/default.policy)"},
    {"select", "selector-cmd", "\"ARGV...\"", "an external selector: case on stdin, prints NAME or 'none: REASON'"},
    {"gate", "base", "SEL", "the selector before the change: a policy file or cmd:PROGRAM ARGS"},
    {"gate", "head", "SEL", "the selector after the change"},
    {"gate", "time", "SEC", "the whole gate (default 60): fuzzing and the minimisations inside it"},
    {"gate", "out", "DIR", "reports: report.json, report.junit.xml, report.sarif, gate.json (default gate-out)"},
    {"gate", "seed", "N", "random seed of the fuzzed configurations (default 1)"},
    {"gate", "max-work", "W", "work budget of a fuzzed case (default 262144)"},
    {"gate", "minimize-runs", "N", "run budget per minimisation (default 120)"},
    {"gate", "minimize-time", "SEC", "wall budget per minimisation (default 60), within what --time has left"},
    {"gate", "no-probes", "", "judge without the probes"},
    {"gate", "quiet", "", "no progress lines on stderr"},
    {"gate", "base-lib", "PATH", "library gate: the backend's library before the upgrade (cudnn: a libcudnn.so.9)"},
    {"gate", "head-lib", "PATH", "library gate: the library after the upgrade; cases whose verdict or engines change"},
    {"gate", "backend", "B", "library gate backend: cudnn (LD_LIBRARY_PATH per worker) or plugin (PATH is the .so)"},
    {"backends", "worker-configs", "DIR",
     "also list worker:NAME per DIR/*.conf, started for its hello (repeatable; default $ATTNFUZZ_WORKER_CONFIGS)"},
    {"engines", "backend", "NAME", "backend whose engines to list (default cudnn)"},
    {"engines", "worker-cmd", "\"ARGV...\"", "the command of the --backend worker:NAME (no shell)"},
    {"engines", "worker-config", "FILE", "a worker config file"},
    {"triage", "quiet", "", "write the reports, print nothing"},
    {"triage", "fail-on-findings", "", "exit 1 when a bucket exists"},
    {"triage", "help", "", "this help"},
    {"minimize", "-o", "OUT.case", "where the minimised case is written (required)"},
    {"minimize", "backend", "NAME", BACKEND_HELP},
    {"minimize", "engine", "NAME", "engine config to keep the finding on"},
    {"minimize", "deadline", "SEC", "per-run deadline, 1 to 604800 (default 60, GPU backends 300)"},
    {"minimize", "max-runs", "N", "run budget of the minimisation (default 300)"},
    {"minimize", "quiet", "", "no progress lines on stderr"},
    {"minimize", "plugin-dir", "DIR", "a directory a case's backend = plugin:PATH may load from (repeatable)"},
    {"minimize", "worker-cmd", "\"ARGV...\"", "the command of the --backend worker:NAME (no shell)"},
    {"minimize", "worker-config", "FILE", "a worker config file (command, name, timeout, transport)"},
    {"campaign", "time", "SEC", "fuzzing time (default 60); minimisation and reports come after"},
    {"campaign", "total-time", "SEC", "hard limit on the whole run: fuzzing, minimisation and reports end by then"},
    {"campaign", "backend", "NAME", "backend under test (default cpu)"},
    {"campaign", "engine", "NAME|all", "engine config (all: every engine)"},
    {"campaign", "jobs", "N", "parallel workers, 1 to 1024 (default 1)"},
    {"campaign", "out", "DIR", "output directory (default campaign-YYYYMMDD-HHMMSS)"},
    {"campaign", "deadline", "SEC", "per-case deadline, 1 to 604800 (default 60, GPU backends 300)"},
    {"campaign", "max-work", "W",
     "work budget of a generated case, >= 1024 (default 1048576; 2^48 for a GPU backend or a worker on a GPU)"},
    {"campaign", "seed", "N", "random seed (unsigned 64-bit)"},
    {"campaign", "minimize-runs", "N", "run budget per minimisation (default 200)"},
    {"campaign", "fuzzer", "PATH", "libFuzzer target to drive (default attnfuzz_fuzz beside attnfuzz)"},
    {"campaign", "rss-limit-mb", "MB", "libFuzzer -rss_limit_mb of each worker (default 4096, 0 = none)"},
    {"campaign", "in-process", "", "use the in-process engine even when attnfuzz_fuzz exists"},
    {"campaign", "repeats", "N", "runs of a nondeterministic backend, each judged (default 3)"},
    {"campaign", "no-probes", "",
     "judge each case against the oracle only, without the probes (faster; leaks and run-to-run differences go "
     "unseen; in-process engine)"},
    {"campaign", "stop-after-buckets", "N",
     "end fuzzing once N buckets are found (1: at the first finding); minimisation and reports follow"},
    {"campaign", "workers-per-gpu", "N", "N cases in flight on one GPU (persistent workers; sets --jobs)"},
    {"campaign", "gpus", "all|0,1,..",
     "a worker per GPU (--workers-per-gpu N: N), CUDA_VISIBLE_DEVICES set in each; all = CUDA_VISIBLE_DEVICES's "
     "entries, else the driver's GPUs (none: exit 3)"},
    {"campaign", "merge-every", "N",
     "merge DIR/corpus after every N cases (default 20000; also every 600 s and at the end)"},
    {"campaign", "worker-cases", "M",
     "cases one persistent worker serves before it is replaced (0: a fresh child each)"},
    {"campaign", "shard", "I/N", "run shard I of N: its part of the config space and seed stream (from --seed)"},
    {"campaign", "resume", "", "continue the earlier campaign in --out DIR (required when DIR holds one)"},
    {"campaign", "worker-cmd", "\"ARGV...\"", "the command of the --backend worker:NAME (no shell; in-process engine)"},
    {"campaign", "worker-config", "FILE", "a worker config file (command, name, timeout, transport)"},
    {"merge", "quiet", "", "no summary on stdout"},
    {"repro", "backend", "NAME", BACKEND_HELP},
    {"repro", "engine", "NAME", "engine config to run on"},
    {"repro", "deadline", "SEC", "deadline of the run, 1 to 604800 (default 60, GPU backends 300)"},
    {"repro", "plugin-dir", "DIR", "a directory a case's backend = plugin:PATH may load from (repeatable)"},
    {"repro", "worker-cmd", "\"ARGV...\"", "the command of the --backend worker:NAME (no shell)"},
    {"repro", "worker-config", "FILE", "a worker config file (command, name, timeout, transport)"},
    {NULL, NULL, NULL, NULL},
};

const char *af_cli_option_help(const char *verb, const char *option, const char **arg) {
    for (const option_doc *d = option_docs; d->verb; d++)
        if (!strcmp(d->verb, verb) && !strcmp(d->option, option)) {
            if (arg) *arg = d->arg;
            return d->help;
        }
    if (arg) *arg = "";
    return NULL;
}

const af_cli_command *af_cli_find(const char *name) {
    for (const af_cli_command *c = af_cli_commands; c->name; c++)
        if (!strcmp(c->name, name)) return c;
    return NULL;
}

const char *af_cli_closest_command(const char *name) {
    const char *names[64];
    size_t n = 0;
    for (const af_cli_command *c = af_cli_commands; c->name && n < sizeof names / sizeof names[0]; c++)
        names[n++] = c->name;
    return af_suggest(name, names, n);
}

/* Does a long option of c's table have short letter ch as its val? */
static bool short_is_long(const af_cli_command *c, int ch) {
    for (const struct option *o = c->longopts; o && o->name; o++)
        if (o->val == ch && strchr(c->shortopts, ch)) return true;
    return false;
}

static void option_line(FILE *f, const char *verb, const char *shown, const char *key) {
    const char *arg;
    const char *help = af_cli_option_help(verb, key, &arg);
    char left[64];
    snprintf(left, sizeof left, "%s%s%s", shown, arg[0] ? " " : "", arg);
    fprintf(f, "    %-28s %s\n", left, help ? help : "(not documented)");
}

/* The options of one verb: every entry of its getopt_long table, then the short-only
 * letters of its shortopts. */
static void options_of(FILE *f, const af_cli_command *c) {
    for (const struct option *o = c->longopts; o && o->name; o++) {
        char shown[64];
        bool has_short = o->val > 0 && o->val < 128 && strchr(c->shortopts, o->val);
        if (has_short)
            snprintf(shown, sizeof shown, "-%c, --%s", o->val, o->name);
        else
            snprintf(shown, sizeof shown, "--%s", o->name);
        option_line(f, c->name, shown, o->name);
    }
    for (const char *p = c->shortopts; *p; p++) {
        if (*p == ':' || short_is_long(c, *p)) continue;
        char key[3] = {'-', *p, 0};
        option_line(f, c->name, key, key);
    }
}

static void synopsis(FILE *f, const af_cli_command *c) {
    fprintf(f, "attnfuzz %s%s%s%s\n", c->name, c->operands[0] ? " " : "", c->operands,
            (c->longopts && c->longopts[0].name) ? " [OPTIONS]" : "");
}

/* EXIT CODES: the one table of every verb belongs to the isolation work (issue 11, `iso`).
 * This is the single place --help prints it from; replace the body with their table. */
static void exit_codes(FILE *f) { af_cli_print_exit_codes(f); }

void af_cli_help_verb(FILE *f, const af_cli_command *c) {
    fprintf(f, "usage: ");
    synopsis(f, c);
    fprintf(f, "  %s\n", c->summary);
    if (c->longopts && c->longopts[0].name) {
        fprintf(f, "  options:\n");
        options_of(f, c);
    }
    bool listed = false;
    for (const struct option *o = c->longopts; o && o->name; o++) listed |= !strcmp(o->name, "help");
    if (!listed) fprintf(f, "  -h, --help: this help\n");
}

void af_cli_help_all(FILE *f) {
    fprintf(f, "usage: attnfuzz COMMAND [ARGS]   (attnfuzz COMMAND --help: that command alone)\n"
               "       attnfuzz --version        version, git commit, cuDNN and CUDA found here\n\n"
               "Commands:\n");
    for (const af_cli_command *c = af_cli_commands; c->name; c++) {
        fprintf(f, "  ");
        synopsis(f, c);
        fprintf(f, "      %s\n", c->summary);
        options_of(f, c);
    }
    fprintf(f, "\n");
    exit_codes(f);
    fprintf(f, "\nNumbers are strict (--jobs 2x, --time nan are errors, exit 2). ATTNFUZZ_* environment\n"
               "variables: docs/environment.md (an unknown one is warned about).\n");
}

bool af_cli_wants_help(const af_cli_command *c, int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) return false;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return true;
        if (a[0] != '-' || !a[1]) continue;
        /* an option that takes a value in the next argument: skip that value */
        bool takes_value = false;
        if (a[1] == '-') {
            if (strchr(a, '=')) continue;
            for (const struct option *o = c->longopts; o && o->name; o++)
                if (!strcmp(o->name, a + 2)) takes_value = o->has_arg == required_argument;
        } else {
            const char *p = strchr(c->shortopts, a[1]);
            takes_value = p && a[1] != ':' && p[1] == ':' && !a[2];
        }
        if (takes_value) i++;
    }
    return false;
}

/* ---- --version --------------------------------------------------------------------- */

/* "LABEL VERSION from PATH" or "LABEL not found (...)" (util/hostinfo.h). */
static void print_library(FILE *f, const char *label, const af_lib_version *v, bool with_number) {
    if (!v->found)
        fprintf(f, "%-13s %s\n", label, v->why);
    else if (with_number)
        fprintf(f, "%-13s %s (%lld) from %s\n", label, v->version, v->number, v->path);
    else
        fprintf(f, "%-13s %s from %s\n", label, v->version, v->path);
}

void af_cli_version(FILE *f) {
    fprintf(f, "attnfuzz %s\n", af_version());
    fprintf(f, "commit:       %s\n", af_git_commit());
#ifdef ATTNFUZZ_HAVE_CUDA
    fprintf(f, "built with:   CUDA %s (runtime linked statically into the GPU code)\n",
            af_cuda_compiler_version()[0] ? af_cuda_compiler_version() : "(nvcc version unknown)");
#else
    fprintf(f, "built with:   no CUDA (CPU backends only; cudnn needs a CUDA build)\n");
#endif
    af_lib_version v;
    af_lib_version_cudnn(&v);
    print_library(f, "cudnn:", &v, true);
    af_lib_version_cuda_runtime(&v);
    print_library(f, "cuda runtime:", &v, false);
    af_lib_version_cuda_driver(&v);
    print_library(f, "cuda driver:", &v, false);
}
