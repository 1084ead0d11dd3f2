/* test_gpu_workers.c — campaign --gpus below the CLI (campaign/gpus.h, worker_pool.h, stats.h).
 *
 * 1. af_gpus_resolve: ordinal lists (leading zeros name the same GPU), every malformed
 *    list and duplicate refused with the message naming the value; "all" from a set
 *    CUDA_VISIBLE_DEVICES (UUIDs kept as they are), from a driver directory with two
 *    entries, and the no-GPU errors (empty variable, missing or empty directory).
 * 2. Workers on GPUs: a session with gpus {"7", "9"} over a cpu backend behind
 *    AF_BACKEND_NEEDS_GPU whose run() logs "pid CUDA_VISIBLE_DEVICES seed" (it aborts if
 *    the test's own process calls it): a case sent for GPU 1 runs in a worker that sees
 *    9, for GPU 0 in one that sees 7, and r->device says the same; a crash on GPU 1 is a
 *    crash verdict naming device 9 and the next case for GPU 1 runs in a new worker that
 *    sees 9 again (a replaced worker keeps its GPU); a case for any GPU (-1) takes an
 *    idle worker; with worker_cases 0 a fresh child per case gets its GPU too.
 * 3. stats.json: gpus and gpu_cases written and read back; absent (no --gpus) reads as
 *    none; a malformed gpu_cases is an error naming the key. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "campaign/gpus.h"
#include "campaign/session.h"
#include "campaign/stats.h"
#include "campaign/worker_pool.h"
#include "util/check.h"

#define SEED_CRASH 9001

static int parent_pid;
static af_backend *cpu;
static char log_path[300];

/* ---- 1. resolving a --gpus value -------------------------------------------------- */

static void expect_list(const char *text, const char *visible, const char *proc, const char *want) {
    af_gpu_list l;
    char why[512] = "", got[512] = "";
    int rc = af_gpus_resolve(text, visible, proc, &l, why, sizeof why);
    CHECK_MSG(rc == AF_GPUS_OK, "'%s': %s", text, why);
    for (int i = 0; i < l.n; i++) snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? "," : "", l.id[i]);
    CHECK_MSG(!strcmp(got, want), "'%s' (visible %s): got '%s', want '%s'", text, visible ? visible : "unset", got,
              want);
}

static void expect_error(const char *text, const char *visible, const char *proc, int want_rc, const char *msg) {
    af_gpu_list l;
    char why[512] = "";
    int rc = af_gpus_resolve(text, visible, proc, &l, why, sizeof why);
    CHECK_MSG(rc == want_rc, "'%s': rc %d, want %d (%s)", text, rc, want_rc, why);
    CHECK_MSG(strstr(why, msg) != NULL, "'%s': message '%s' lacks '%s'", text, why, msg);
    CHECK_MSG(strchr(why, '\n') == NULL, "'%s': message is not one line", text);
}

static void resolving(const char *dir) {
    char proc[400], missing[400], empty[400], path[500];
    snprintf(proc, sizeof proc, "%s/gpus", dir);
    snprintf(missing, sizeof missing, "%s/no-such-dir", dir);
    snprintf(empty, sizeof empty, "%s/empty", dir);
    CHECK(mkdir(proc, 0700) == 0 && mkdir(empty, 0700) == 0);
    const char *bus[2] = {"0000:1b:00.0", "0000:43:00.0"}; /* the driver names entries by PCI bus id */
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", proc, bus[i]);
        CHECK(mkdir(path, 0700) == 0);
    }
    expect_list("0", NULL, missing, "0");
    expect_list("0,1,3", NULL, missing, "0,1,3");
    expect_list("3,007", NULL, missing, "3,7");
    expect_list("all", "3,5", missing, "3,5");
    expect_list("all", "GPU-8f6c2d1e,MIG-1a2b", missing, "GPU-8f6c2d1e,MIG-1a2b");
    expect_list("all", NULL, proc, "0,1");
    expect_list("0", "3,5", proc, "0"); /* a list is taken as given */
    const char *bad[] = {"0,x", "", ",", "0,", ",1", "0,,1", "-1", "1.5", " 1", "all,0", "ALL", "1234567"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char msg[64];
        snprintf(msg, sizeof msg, "--gpus: '%s' is not a list of GPU ordinals", bad[i]);
        expect_error(bad[i], NULL, proc, AF_GPUS_BAD_LIST, msg);
    }
    expect_error("0,1,0", NULL, proc, AF_GPUS_BAD_LIST, "--gpus: GPU '0' is listed twice in '0,1,0'");
    expect_error("2,02", NULL, proc, AF_GPUS_BAD_LIST, "GPU '2' is listed twice");
    expect_error("all", "3,3", proc, AF_GPUS_BAD_LIST, "GPU '3' is listed twice in CUDA_VISIBLE_DEVICES='3,3'");
    expect_error("all", "", proc, AF_GPUS_NONE, "CUDA_VISIBLE_DEVICES is set and empty");
    expect_error("all", NULL, missing, AF_GPUS_NONE, "no GPU found (CUDA_VISIBLE_DEVICES is unset and");
    expect_error("all", NULL, missing, AF_GPUS_NONE, "does not exist");
    expect_error("all", NULL, empty, AF_GPUS_NONE, "is empty");
    af_gpu_list l;
    char why[256];
    CHECK(af_gpus_resolve("4,6", NULL, missing, &l, why, sizeof why) == AF_GPUS_OK);
    CHECK(af_gpus_find(&l, "6") == 1 && af_gpus_find(&l, "4") == 0 && af_gpus_find(&l, "5") == -1);
    CHECK(af_gpus_find(NULL, "4") == -1);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", proc, bus[i]);
        rmdir(path);
    }
    rmdir(proc);
    rmdir(empty);
    printf("resolving: lists, 12 malformed lists, duplicates, all (variable, driver directory), no GPU\n");
}

/* ---- 2. workers on their GPUs ------------------------------------------------------ */

static void guard(const char *what) {
    if ((int)getpid() == parent_pid) {
        fprintf(stderr, "FAIL: device-logging backend: %s() called in the parent process\n", what);
        abort();
    }
}

static int logging_available(af_backend *be, char *why, size_t cap) {
    (void)be;
    guard("available");
    return cpu->available(cpu, why, cap);
}

static af_run_status logging_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    (void)be;
    guard("supports");
    return cpu->supports(cpu, c, why, cap);
}

static af_run_status logging_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                                 char *why, size_t cap) {
    (void)be;
    guard("run");
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    FILE *f = fopen(log_path, "a");
    if (f) {
        fprintf(f, "%d %s %llu\n", (int)getpid(), visible ? visible : "(unset)", (unsigned long long)c->seed);
        fclose(f);
    }
    if (c->seed == SEED_CRASH) abort();
    return cpu->run(cpu, c, engine, t, info, why, cap);
}

/* The log's line for seed: the process that ran it and the CUDA_VISIBLE_DEVICES it had. */
static bool logged(uint64_t seed, int *pid, char *visible, size_t cap) {
    FILE *f = fopen(log_path, "r");
    if (!f) return false;
    int p;
    char v[128];
    unsigned long long s;
    bool found = false;
    while (!found && fscanf(f, "%d %127s %llu", &p, v, &s) == 3)
        if (s == seed) {
            *pid = p;
            snprintf(visible, cap, "%s", v);
            found = true;
        }
    fclose(f);
    return found;
}

/* Run case seed for GPU device (-1 any) and wait for it. */
static void run_on(af_session *s, int device, uint64_t seed, af_session_result *r) {
    af_case c;
    af_case_defaults(&c);
    c.seqlen_q = c.seqlen_kv = 16;
    c.head_dim_qk = c.head_dim_v = 16;
    c.seed = seed;
    af_child slot;
    memset(&slot, 0, sizeof slot);
    slot.result = r;
    slot.device = device;
    CHECK(af_child_start(s, &slot, &c, AF_STORE_NONE, 60) == 0);
    while (slot.proc.pid && af_child_wait_any(s, &slot, 1, 1000) < 0) {}
}

/* Case seed ran in a worker that saw want, and its result says so. Returns the pid. */
static int expect_device(const af_session_result *r, uint64_t seed, const char *want) {
    int pid = 0;
    char visible[128] = "";
    CHECK_MSG(logged(seed, &pid, visible, sizeof visible), "case %llu not logged", (unsigned long long)seed);
    CHECK_MSG(!strcmp(visible, want), "case %llu: CUDA_VISIBLE_DEVICES=%s in its worker, want %s",
              (unsigned long long)seed, visible, want);
    CHECK_MSG(!strcmp(r->device, want), "case %llu: result device '%s', want '%s'", (unsigned long long)seed, r->device,
              want);
    CHECK(pid != parent_pid);
    return pid;
}

static void workers_on_gpus(af_backend *be, af_session_result *r) {
    af_gpu_list gpus;
    char why[512];
    CHECK(af_gpus_resolve("7,9", NULL, "/nonexistent", &gpus, why, sizeof why) == AF_GPUS_OK);
    af_session s;
    CHECK_MSG(af_session_open_ex(&s, NULL, be, "", "", AF_SESSION_NO_LIMITS, why, sizeof why) == 0, "%s", why);
    CHECK(s.isolated && s.worker_cases > 0);
    s.gpus = &gpus;

    run_on(&s, 1, 100, r);
    CHECK_MSG(r->status == AF_CASE_RAN && r->verdict.kind == AF_V_PASS, "case on GPU 1: %s", r->why);
    int on9 = expect_device(r, 100, "9");
    run_on(&s, 0, 101, r);
    int on7 = expect_device(r, 101, "7");
    CHECK(on7 != on9);
    run_on(&s, 1, 102, r);
    CHECK_MSG(expect_device(r, 102, "9") == on9, "GPU 1's idle worker not reused");

    run_on(&s, 1, SEED_CRASH, r); /* the worker of GPU 9 dies */
    CHECK_MSG(r->status == AF_CASE_CRASHED && r->verdict.kind == AF_V_CRASH, "crash: status %d", (int)r->status);
    CHECK_MSG(!strcmp(r->device, "9") && !strcmp(r->verdict.info.device, "9"), "crash names device '%s' / '%s'",
              r->device, r->verdict.info.device);
    run_on(&s, 1, 103, r);
    int replaced = expect_device(r, 103, "9");
    CHECK_MSG(replaced != on9 && replaced != on7, "after the crash GPU 1's case ran in pid %d (old %d, GPU 0's %d)",
              replaced, on9, on7);

    s.isolated_device = -1;
    af_case c;
    af_case_defaults(&c);
    c.seqlen_q = c.seqlen_kv = 16;
    c.head_dim_qk = c.head_dim_v = 16;
    c.seed = 104;
    af_session_run_isolated(&s, &c, AF_STORE_NONE, NULL, 60, r);
    int pid = 0;
    char visible[128];
    CHECK(logged(104, &pid, visible, sizeof visible));
    CHECK_MSG(pid == on7 || pid == replaced, "a case for any GPU forked pid %d instead of taking an idle worker", pid);
    s.isolated_device = 1; /* a minimisation on GPU 1 */
    c.seed = 105;
    af_session_run_isolated(&s, &c, AF_STORE_NONE, NULL, 60, r);
    CHECK(expect_device(r, 105, "9") == replaced);
    long long started = s.pool->started;
    CHECK_MSG(started == 3, "%lld workers started, want 3 (GPU 0, GPU 1, GPU 1 after the crash)", started);

    s.worker_cases = 0; /* fresh children: each gets its GPU as well */
    af_pool_free(s.pool);
    s.pool = NULL;
    run_on(&s, 0, 106, r);
    int fresh = expect_device(r, 106, "7");
    run_on(&s, 1, 107, r);
    CHECK(expect_device(r, 107, "9") != fresh);
    af_session_close(&s);
    printf("workers: GPU 0 -> pid %d (7), GPU 1 -> pid %d (9), after a crash pid %d (9); fresh children too\n", on7,
           on9, replaced);
}

/* ---- 3. stats.json ----------------------------------------------------------------- */

static void stats_round_trip(const char *dir) {
    af_campaign_stats *st = calloc(1, sizeof *st), *back = calloc(1, sizeof *back);
    CHECK(st && back);
    snprintf(st->backend, sizeof st->backend, "cpu");
    st->mode = "inprocess";
    st->cases = 12;
    char why[512];
    CHECK(af_stats_write(dir, st, NULL, 0) == 0);
    CHECK_MSG(af_stats_read(dir, back, why, sizeof why) == 0, "%s", why);
    CHECK_MSG(back->n_gpus == 0, "no --gpus: %d GPUs read back", back->n_gpus);

    af_stats_note_gpu(st, "3", 0);
    af_stats_note_gpu(st, "5", 0);
    af_stats_note_gpu(st, "5", 7);
    af_stats_note_gpu(st, "3", 5);
    CHECK(st->n_gpus == 2 && st->gpu_cases[0] == 5 && st->gpu_cases[1] == 7);
    CHECK(af_stats_write(dir, st, NULL, 0) == 0);
    CHECK_MSG(af_stats_read(dir, back, why, sizeof why) == 0, "%s", why);
    CHECK(back->n_gpus == 2 && !strcmp(back->gpus[0], "3") && !strcmp(back->gpus[1], "5"));
    CHECK(back->gpu_cases[0] == 5 && back->gpu_cases[1] == 7);

    /* a gpu_cases without an entry of the list: malformed */
    static char text[1 << 16];
    char path[500];
    snprintf(path, sizeof path, "%s/stats.json", dir);
    FILE *f = fopen(path, "r");
    CHECK(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *key = strstr(text, "\"5\": 7");
    CHECK_MSG(key != NULL, "stats.json lacks \"5\": 7");
    memcpy(key, "\"6\"", 3);
    f = fopen(path, "w");
    CHECK(f && fwrite(text, 1, n, f) == n);
    fclose(f);
    CHECK(af_stats_read(dir, back, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "'gpus' / 'gpu_cases'") != NULL, "why: %s", why);
    remove(path);
    snprintf(path, sizeof path, "%s/config_cells.bin", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/fuzzer_stats", dir);
    remove(path);
    free(st);
    free(back);
    printf("stats.json: gpus and gpu_cases round trip; absent = none; malformed = error (%s)\n", why);
}

int main(void) {
    parent_pid = (int)getpid();
    cpu = af_backend_cpu_new();
    char dir[] = "/tmp/af_test_gpu_workers_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(log_path, sizeof log_path, "%s/runs.log", dir);
    af_backend be;
    memset(&be, 0, sizeof be);
    be.name = "test:device-logging";
    be.description = "cpu backend behind NEEDS_GPU; logs each run's CUDA_VISIBLE_DEVICES; planted crash";
    be.flags = AF_BACKEND_NEEDS_GPU | AF_BACKEND_DETERMINISTIC;
    be.available = logging_available;
    be.supports = logging_supports;
    be.run = logging_run;
    af_session_result *r = malloc(sizeof *r);
    CHECK(r != NULL);

    resolving(dir);
    workers_on_gpus(&be, r);
    stats_round_trip(dir);

    free(r);
    remove(log_path);
    rmdir(dir);
    cpu->destroy(cpu);
    CHECK_DONE("test_gpu_workers");
}
