/* test_campaign_gpu.c — a GPU backend is never called in the process that forks.
 *
 * CUDA does not survive fork(): if the campaign parent initialised the device, every
 * forked child that runs a case would fail. The fake backend here is flagged
 * AF_BACKEND_NEEDS_GPU and aborts when any of its functions runs in the test's own
 * process (pid recorded at start). It wraps the cpu backend, declines backward and cp
 * (so the limits probed in a child are visible in the parent), and carries a bug: O
 * is off by 0.25 whenever a left window is set.
 *
 * Checked: session open (availability + limits probed in a child), isolated runs,
 * a refused in-parent run, an unavailable and a crashing probe, the per-case default
 * deadline (300 s for GPU backends), and a whole in-process campaign (fuzzing,
 * minimisation of each raw signature, storing, reports) with that backend.
 */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "campaign/campaign.h"
#include "campaign/session.h"
#include "util/check.h"
#include "campaign/stats.h"
#include <jansson.h>

static int parent_pid;
static af_backend *cpu;
static enum { FAKE_OK, FAKE_UNAVAILABLE, FAKE_PROBE_CRASH } fake_mode;

static void guard(const char *what) {
    if ((int)getpid() == parent_pid) {
        fprintf(stderr, "FAIL: fake GPU backend: %s() called in the parent process (pid %d)\n", what, parent_pid);
        abort();
    }
}

static int fake_available(af_backend *be, char *why, size_t cap) {
    (void)be;
    guard("available");
    if (fake_mode == FAKE_UNAVAILABLE) {
        snprintf(why, cap, "fake GPU: no device");
        return -1;
    }
    if (fake_mode == FAKE_PROBE_CRASH) raise(SIGSEGV);
    return cpu->available(cpu, why, cap);
}

static af_run_status fake_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    (void)be;
    guard("supports");
    if (c->backward || c->cp_size > 1) {
        snprintf(why, cap, "fake GPU: forward only, no cp");
        return AF_RUN_DECLINED;
    }
    return cpu->supports(cpu, c, why, cap);
}

static af_run_status fake_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                              char *why, size_t cap) {
    (void)be;
    guard("run");
    af_run_status st = fake_supports(be, c, why, cap);
    if (st != AF_RUN_OK) return st;
    st = cpu->run(cpu, c, engine, t, info, why, cap);
    if (st != AF_RUN_OK || c->window_left < 0) return st;
    const af_tensor_view *o = &t->plan.view[AF_T_O];
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads_q; h++)
            for (int s = 0; s < af_case_len_q(c, b); s++)
                for (int d = 0; d < c->head_dim_v; d++) {
                    int64_t off = af_layout_offset(&t->plan, AF_T_O, b, h, s, d);
                    float x = (float)af_storage_load(o->storage, t->buf[o->buffer], off);
                    af_storage_store(o->storage, t->buf[o->buffer], off, x + 0.25f);
                }
    return st;
}

/* A sticky CUDA error: engine "crash" faults; after it, every CUDA call of the process
 * would fail, so engine "after" would report a crash of its own if run (the H200
 * campaign blamed eng2 for eng1_k24=3's misaligned address this way). "after" leaves a
 * marker file when it runs, so the test sees whether the session ran it. */
static bool sticky_crash_first = true;
static char sticky_marker[300];

static int sticky_engines(af_backend *be, const af_case *c, char (*names)[AF_NAME_MAX], int cap, char *why,
                          size_t why_cap) {
    (void)be, (void)c, (void)cap, (void)why, (void)why_cap;
    guard("engines");
    snprintf(names[0], AF_NAME_MAX, "%s", sticky_crash_first ? "crash" : "after");
    snprintf(names[1], AF_NAME_MAX, "%s", sticky_crash_first ? "after" : "crash");
    return 2;
}

static af_run_status sticky_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                                char *why, size_t cap) {
    static bool crashed = false; /* per process: each case runs in its own child */
    guard("run");
    if (!strcmp(engine, "crash")) {
        crashed = true;
        snprintf(why, cap, "fake GPU: misaligned address");
        return AF_RUN_CRASH;
    }
    FILE *f = fopen(sticky_marker, "w");
    if (f) fclose(f);
    if (crashed) {
        snprintf(why, cap, "cudaMalloc: fake sticky error");
        return AF_RUN_CRASH;
    }
    return fake_run(be, c, engine, t, info, why, cap);
}

static void sticky_context(af_backend *fake) {
    af_backend sticky = *fake;
    sticky.engines = sticky_engines;
    sticky.run = sticky_run;
    char dir[] = "/tmp/af_test_sticky_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(sticky_marker, sizeof sticky_marker, "%s/after-ran", dir);
    af_session s;
    char why[512];
    CHECK_MSG(af_session_open_ex(&s, NULL, &sticky, "all", "", 0, why, sizeof why) == 0, "%s", why);
    af_case c;
    af_case_defaults(&c);
    af_session_result *r = malloc(sizeof *r);
    CHECK(r != NULL);
    /* control: "after" first runs (marker written) and passes */
    sticky_crash_first = false;
    af_session_run_isolated(&s, &c, AF_STORE_NONE, NULL, 60, r);
    CHECK(access(sticky_marker, F_OK) == 0);
    CHECK_MSG(r->status == AF_CASE_RAN && r->verdict.kind == AF_V_CRASH && !strcmp(r->verdict.info.engine, "crash"),
              "control: kind %s engine %s", af_verdict_name(r->verdict.kind), r->verdict.info.engine);
    remove(sticky_marker);
    /* "crash" first: "after" is not run in that process, so it cannot be blamed */
    sticky_crash_first = true;
    af_session_run_isolated(&s, &c, AF_STORE_NONE, NULL, 60, r);
    CHECK_MSG(access(sticky_marker, F_OK) != 0, "engine 'after' ran after a sticky crash in the same process");
    CHECK(r->status == AF_CASE_RAN && r->verdict.kind == AF_V_CRASH && !strcmp(r->verdict.info.engine, "crash"));
    printf("sticky crash: later engine not run; verdict %s [%s]\n", af_verdict_name(r->verdict.kind),
           r->verdict.info.engine);
    free(r);
    af_session_close(&s);
    rmdir(dir);
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Every bucket is a face of the fake bug (O + 0.25 whenever a left window is set): a
 * finding in O of the fake backend, in a class with a left window. The kind varies: a
 * mismatch in visible rows, convention in fully masked rows, feature_ignored when O + 0.25
 * happens to equal the unwindowed O, inert when the offset absorbs a small move. Without
 * a window the fake is the cpu backend, which has no findings. Returns the number of buckets checked. */
static int check_bucket_kinds(const char *findings) {
    DIR *d = opendir(findings);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1024], buf[16384];
        snprintf(path, sizeof path, "%s/%s/verdict.json", findings, e->d_name);
        FILE *f = fopen(path, "r");
        CHECK_MSG(f != NULL, "%s missing", path);
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = 0;
        const char *sig = strstr(buf, "\"signature\":\"");
        CHECK_MSG(sig != NULL, "%s: no signature", path);
        const char *kind_end = strchr(sig + 13, '|');
        CHECK_MSG(kind_end && strncmp(kind_end, "|test:fake_gpu|O|", 17) == 0, "%s: not a finding of the fake in O",
                  path);
        CHECK_MSG(strstr(buf, "win(L") != NULL, "%s: class without the left window", path);
        n++;
    }
    closedir(d);
    return n;
}

int main(void) {
    parent_pid = (int)getpid();
    cpu = af_backend_cpu_new();
    af_backend fake;
    memset(&fake, 0, sizeof fake);
    fake.name = "test:fake_gpu";
    fake.description = "cpu backend behind a NEEDS_GPU flag; aborts when called in the parent";
    fake.flags = AF_BACKEND_NEEDS_GPU | AF_BACKEND_DETERMINISTIC;
    fake.available = fake_available;
    fake.supports = fake_supports;
    fake.run = fake_run;

    /* 1. open: availability and limits come from a child */
    af_session s;
    char why[512];
    CHECK_MSG(af_session_open_ex(&s, NULL, &fake, "", "", 0, why, sizeof why) == 0, "%s", why);
    CHECK(s.isolated);
    CHECK(s.default_deadline_s == AF_DEADLINE_GPU_S);
    CHECK(!s.limits.backward); /* declined in the child, seen here */
    CHECK(s.limits.max_cp == 1);
    CHECK(strcmp(s.backend_name, "test:fake_gpu") == 0);

    /* 2. a run in this process is refused, isolated runs work */
    af_case c;
    af_case_defaults(&c);
    af_session_result *r = malloc(sizeof *r);
    CHECK(r != NULL);
    af_session_run(&s, &c, AF_STORE_NONE, NULL, r);
    CHECK(r->status == AF_CASE_NOT_RUN && strstr(r->why, "forked children only"));
    af_session_run_isolated(&s, &c, AF_STORE_NONE, NULL, 60, r);
    CHECK_MSG(r->status == AF_CASE_RAN && r->verdict.kind == AF_V_PASS, "status %d kind %s %s", (int)r->status,
              af_verdict_name(r->verdict.kind), r->why);
    c.window_left = 3;
    af_session_run_isolated(&s, &c, AF_STORE_NONE, NULL, 60, r);
    CHECK(r->status == AF_CASE_RAN && r->verdict.n_findings > 0 && r->verdict.kind == AF_V_MISMATCH);
    af_session_close(&s);

    /* 2b. a sticky crash: the later engines of that process are not run */
    sticky_context(&fake);

    /* 3. an unavailable backend and a probe that crashes: open fails with why */
    fake_mode = FAKE_UNAVAILABLE;
    CHECK(af_session_open_ex(&s, NULL, &fake, "", "", 0, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "fake GPU: no device") != NULL, "%s", why);
    fake_mode = FAKE_PROBE_CRASH;
    CHECK(af_session_open_ex(&s, NULL, &fake, "", "", AF_SESSION_NO_LIMITS, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "signal") != NULL, "%s", why);
    printf("crashing probe: %s\n", why);
    fake_mode = FAKE_OK;

    /* 4. a whole campaign: fuzzing, minimisation, storing, reports; the backend only
     * ever runs in children (an abort here would end the test) */
    char dir[] = "/tmp/af_test_campaign_gpu_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    af_campaign_opts o;
    af_campaign_opts_default(&o);
    o.backend_obj = &fake;
    o.time_s = 4;
    o.jobs = 2;
    o.out_dir = dir;
    o.seed = 5;
    o.max_work = 65536;
    o.minimize_runs = 60;
    int rc = af_campaign_run(&o);
    CHECK_MSG(rc == 1, "campaign returned %d (expected 1: findings)", rc);
    char path[512];
    snprintf(path, sizeof path, "%s/findings", dir);
    int buckets = count_entries(path);
    snprintf(path, sizeof path, "%s/rawmap", dir);
    int raw = count_entries(path);
    printf("fake GPU campaign: %d raw signature(s) -> %d bucket(s)\n", raw, buckets);
    /* how many classes a 4 s run reaches depends on timing (2 jobs); what it reaches must
     * all be the fake bug, deduplicated from more raw signatures */
    snprintf(path, sizeof path, "%s/findings", dir);
    CHECK(buckets >= 1 && check_bucket_kinds(path) == buckets);
    CHECK(raw >= buckets);
    snprintf(path, sizeof path, "%s/report.json", dir);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size > 0);
    snprintf(path, sizeof path, "%s/pending", dir);
    CHECK(count_entries(path) == 0);

    /* stats.json: the s_q and s_kv histograms count every case once */
    snprintf(path, sizeof path, "%s/stats.json", dir);
    json_error_t jerr;
    json_t *stats = json_load_file(path, 0, &jerr);
    CHECK_MSG(stats != NULL, "%s: %s", path, jerr.text);
    json_int_t cases = json_integer_value(json_object_get(stats, "cases"));
    static const char *const hists[2] = {"seqlen_q_hist", "seqlen_kv_hist"};
    for (int k = 0; k < 2; k++) {
        json_t *h = json_object_get(stats, hists[k]);
        CHECK_MSG(json_is_object(h) && json_object_size(h) == AF_STATS_SEQLEN_BUCKETS, "%s", hists[k]);
        CHECK(json_object_get(h, "1") && json_object_get(h, "65536-131071") && json_object_get(h, "131072-262143"));
        json_int_t sum = 0;
        const char *key;
        json_t *v;
        json_object_foreach(h, key, v) sum += json_integer_value(v);
        CHECK_MSG(sum == cases && cases > 0, "%s sums to %lld, cases %lld", hists[k], (long long)sum, (long long)cases);
    }
    json_decref(stats);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    free(r);
    cpu->destroy(cpu);
    CHECK_DONE("test_campaign_gpu");
}
