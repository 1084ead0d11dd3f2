/* test_cudnn_plan_disk.c — plans kept on disk between backend instances
 * (ATTNFUZZ_CUDNN_PLAN_DIR, cudnn_plan_disk.h) on a GPU.
 *
 * For a forward case, two backward cases (one of them a padded graph of lengths past
 * 1024), a thd case and a paged one: a backend with a fresh plan folder runs the case and
 * writes its plans there (none read); a second, fresh instance on the same folder reads
 * every plan it needs and writes none, serves the case with the same engine config, and
 * gives O and LSE bit for bit equal to a backend without a folder (gradients within the
 * backward's run-to-run spread). Then the folder's files are damaged two ways (cuDNN's
 * text cut short; a file that is not a plan file): a fresh instance builds those plans
 * anew, rewrites the files, and its outputs are still right. Without a GPU or cuDNN it
 * prints SKIP and exits 77.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/cudnn/cudnn_backend.h"
#include "backends/cudnn/tests/run_compare.h"
#include "backends/cudnn/tests/sdpa_cases.h"

static const char *const fwd_case =
    "dtype = bf16\nbatch = 2\nheads_q = 8\nheads_kv = 2\nseqlen_q = 96\nseqlen_kv = 200\n"
    "head_dim_qk = 128\nhead_dim_v = 128\nmask = causal\nseed = 11\n";
static const char *const long_case =
    "dtype = bf16\nbatch = 1\nheads_q = 4\nheads_kv = 1\nseqlen_q = 1300\nseqlen_kv = 2100\nhead_dim_qk = 128\n"
    "head_dim_v = 128\nlayout = bhsd\nbackward = yes\nseed = 3\n";
#define N_CASES 5

static int count_plans(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".plan") && strlen(strstr(e->d_name, ".plan")) == 5) n++;
    closedir(d);
    return n;
}

static af_backend *backend_on(const char *dir) {
    if (dir) setenv("ATTNFUZZ_CUDNN_PLAN_DIR", dir, 1);
    af_backend *be = af_backend_cudnn_new();
    unsetenv("ATTNFUZZ_CUDNN_PLAN_DIR");
    CHECK(be != NULL);
    return be;
}

/* Run case i on a fresh instance on dir; *from / *to: the plans it read and wrote. */
static void run_fresh(const char *dir, const run_fixture *f, af_outputs *out, af_run_info *info, long long *from,
                      long long *to) {
    af_backend *be = backend_on(dir);
    run_fixture_into(be, f, out, info);
    af_backend_counters c;
    be->counters(be, &c);
    *from = c.plans_from_disk;
    *to = c.plans_to_disk;
    be->destroy(be);
}

/* Damage every plan file of dir: kind 0 cuts cuDNN's text after its first 40 bytes, kind 1
 * writes a file that is not a plan file. Returns the files damaged. */
static int damage(const char *dir, int kind) {
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strstr(e->d_name, ".plan")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *fp = fopen(path, "r+");
        CHECK(fp != NULL);
        if (!fp) continue;
        char head[512];
        CHECK(fgets(head, sizeof head, fp) != NULL);
        long at = kind == 0 ? ftell(fp) + 40 : 0;
        CHECK(ftruncate(fileno(fp), at) == 0);
        if (kind == 1) fputs("not a plan\n", fp);
        fclose(fp);
        n++;
    }
    if (d) closedir(d);
    return n;
}

int main(void) {
    const char *texts[N_CASES] = {fwd_case, cudnn_sdpa_cases[0], long_case, cudnn_sdpa_cases[5], cudnn_sdpa_cases[6]};
    af_backend *plain = backend_on(NULL);
    char why[512];
    if (plain->available(plain, why, sizeof why) != 0) {
        printf("SKIP test_cudnn_plan_disk: %s\n", why);
        plain->destroy(plain);
        return CHECK_SKIP_CODE;
    }
    char dir[] = "/tmp/attnfuzz-plan-disk-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    static run_fixture fx[N_CASES];
    for (int i = 0; i < N_CASES; i++) run_fixture_make(&fx[i], texts[i], "test_cudnn_plan_disk");
    for (int i = 0; i < N_CASES; i++) {
        af_outputs ref, a, b;
        af_run_info ir, ia, ib;
        long long from, to;
        run_fixture_into(plain, &fx[i], &ref, &ir);
        int before = count_plans(dir);
        run_fresh(dir, &fx[i], &a, &ia, &from, &to);
        int after = count_plans(dir);
        printf("case %d: engine %s, first instance: %lld plans written, %lld read; %d files\n", i, ia.engine, to, from,
               after);
        CHECK_MSG(to >= 1 && from == 0, "case %d: the first instance wrote %lld and read %lld plans", i, to, from);
        CHECK_MSG(after - before == to, "case %d: %d new files for %lld plans written", i, after - before, to);
        run_compare_outputs(i, &fx[i].c, &a, &ref, "with the plans written to the folder");
        run_fresh(dir, &fx[i], &b, &ib, &from, &to);
        printf("case %d: second instance: %lld plans read, %lld written\n", i, from, to);
        CHECK_MSG(from >= 1 && to == 0, "case %d: the second instance read %lld and wrote %lld plans", i, from, to);
        CHECK_MSG(strcmp(ia.engine, ib.engine) == 0 && strcmp(ib.engine, ir.engine) == 0,
                  "case %d: engines %s (first), %s (second), %s (no folder)", i, ia.engine, ib.engine, ir.engine);
        run_compare_outputs(i, &fx[i].c, &b, &ref, "with the plans read from the folder");
        af_outputs_free(&a);
        af_outputs_free(&b);
        af_outputs_free(&ref);
    }
    for (int kind = 0; kind < 2; kind++) {
        int files = count_plans(dir), hurt = damage(dir, kind);
        CHECK_MSG(hurt == files && files >= N_CASES, "damage %d: %d of %d files", kind, hurt, files);
        long long wrote = 0;
        for (int i = 0; i < N_CASES; i++) {
            af_outputs ref, a;
            af_run_info ir, ia;
            long long from, to;
            run_fixture_into(plain, &fx[i], &ref, &ir);
            run_fresh(dir, &fx[i], &a, &ia, &from, &to);
            wrote += to;
            CHECK_MSG(from == 0, "damage %d, case %d: %lld damaged plans were read", kind, i, from);
            run_compare_outputs(i, &fx[i].c, &a, &ref, "after the plan files were damaged");
            af_outputs_free(&a);
            af_outputs_free(&ref);
        }
        printf("damage %d: %d files damaged, %lld plans built and written again\n", kind, hurt, wrote);
        CHECK_MSG(wrote >= N_CASES, "damage %d: only %lld plans written again", kind, wrote);
        CHECK_MSG(count_plans(dir) == files, "damage %d: %d files after, %d before", kind, count_plans(dir), files);
    }
    /* the rewritten files serve again */
    for (int i = 0; i < N_CASES; i++) {
        af_outputs a;
        af_run_info ia;
        long long from, to;
        run_fresh(dir, &fx[i], &a, &ia, &from, &to);
        CHECK_MSG(from >= 1 && to == 0, "case %d after the rewrite: read %lld, wrote %lld", i, from, to);
        af_outputs_free(&a);
    }
    for (int i = 0; i < N_CASES; i++) af_tensors_free(&fx[i].t);
    plain->destroy(plain);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    CHECK_DONE("test_cudnn_plan_disk");
}
