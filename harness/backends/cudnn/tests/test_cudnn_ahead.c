/* test_cudnn_ahead.c — the cudnn backend's builds ahead (prepare, cudnn_ahead.h) on a GPU.
 *
 * For each case, a backend with the builds ahead and one without (ATTNFUZZ_CUDNN_BUILD_AHEAD
 * = 0) run it with the default engine: the same engine config serves both, O and LSE are
 * equal bit for bit and the gradients within the backward's own run-to-run spread (its
 * dQ accumulates with atomics); prepare built everything the run needed (the run itself
 * built nothing, the counters' ahead seconds grew); a second prepare and run of the case
 * builds nothing at all (a cache hit). Then a pending build evicted by another case's
 * (ATTNFUZZ_CUDNN_PLAN_CACHE = 1) and a backend destroyed with builds still queued.
 * Without a GPU or cuDNN it prints SKIP and exits 77.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cudnn/cudnn_backend.h"
#include "model/gen.h"
#include "util/check.h"
#include "backends/cudnn/tests/run_compare.h"
#include "backends/cudnn/tests/sdpa_cases.h"

/* sdpa_cases.h's causal GQA, bottom-right window, padding, thd and paged cases, and one of
 * lengths past 1024 (a padded graph of its own) */
static const char *cases[6];
static const char *const long_case =
    "dtype = bf16\nbatch = 2\nheads_q = 8\nheads_kv = 1\nseqlen_q = 1300\nseqlen_kv = 2100\nhead_dim_qk = 128\n"
    "head_dim_v = 128\nlayout = bhsd\nbackward = yes\nseed = 3\n";
#define N_CASES 6
static void pick_cases(void) {
    cases[0] = cudnn_sdpa_cases[0];
    cases[1] = cudnn_sdpa_cases[1];
    cases[2] = long_case;
    cases[3] = cudnn_sdpa_cases[4];
    cases[4] = cudnn_sdpa_cases[5];
    cases[5] = cudnn_sdpa_cases[6];
}

typedef run_fixture fixture;

static void fixture_make(fixture *f, int i) { run_fixture_make(f, cases[i], "test_cudnn_ahead"); }

static void run_into(af_backend *be, const fixture *f, af_outputs *out, af_run_info *info) {
    run_fixture_into(be, f, out, info);
}

static void compare_outputs(int i, const af_case *c, const af_outputs *a, const af_outputs *b) {
    run_compare_outputs(i, c, a, b, "with the builds ahead");
}

static af_backend *backend_with(const char *ahead, const char *cache_cap) {
    if (ahead) setenv("ATTNFUZZ_CUDNN_BUILD_AHEAD", ahead, 1);
    if (cache_cap) setenv("ATTNFUZZ_CUDNN_PLAN_CACHE", cache_cap, 1);
    af_backend *be = af_backend_cudnn_new();
    unsetenv("ATTNFUZZ_CUDNN_BUILD_AHEAD");
    unsetenv("ATTNFUZZ_CUDNN_PLAN_CACHE");
    CHECK(be != NULL);
    return be;
}

int main(void) {
    pick_cases();
    af_backend *ahead = backend_with(NULL, NULL), *plain = backend_with("0", NULL);
    char why[512];
    if (ahead->available(ahead, why, sizeof why) != 0) {
        printf("SKIP test_cudnn_ahead: %s\n", why);
        ahead->destroy(ahead);
        plain->destroy(plain);
        return CHECK_SKIP_CODE;
    }
    CHECK_MSG(ahead->prepare != NULL, "the cudnn backend offers no prepare");
    static fixture fx[N_CASES];
    for (int i = 0; i < N_CASES; i++) fixture_make(&fx[i], i);
    for (int i = 0; i < N_CASES; i++) {
        af_outputs a, b;
        af_run_info ia, ib;
        run_into(plain, &fx[i], &b, &ib);
        af_backend_counters before, after;
        ahead->counters(ahead, &before);
        ahead->prepare(ahead, &fx[i].c, "");
        run_into(ahead, &fx[i], &a, &ia);
        ahead->counters(ahead, &after);
        double built = after.build_seconds - before.build_seconds;
        double built_ahead = after.build_ahead_seconds - before.build_ahead_seconds;
        printf("case %d: engine %s (without: %s), built ahead %.1f ms of %.1f ms, run waited %.1f ms\n", i, ia.engine,
               ib.engine, 1e3 * built_ahead, 1e3 * built, 1e3 * (after.build_wait_seconds - before.build_wait_seconds));
        CHECK_MSG(strcmp(ia.engine, ib.engine) == 0, "case %d: engine %s with the builds ahead, %s without", i,
                  ia.engine, ib.engine);
        CHECK_MSG(built_ahead > 0, "case %d: nothing was built ahead", i);
        CHECK_MSG(built - built_ahead < 1e-9, "case %d: the run built %.3f ms itself after prepare", i,
                  1e3 * (built - built_ahead));
        compare_outputs(i, &fx[i].c, &a, &b);
        af_outputs_free(&a);
        /* again: built already, so prepare queues nothing and the run is a cache hit */
        ahead->counters(ahead, &before);
        ahead->prepare(ahead, &fx[i].c, "");
        run_into(ahead, &fx[i], &a, &ia);
        ahead->counters(ahead, &after);
        CHECK_MSG(ia.plan_cache == AF_PLAN_CACHE_HIT && after.build_seconds == before.build_seconds,
                  "case %d: built again on its second run", i);
        compare_outputs(i, &fx[i].c, &a, &b);
        af_outputs_free(&a);
        af_outputs_free(&b);
    }
    /* one graph kept: the second prepare evicts the first case's pending build (it waits
     * for it), and the first case still runs right on a graph of its own */
    af_backend *one = backend_with(NULL, "1");
    one->prepare(one, &fx[0].c, "");
    one->prepare(one, &fx[2].c, "");
    af_outputs a, b;
    af_run_info ia, ib;
    run_into(one, &fx[0], &a, &ia);
    run_into(plain, &fx[0], &b, &ib);
    compare_outputs(0, &fx[0].c, &a, &b);
    af_outputs_free(&a);
    af_outputs_free(&b);
    one->destroy(one);
    /* destroyed with builds queued: the running one finishes, the rest are dropped */
    af_backend *gone = backend_with(NULL, NULL);
    for (int i = 0; i < N_CASES; i++) gone->prepare(gone, &fx[i].c, "");
    gone->destroy(gone);
    for (int i = 0; i < N_CASES; i++) af_tensors_free(&fx[i].t);
    ahead->destroy(ahead);
    plain->destroy(plain);
    CHECK_DONE("test_cudnn_ahead");
}
