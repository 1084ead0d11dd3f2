/* cli_libgate.c — `attnfuzz gate --base-lib PATH --head-lib PATH --backend B`: one
 * backend under two builds of its library (issue 15 item 6), e.g. cuDNN 9.14 against 9.19.
 *
 * The same fuzzed cases (harness/fuzz decoder, deterministic in --seed) run in two worker
 * processes at once, `attnfuzz run --json` of this executable, one per library:
 *   --backend cudnn   both run backend cudnn (every engine: --engine all) with
 *                     LD_LIBRARY_PATH = the folder of PATH (a libcudnn.so.9) first: the
 *                     cudnn backend dlopens "libcudnn.so.9" at run time (cudnn_api.c), and
 *                     cuDNN its sub-libraries beside it, so the folder decides the build;
 *   --backend plugin  each side runs plugin:PATH (its library is the plugin itself): two
 *                     builds of one plugin, the CPU stand-in for two library versions.
 * Cases go in batches of AF_LIBGATE_BATCH (DIR/cases/), until --time. A case whose verdict
 * (pass, finding kind, declined) or set of engines differs between the two sides is a
 * change; DIR/libgate.json lists every change with both sides' verdicts, DIR/base.jsonl and
 * DIR/head.jsonl keep the workers' raw lines. Before fuzzing, each side runs one small
 * case: a backend that is not usable there (no GPU, no such library) stops the gate
 * with its reason (exit 3), never a silent pass; for cudnn each side must also really load
 * its own libcudnn.so.9 (the path `attnfuzz engines` reports), never another build. Exit 0 when nothing changed, 1 when
 * something did. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "fuzz/fuzz.h"
#include "util/fsutil.h"
#include "util/json.h"
#include "util/clock.h"
#include "util/proc.h"

#define AF_LIBGATE_BATCH 32
#define LIBGATE_MAX_ENG  64

typedef struct {
    const char *lib;
    char backend[PATH_MAX + 16];
    char env_path[PATH_MAX + 32];
    char out[PATH_MAX];
} lib_side;

/* A side's child setup (util/proc.h): stdout to its file (appended, or truncated), the
 * side's LD_LIBRARY_PATH. */
typedef struct {
    const char *out;
    const char *mode;
    const char *env_path;
} side_setup;

static int setup_child(void *user) {
    const side_setup *ss = user;
    FILE *f = fopen(ss->out, ss->mode);
    if (!f || dup2(fileno(f), 1) < 0) return -1;
    if (ss->env_path[0]) putenv((char *)ss->env_path);
    return 0;
}

/* Start self with argv under ss: its own process group, dead with the gate. */
static int start_child(af_proc *proc, const char *self, char **argv, side_setup *ss) {
    af_proc_opts po;
    memset(&po, 0, sizeof po);
    po.path = self;
    po.argv = argv;
    po.setup = setup_child;
    po.setup_user = ss;
    return af_proc_start(proc, &po);
}

/* Start `attnfuzz run --json` of cases[0..n) on side sd, stdout appended to sd->out. */
static int start_side(af_proc *proc, const char *self, const lib_side *sd, const char *engine, char **cases, int n) {
    char **argv = calloc((size_t)n + 9, sizeof *argv);
    if (!argv) return -1;
    int k = 0;
    argv[k++] = (char *)self;
    argv[k++] = "run";
    argv[k++] = "--json";
    argv[k++] = "--backend";
    argv[k++] = (char *)sd->backend;
    if (engine[0]) {
        argv[k++] = "--engine";
        argv[k++] = (char *)engine;
    }
    for (int i = 0; i < n; i++) argv[k++] = cases[i];
    side_setup ss = {sd->out, "a", sd->env_path};
    int rc = start_child(proc, self, argv, &ss);
    free(argv);
    return rc;
}

/* The verdict of each engine of one case, from one side's JSON lines. */
typedef struct {
    int n;
    char engine[LIBGATE_MAX_ENG][AF_NAME_MAX];
    char verdict[LIBGATE_MAX_ENG][48];
    char reason[256]; /* the first decline's reason */
} side_result;

static int read_side(const char *path, const char *case_path, side_result *r) {
    memset(r, 0, sizeof *r);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *j = json_loads(line, 0, NULL);
        if (!j) continue;
        const char *c = json_string_value(json_object_get(j, "case"));
        if (c && !strcmp(c, case_path) && r->n < LIBGATE_MAX_ENG) {
            const char *e = json_string_value(json_object_get(j, "engine"));
            const char *v = json_string_value(json_object_get(j, "verdict"));
            const char *why = json_string_value(json_object_get(j, "reason"));
            snprintf(r->engine[r->n], AF_NAME_MAX, "%s", e ? e : "");
            snprintf(r->verdict[r->n], sizeof r->verdict[0], "%s", v ? v : "?");
            if (why && !r->reason[0]) snprintf(r->reason, sizeof r->reason, "%s", why);
            r->n++;
        }
        json_decref(j);
    }
    free(line);
    fclose(f);
    return 0;
}

static json_t *side_json(const side_result *r) {
    json_t *o = json_object();
    for (int i = 0; i < r->n; i++)
        json_object_set_new(o, r->engine[i][0] ? r->engine[i] : "(default)", json_string(r->verdict[i]));
    return o;
}

/* Same engines with the same verdicts (order free)? */
static bool same_result(const side_result *a, const side_result *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++) {
        bool found = false;
        for (int j = 0; j < b->n && !found; j++)
            found = !strcmp(a->engine[i], b->engine[j]) && !strcmp(a->verdict[i], b->verdict[j]);
        if (!found) return false;
    }
    return true;
}

static int setup_side(lib_side *sd, const char *lib, const char *backend, const char *dir, const char *name) {
    memset(sd, 0, sizeof *sd);
    sd->lib = lib;
    struct stat st;
    if (stat(lib, &st) || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "attnfuzz gate: --%s-lib: %s: %s\n", name, lib, errno ? strerror(errno) : "not a regular file");
        return AF_EXIT_BAD_FILE;
    }
    char abs[PATH_MAX];
    if (!realpath(lib, abs)) snprintf(abs, sizeof abs, "%s", lib);
    if (!strcmp(backend, "plugin"))
        snprintf(sd->backend, sizeof sd->backend, "plugin:%s", abs);
    else {
        snprintf(sd->backend, sizeof sd->backend, "%s", backend);
        const char *base = strrchr(lib, '/');
        if (strcmp(base ? base + 1 : lib, "libcudnn.so.9")) {
            fprintf(stderr,
                    "attnfuzz gate: --%s-lib %s: name the libcudnn.so.9 of a cuDNN build (its folder goes "
                    "first on LD_LIBRARY_PATH)\n",
                    name, lib);
            return AF_EXIT_USAGE;
        }
        char folder[PATH_MAX];
        snprintf(folder, sizeof folder, "%s", abs);
        char *slash = strrchr(folder, '/');
        if (slash) *slash = 0;
        const char *old = getenv("LD_LIBRARY_PATH");
        snprintf(sd->env_path, sizeof sd->env_path, "LD_LIBRARY_PATH=%s%s%s", folder, old && old[0] ? ":" : "",
                 old ? old : "");
    }
    snprintf(sd->out, sizeof sd->out, "%s/%s.jsonl", dir, name);
    return 0;
}

/* cudnn: which libcudnn a worker of side sd really loads: `attnfuzz engines CASE` under the
 * side's environment prints "# cuDNN 9.19.0 (/path/libcudnn.so.9), ..." first. 0 when that
 * path is the side's library; else -1 with why (a dlopen that found another build is the
 * silent-fallback class: both sides would test one library). */
static int check_loaded(const char *self, const lib_side *sd, const char *probe, const char *dir, int side, char *why,
                        size_t cap) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s.engines.txt", dir, side ? "head" : "base");
    char *argv[] = {(char *)self, "engines", (char *)probe, NULL};
    side_setup ss = {path, "w", sd->env_path};
    af_proc proc;
    if (start_child(&proc, self, argv, &ss)) {
        snprintf(why, cap, "cannot run attnfuzz engines");
        return -1;
    }
    af_proc_wait(&proc);
    char line[1024] = "";
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(line, sizeof line, f)) line[0] = 0;
        fclose(f);
    }
    line[strcspn(line, "\n")] = 0;
    /* dlopen reports the name it found on LD_LIBRARY_PATH: the side's folder (the one put
     * first, from the library's real path) + "/libcudnn.so.9" */
    char want[PATH_MAX + 32];
    snprintf(want, sizeof want, "(%s/libcudnn.so.9)", sd->env_path + strlen("LD_LIBRARY_PATH="));
    char *colon = strchr(want, ':');
    if (colon) snprintf(colon, sizeof want - (size_t)(colon - want), "/libcudnn.so.9)");
    if (strncmp(line, "# cuDNN ", 8) || !strstr(line, want)) {
        snprintf(why, cap, "a worker with %s loads another library: '%s' (see %s)", sd->env_path, line, path);
        return -1;
    }
    return 0;
}

static int run_both(const char *self, lib_side *sides, const char *engine, char **cases, int n) {
    af_proc procs[2];
    bool started[2];
    for (int s = 0; s < 2; s++) started[s] = start_side(&procs[s], self, &sides[s], engine, cases, n) == 0;
    for (int s = 0; s < 2; s++)
        if (started[s]) af_proc_wait(&procs[s]);
    int worst = 0;
    for (int s = 0; s < 2; s++) {
        if (!started[s]) return -1;
        int status = procs[s].wait_status;
        int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (rc != AF_EXIT_PASS && rc != AF_EXIT_FINDING && rc != AF_EXIT_DECLINED) worst = rc;
    }
    return worst;
}

int af_cli_gate_libs(const char *base_lib, const char *head_lib, const char *backend, double time_s,
                     const char *out_dir, uint64_t seed, double max_work) {
    if (strcmp(backend, "cudnn") && strcmp(backend, "plugin")) {
        fprintf(stderr, "attnfuzz gate: --backend %s: a library gate takes cudnn or plugin\n", backend);
        return AF_EXIT_USAGE;
    }
    char why[1024], self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "attnfuzz gate: cannot find this executable (/proc/self/exe)\n");
        return AF_EXIT_ERROR;
    }
    self[len] = 0;
    char cases_dir[PATH_MAX];
    snprintf(cases_dir, sizeof cases_dir, "%s/cases", out_dir);
    if (af_mkdirs(cases_dir, why, sizeof why)) {
        fprintf(stderr, "attnfuzz gate: %s\n", why);
        return AF_EXIT_ERROR;
    }
    lib_side sides[2];
    int rc = setup_side(&sides[0], base_lib, backend, out_dir, "base");
    if (!rc) rc = setup_side(&sides[1], head_lib, backend, out_dir, "head");
    if (rc) return rc;
    for (int s = 0; s < 2; s++) unlink(sides[s].out);
    const char *engine = strcmp(backend, "cudnn") ? "" : "all";

    /* preflight: one small case on each side; a side that cannot serve it stops the gate */
    char probe[PATH_MAX + 16];
    snprintf(probe, sizeof probe, "%s/preflight.case", cases_dir);
    af_case pc;
    af_error e;
    af_case_parse("dtype = fp16\nbatch = 1\nheads = 1\nseqlen = 16\nhead_dim = 64\n", "preflight", &pc, &e);
    char *probe_list[1] = {probe};
    if (af_case_save(&pc, probe) || run_both(self, sides, engine, probe_list, 1) < 0) {
        fprintf(stderr, "attnfuzz gate: cannot run the preflight case in %s\n", cases_dir);
        return AF_EXIT_ERROR;
    }
    for (int s = 0; s < 2; s++) {
        side_result r;
        read_side(sides[s].out, probe, &r);
        bool usable = false;
        for (int i = 0; i < r.n; i++) usable |= strcmp(r.verdict[i], "declined") != 0;
        if (!usable) {
            fprintf(stderr, "attnfuzz gate: %s is not usable with --%s-lib %s: %s\n", backend, s ? "head" : "base",
                    sides[s].lib, r.n ? r.reason : "its worker printed no verdict");
            return AF_EXIT_DECLINED;
        }
        if (!strcmp(backend, "cudnn") && check_loaded(self, &sides[s], probe, out_dir, s, why, sizeof why)) {
            fprintf(stderr, "attnfuzz gate: --%s-lib %s: %s\n", s ? "head" : "base", sides[s].lib, why);
            return AF_EXIT_DECLINED;
        }
    }

    af_fuzz_limits lim;
    af_fuzz_limits_default(&lim);
    af_fuzz_limits_set_work(&lim, max_work > 0 ? max_work : 1 << 18);
    lim.max_cp = 1;
    uint64_t rng = seed ? seed : 1;
    json_t *changes = json_array();
    long long examined = 0, changed = 0;
    double t0 = af_clock_mono();
    char(*paths)[PATH_MAX + 32] = calloc(AF_LIBGATE_BATCH, sizeof *paths);
    char *list[AF_LIBGATE_BATCH];
    side_result *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    int status = 0;
    if (!paths || !a || !b) status = -1;
    while (status == 0 && af_clock_mono() - t0 < time_s) {
        for (int i = 0; i < AF_LIBGATE_BATCH; i++) {
            uint8_t bytes[160];
            size_t n = 8 + af_fuzz_rand(&rng) % (sizeof bytes - 8);
            for (size_t k = 0; k < n; k++) bytes[k] = (uint8_t)af_fuzz_rand(&rng);
            af_case c;
            af_fuzz_decode(bytes, n, &lim, &c);
            c.backend[0] = c.engine[0] = 0;
            snprintf(paths[i], sizeof paths[i], "%s/%06lld.case", cases_dir, examined + i);
            list[i] = paths[i];
            if (af_case_save(&c, paths[i])) status = -1;
            af_case back;
            if (status == 0 && af_case_load(paths[i], &back, &e)) { /* a print that does not parse back */
                fprintf(stderr, "attnfuzz gate: skipped a fuzzed case that does not read back: %s\n", e.message);
                unlink(paths[i]);
                i--;
            }
        }
        if (status || run_both(self, sides, engine, list, AF_LIBGATE_BATCH) < 0) {
            status = -1;
            break;
        }
        for (int i = 0; i < AF_LIBGATE_BATCH; i++) {
            read_side(sides[0].out, paths[i], a);
            read_side(sides[1].out, paths[i], b);
            examined++;
            if (same_result(a, b)) continue;
            changed++;
            json_array_append_new(
                changes, json_pack("{s:s,s:o,s:o}", "case", paths[i], "base", side_json(a), "head", side_json(b)));
            fprintf(stderr, "attnfuzz gate: %s: verdict or engines changed\n", paths[i]);
        }
    }
    free(paths), free(a), free(b);
    if (status) {
        json_decref(changes);
        fprintf(stderr, "attnfuzz gate: could not write or run a batch in %s\n", cases_dir);
        return AF_EXIT_ERROR;
    }
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:f,s:o}", "backend", backend, "base_lib", base_lib, "head_lib",
                          head_lib, "base_backend", sides[0].backend, "head_backend", sides[1].backend, "examined",
                          (json_int_t)examined, "changed", (json_int_t)changed, "elapsed_s", af_clock_mono() - t0,
                          "changes", changes);
    char *text = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
    json_decref(j);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/libgate.json", out_dir);
    int wrc = text ? af_write_file_atomic(path, text, strlen(text), why, sizeof why) : -1;
    free(text);
    if (wrc) {
        fprintf(stderr, "attnfuzz gate: %s\n", why);
        return AF_EXIT_ERROR;
    }
    printf("library gate %s: %s against %s, examined %lld cases, %lld changed; %s\n", changed ? "CHANGED" : "same",
           head_lib, base_lib, examined, changed, path);
    return changed ? AF_EXIT_FINDING : AF_EXIT_PASS;
}
