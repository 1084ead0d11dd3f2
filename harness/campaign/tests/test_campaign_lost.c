/* test_campaign_lost.c — a GPU that goes away in the middle of a campaign stops it.
 *
 * On an H100 a cudnn campaign's GPU vanished after about 150 s (cudaErrorNoDevice in every
 * fresh process): the remaining 115 s were 242,102 declines in a moment each, the learnt
 * envelope dropped every cell on them, and each new finding's minimisation said "passes
 * now". The fake backend here wraps the cpu backend, is flagged AF_BACKEND_NEEDS_GPU (so
 * every case runs in a forked child or a persistent worker), and "loses its device" at its
 * GONE_AT-th run: that run writes DIR/gone (the device is shared by the processes, as a
 * GPU is), then every later call sees it. Two ways a process sees a lost device:
 *   fresh   available() and supports() look at the device each time: a fresh child
 *           declines ("no usable CUDA device") and its available() fails;
 *   context available() answers once per process (cudnn's one-time init) and supports()
 *           does not look: every run after the loss crashes, no case declines. Only a
 *           fresh process's available() (the campaign's probe after a crash) tells.
 * Checked for each: exit AF_CAMPAIGN_LOST well before --time, stats.json backend_lost
 * (why, at_s, cases_kept), no decline counted and no envelope cell learnt after the loss,
 * the case answered unavailable or in flight kept in DIR/lost/ (a readable case file), the
 * crash of the losing run (context) stored as a finding, report.json written; and a
 * control campaign of the same backend with no loss: exit 0 / 1, backend_lost null.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "campaign/campaign.h"
#include "model/case.h"
#include "util/check.h"
#include "util/clock.h"
#include <jansson.h>

#define GONE_AT 12 /* the run that loses the device */

static af_backend *cpu;
static enum { MODE_NONE, MODE_FRESH, MODE_CONTEXT } mode;
static char gone_path[600], count_path[600];

static bool device_gone(void) { return access(gone_path, F_OK) == 0; }

/* One byte per run into count_path (shared by every process); the run count after it. */
static long count_run(void) {
    FILE *f = fopen(count_path, "a");
    if (!f) return 0;
    fputc('x', f);
    long n = ftell(f);
    fclose(f);
    return n;
}

static int fake_available(af_backend *be, char *why, size_t cap) {
    (void)be;
    static int once = -2; /* MODE_CONTEXT: decided once per process */
    if (mode == MODE_CONTEXT && once != -2) return once ? (snprintf(why, cap, "fake GPU: init failed"), -1) : 0;
    int rc = device_gone() ? -1 : 0;
    if (rc) snprintf(why, cap, "fake GPU: no usable CUDA device (cudaErrorNoDevice)");
    if (mode == MODE_CONTEXT) once = rc;
    return rc ? rc : cpu->available(cpu, why, cap);
}

static af_run_status fake_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    /* MODE_CONTEXT never declines for the device: only the campaign's probe can tell */
    if (mode != MODE_CONTEXT && fake_available(be, why, cap)) return AF_RUN_DECLINED;
    return cpu->supports(cpu, c, why, cap);
}

static af_run_status fake_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                              char *why, size_t cap) {
    af_run_status st = fake_supports(be, c, why, cap);
    if (st != AF_RUN_OK) return st;
    if (device_gone()) { /* MODE_CONTEXT: a context made before the loss */
        snprintf(why, cap, "fake GPU: launch failed (the device is gone)");
        return AF_RUN_CRASH;
    }
    if (mode != MODE_NONE && count_run() == GONE_AT) {
        FILE *f = fopen(gone_path, "w");
        if (f) fclose(f);
        if (mode == MODE_CONTEXT) {
            snprintf(why, cap, "fake GPU: unspecified launch failure");
            return AF_RUN_CRASH;
        }
    }
    return cpu->run(cpu, c, engine, t, info, why, cap);
}

static int count_cases(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".case")) continue;
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        af_case c;
        af_error err;
        CHECK_MSG(af_case_load(path, &c, &err) == 0, "%s: %s", path, err.message);
        n++;
    }
    closedir(d);
    return n;
}

static void campaign(af_backend *fake, const char *label) {
    char dir[] = "/tmp/af_test_lost_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(gone_path, sizeof gone_path, "%s/gone", dir);
    snprintf(count_path, sizeof count_path, "%s/runs", dir);
    char out[700];
    snprintf(out, sizeof out, "%s/camp", dir);
    af_campaign_opts o;
    af_campaign_opts_default(&o);
    o.backend_obj = fake;
    o.time_s = mode == MODE_NONE ? 3 : 60;
    o.jobs = 2;
    o.out_dir = out;
    o.seed = 11;
    o.max_work = 65536;
    o.minimize_runs = 20;
    double t0 = af_clock_mono();
    int rc = af_campaign_run(&o);
    double took = af_clock_mono() - t0;
    char path[900];
    snprintf(path, sizeof path, "%s/stats.json", out);
    json_error_t jerr;
    json_t *stats = json_load_file(path, 0, &jerr);
    CHECK_MSG(stats != NULL, "%s: %s", path, jerr.text);
    json_t *lost = json_object_get(stats, "backend_lost");
    long long cases = json_integer_value(json_object_get(stats, "cases"));
    long long declined = json_integer_value(json_object_get(stats, "declined"));
    snprintf(path, sizeof path, "%s/lost", out);
    int kept = count_cases(path);
    printf("%s: exit %d after %.1f s, %lld cases, %lld declined, %d kept in lost/, backend_lost %s\n", label, rc, took,
           cases, declined, kept, json_is_object(lost) ? json_string_value(json_object_get(lost, "why")) : "null");
    if (mode == MODE_NONE) {
        CHECK_MSG(rc == AF_CAMPAIGN_CLEAN || rc == AF_CAMPAIGN_FINDINGS, "control: exit %d", rc);
        CHECK(json_is_null(lost) && kept == 0 && !device_gone());
    } else {
        CHECK_MSG(rc == AF_CAMPAIGN_LOST, "%s: exit %d (want %d)", label, rc, AF_CAMPAIGN_LOST);
        CHECK_MSG(took < 30, "%s: went on for %.1f s after the loss", label, took);
        CHECK(json_is_object(lost));
        const char *why = json_string_value(json_object_get(lost, "why"));
        CHECK_MSG(why && strstr(why, "no usable CUDA device"), "why: %s", why ? why : "(none)");
        CHECK(json_number_value(json_object_get(lost, "at_s")) > 0);
        CHECK(json_integer_value(json_object_get(lost, "cases_kept")) == kept);
        CHECK_MSG(kept >= 1, "%s: nothing kept in lost/", label);
        /* the cases before the loss ran (GONE_AT runs, probes' runs among them), and no
         * decline came from the loss */
        CHECK_MSG(cases >= 1 && declined == 0, "%s: %lld cases, %lld declined", label, cases, declined);
        json_t *outside = json_object_get(json_object_get(stats, "envelope"), "outside");
        CHECK_MSG(json_array_size(outside) == 0, "%s: the envelope learnt %zu cell(s) from the loss", label,
                  json_array_size(outside));
        snprintf(path, sizeof path, "%s/provenance.json", out);
        json_t *prov = json_load_file(path, 0, &jerr);
        CHECK_MSG(prov != NULL, "%s: %s", path, jerr.text);
        json_t *runs = json_object_get(prov, "runs");
        json_t *last = json_array_get(runs, json_array_size(runs) - 1);
        const char *outcome = json_string_value(json_object_get(last, "outcome"));
        CHECK_MSG(outcome && !strcmp(outcome, "backend_lost"), "provenance outcome %s", outcome ? outcome : "(none)");
        json_decref(prov);
    }
    if (mode == MODE_CONTEXT) { /* the run that lost the device crashed: a stored finding */
        long long buckets = json_integer_value(json_object_get(stats, "buckets"));
        CHECK_MSG(buckets >= 1, "context: the crash before the loss was not stored (%lld buckets)", buckets);
    }
    snprintf(path, sizeof path, "%s/report.json", out);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size > 0);
    json_decref(stats);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    char why[512];
    cpu = af_backend_cpu_new();
    CHECK(cpu != NULL && cpu->available(cpu, why, sizeof why) == 0);
    af_backend fake = *cpu;
    fake.name = "test:fake_gpu";
    fake.flags = AF_BACKEND_NEEDS_GPU | AF_BACKEND_DETERMINISTIC;
    fake.available = fake_available;
    fake.supports = fake_supports;
    fake.run = fake_run;
    fake.destroy = NULL;
    fake.prepare = NULL;
    mode = MODE_NONE;
    campaign(&fake, "control");
    mode = MODE_FRESH;
    campaign(&fake, "fresh");
    mode = MODE_CONTEXT;
    campaign(&fake, "context");
    cpu->destroy(cpu);
    CHECK_DONE("test_campaign_lost");
}
