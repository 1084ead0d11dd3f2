/* test_plugin_loader.c — the plugin loader, as a specification:
 *   - a good plugin (the example) loads as "plugin:PATH", carries the flags it
 *     declares, runs a case through the ordinary runner and passes against the oracle,
 *     and declines what it does not serve with its own reason;
 *   - every way a load can fail says which file and what is wrong: a missing file, a
 *     file that is not a shared object, a shared object without the entry points (each
 *     missing symbol named), a wrong ABI version (both versions and the symbol named),
 *     an empty path;
 *   - a plugin that wants GPU buffers is declined with a reason when attnfuzz has no
 *     CUDA;
 *   - af_plugin_scan finds the plugins on ATTNFUZZ_PLUGIN_PATH and beside the binary
 *     under their declared names (planted:<bug>), each once, with their flags.
 * Plugin locations come from CMake: AF_TEST_PLUGIN_DIR, AF_TEST_BAD_PLUGIN_DIR.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "attnfuzz/plugin.h"
#include "backends/plugin_loader.h"
#include "judge/runner.h"
#include "util/check.h"

#ifndef AF_TEST_PLUGIN_DIR
#error "AF_TEST_PLUGIN_DIR is set by harness/plugins/CMakeLists.txt"
#endif

#define GOOD_PLUGIN    AF_TEST_PLUGIN_DIR "/example_plugin.so"
#define PLANTED_WINDOW AF_TEST_PLUGIN_DIR "/planted_window_off_by_one.so"
#define BAD_MISSING    AF_TEST_BAD_PLUGIN_DIR "/test_bad_missing_symbols.so"
#define BAD_VERSION    AF_TEST_BAD_PLUGIN_DIR "/test_bad_wrong_version.so"
#define BAD_DEVICE     AF_TEST_BAD_PLUGIN_DIR "/test_bad_wants_device.so"
#define BAD_OLD        AF_TEST_BAD_PLUGIN_DIR "/test_bad_old_version.so"
#define BAD_OLD2       AF_TEST_BAD_PLUGIN_DIR "/test_bad_old_version2.so"
#define BAD_OLD3       AF_TEST_BAD_PLUGIN_DIR "/test_bad_old_version3.so"
#define BAD_OLD4       AF_TEST_BAD_PLUGIN_DIR "/test_bad_old_version4.so"
#define BAD_OLD5       AF_TEST_BAD_PLUGIN_DIR "/test_bad_old_version5.so"
#define BAD_OLD6       AF_TEST_BAD_PLUGIN_DIR "/test_bad_old_version6.so"

static void parse_case(af_case *c, const char *text) {
    af_error e;
    if (af_case_parse(text, "test", c, &e) != 0) {
        char msg[1024];
        af_error_format(&e, msg, sizeof msg);
        CHECK_MSG(false, "case does not parse: %s\n%s", msg, text);
    }
}

/* Judge backend be on the case text with the cpu reference and the oracle. */
static void judge(af_backend *be, const char *text, af_verdict *v) {
    af_case c;
    parse_case(&c, text);
    af_backend *cpu = af_backend_cpu_new();
    af_runner runner;
    memset(&runner, 0, sizeof runner);
    runner.reference = cpu;
    af_oracle_opts_default(&runner.oracle);
    runner.oracle.tier = AF_ORACLE_FP64;
    af_prepared prep;
    char why[512] = "";
    CHECK_MSG(af_prepare(&runner, &c, &prep, why, sizeof why) == 0, "%s", why);
    af_judge(&runner, &prep, be, "", v, NULL);
    af_prepared_free(&prep);
    cpu->destroy(cpu);
}

static void expect_load_error(const char *path, const char *must1, const char *must2) {
    char why[1024] = "";
    af_backend *be = af_plugin_load(path, why, sizeof why);
    CHECK_MSG(be == NULL, "%s loaded but should not", path);
    CHECK_MSG(strstr(why, path) != NULL, "error does not name the file: %s", why);
    CHECK_MSG(!must1 || strstr(why, must1), "error lacks '%s': %s", must1, why);
    CHECK_MSG(!must2 || strstr(why, must2), "error lacks '%s': %s", must2, why);
}

static void test_good_plugin(void) {
    char why[1024] = "";
    af_backend *be = af_plugin_load(GOOD_PLUGIN, why, sizeof why);
    CHECK_MSG(be != NULL, "%s", why);
    CHECK(strcmp(be->name, "plugin:" GOOD_PLUGIN) == 0);
    CHECK(be->flags & AF_BACKEND_PLUGIN);
    CHECK(be->flags & AF_BACKEND_DETERMINISTIC);
    CHECK(!(be->flags & AF_BACKEND_PLANTED));
    CHECK(!(be->flags & AF_BACKEND_NEEDS_GPU));
    CHECK(be->available(be, why, sizeof why) == 0);

    /* runs a case (GQA, causal bottom right, padded lengths) and passes */
    af_verdict v;
    judge(be,
          "dtype = fp16\nbatch = 2\nheads_q = 4\nheads_kv = 2\nseqlen_q = 24\nseqlen_kv = 40\n"
          "seqlens_q = 24,9\nseqlens_kv = 40,17\nhead_dim_qk = 64\nhead_dim_v = 32\n"
          "mask = padding_causal_bottom_right\n",
          &v);
    CHECK_MSG(v.kind == AF_V_PASS && v.n_findings == 0, "example plugin: %s", af_verdict_name(v.kind));
    CHECK(v.stats[AF_T_O].judged && v.stats[AF_T_LSE].judged);
    /* and the thd layout with gaps, through the same descriptors */
    judge(be,
          "dtype = bf16\nbatch = 3\nheads = 2\nseqlen = 32\nseqlens_q = 5,32,17\nseqlens_kv = 9,32,30\n"
          "layout = thd\nthd_gap = 2\nhead_dim = 32\nmask = padding\nwindow = 4,4\n",
          &v);
    CHECK_MSG(v.kind == AF_V_PASS, "example plugin on thd: %s", af_verdict_name(v.kind));

    /* declines backward with its own reason */
    af_case c;
    parse_case(&c, "dtype = fp16\nbackward = yes\n");
    CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_DECLINED);
    CHECK_MSG(strstr(why, "forward only") != NULL, "%s", why);
    judge(be, "dtype = fp16\nbackward = yes\n", &v);
    CHECK(v.kind == AF_V_DECLINED && strstr(v.reason, "forward only"));
    /* context parallelism is declined by the loader itself */
    parse_case(&c, "dtype = fp16\ncp = 2 p2p\n");
    CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_DECLINED);
    CHECK_MSG(strstr(why, "context parallelism") != NULL, "%s", why);
    be->destroy(be);
}

static void test_planted_flags(void) {
    char why[1024] = "";
    af_backend *be = af_plugin_load(PLANTED_WINDOW, why, sizeof why);
    CHECK_MSG(be != NULL, "%s", why);
    CHECK(be->flags & AF_BACKEND_PLANTED);
    CHECK(be->flags & AF_BACKEND_PLUGIN);
    CHECK(strcmp(be->name, "plugin:" PLANTED_WINDOW) == 0); /* by path: named by path */
    be->destroy(be);
}

static void test_load_errors(void) {
    expect_load_error(AF_TEST_PLUGIN_DIR "/no_such_plugin.so", "No such file", NULL);
    /* not a shared object at all */
    expect_load_error("harness/judge/tests/test_plugin_loader.c", "dlopen", NULL);
    /* the entry points are missing: each one named, the present ones not */
    expect_load_error(BAD_MISSING, "'attnfuzz_plugin_supports'", "'attnfuzz_plugin_run'");
    {
        char why[1024] = "";
        CHECK(af_plugin_load(BAD_MISSING, why, sizeof why) == NULL);
        CHECK_MSG(strstr(why, "'attnfuzz_plugin_info'") == NULL, "%s", why);
        CHECK_MSG(strstr(why, "missing symbol") != NULL, "%s", why);
    }
    /* a plugin of another ABI version: both versions and the symbol */
    expect_load_error(BAD_VERSION, "attnfuzz_plugin_abi_version", "version 999");
    {
        char why[1024] = "", mine[32];
        CHECK(af_plugin_load(BAD_VERSION, why, sizeof why) == NULL);
        snprintf(mine, sizeof mine, "version %u", ATTNFUZZ_PLUGIN_ABI_VERSION);
        CHECK_MSG(strstr(why, mine) != NULL, "%s", why);
    }
    /* a version-1 plugin (before the features): refused, and told why */
    expect_load_error(BAD_OLD, "version 1,", "version 2 added the features");
    expect_load_error(BAD_OLD2, "version 2,", "version 3 added dropout");
    expect_load_error(BAD_OLD3, "version 3,", "version 4 added attention_chunk");
    expect_load_error(BAD_OLD3, "rebuild the plugin", NULL);
    expect_load_error(BAD_OLD4, "version 4,", "version 5 added documents (the document mask) and global_keys");
    expect_load_error(BAD_OLD4, "rebuild the plugin", NULL);
    expect_load_error(BAD_OLD5, "version 5,", "version 6 added heads_v (V's own head count)");
    expect_load_error(BAD_OLD5, "rebuild the plugin", NULL);
    expect_load_error(BAD_OLD5, "version 5,", "the fp8_e5m2 dtype");
    expect_load_error(BAD_OLD5, "version 5,", "block_mask and custom_mask");
    expect_load_error(BAD_OLD6, "version 6,", "the score statistics outputs");
    {
        char why[256] = "";
        CHECK(af_plugin_load("", why, sizeof why) == NULL);
        CHECK_MSG(strstr(why, "empty path") != NULL, "%s", why);
    }
    /* through the registry: plugin:PATH */
    af_registry reg;
    memset(&reg, 0, sizeof reg);
    char why[1024] = "";
    CHECK(af_registry_find(&reg, "plugin:" BAD_VERSION, why, sizeof why) == NULL);
    CHECK_MSG(strstr(why, BAD_VERSION) != NULL, "%s", why);
    af_backend *be = af_registry_find(&reg, "plugin:" GOOD_PLUGIN, why, sizeof why);
    CHECK_MSG(be != NULL, "%s", why);
    CHECK(af_registry_find(&reg, "plugin:" GOOD_PLUGIN, why, sizeof why) == be); /* loaded once */
    af_registry_free(&reg);
}

static void test_device_plugin(void) {
    char why[1024] = "";
    af_backend *be = af_plugin_load(BAD_DEVICE, why, sizeof why);
    CHECK_MSG(be != NULL, "%s", why);
    CHECK(be->flags & AF_BACKEND_NEEDS_GPU);
#ifndef ATTNFUZZ_HAVE_CUDA
    CHECK(be->available(be, why, sizeof why) != 0);
    CHECK_MSG(strstr(why, "without CUDA") && strstr(why, BAD_DEVICE), "%s", why);
    af_case c;
    parse_case(&c, "dtype = fp16\n");
    CHECK(be->supports(be, &c, why, sizeof why) == AF_RUN_DECLINED);
    CHECK_MSG(strstr(why, "GPU buffers") != NULL, "%s", why);
#else
    if (be->available(be, why, sizeof why) != 0) {
        CHECK_MSG(strstr(why, "wants GPU buffers") && strstr(why, BAD_DEVICE), "%s", why);
        printf("test_plugin_loader: no GPU here, device round trip not tested (%s)\n", why);
    } else {
        /* buffers go to the device and back; the plugin writes nothing */
        af_verdict v;
        judge(be,
              "dtype = fp16\nbatch = 2\nheads = 2\nseqlen = 40\nseqlens_q = 40,7\nseqlens_kv = 40,9\n"
              "layout = thd\nthd_gap = 2\nhead_dim = 32\nmask = padding\nbackward = yes\n",
              &v);
        CHECK_MSG(v.kind == AF_V_UNWRITTEN, "device plugin: %s", af_verdict_name(v.kind));
        for (int k = 0; k < v.n_findings && k < AF_MAX_FINDINGS; k++)
            CHECK_MSG(v.findings[k].kind != AF_V_OUT_OF_BOUNDS, "device round trip: %s", v.findings[k].detail);
    }
#endif
    be->destroy(be);
}

static af_backend *find_named(af_registry *r, const char *name, int *count) {
    af_backend *found = NULL;
    *count = 0;
    for (int i = 0; i < r->count; i++)
        if (strcmp(r->items[i]->name, name) == 0) {
            found = r->items[i];
            (*count)++;
        }
    return found;
}

static void test_scan(void) {
    /* the build's plugin folder twice (env and beside the binary) plus a missing one */
    setenv("ATTNFUZZ_PLUGIN_PATH", "/nonexistent/attnfuzz:" AF_TEST_PLUGIN_DIR, 1);
    af_registry reg;
    af_registry_init(&reg);
    static const char *const planted[] = {
        "planted:fp8_v_block_scale",      "planted:window_off_by_one", "planted:masked_row_nan",
        "planted:ragged_offsets_ignored", "planted:gqa_head_mod",      "planted:contiguous_strides",
        "planted:window_dropped",         "planted:scale_ignored",     "planted:nondeterministic_reduction",
        "planted:page_index_128",         "planted:split_kv_stride"};
    for (size_t k = 0; k < sizeof planted / sizeof planted[0]; k++) {
        int n = 0;
        af_backend *be = find_named(&reg, planted[k], &n);
        CHECK_MSG(be != NULL, "%s not found by the scan", planted[k]);
        CHECK_MSG(n == 1, "%s registered %d times", planted[k], n);
        CHECK(be->flags & AF_BACKEND_PLANTED);
        CHECK(be->flags & AF_BACKEND_PLUGIN);
        CHECK(be->flags & AF_BACKEND_DETERMINISTIC); /* they all claim it */
    }
    int n = 0;
    af_backend *control = find_named(&reg, "planted:none", &n);
    CHECK(control && n == 1 && !(control->flags & AF_BACKEND_PLANTED));
    af_backend *example = find_named(&reg, "example", &n);
    CHECK(example && n == 1);
    /* the malformed test plugins live elsewhere and are never scanned */
    CHECK(find_named(&reg, "test_bad_version", &n) == NULL);
    char why[256];
    CHECK(af_registry_find(&reg, "planted:scale_ignored", why, sizeof why) != NULL);
    af_registry_free(&reg);
    unsetenv("ATTNFUZZ_PLUGIN_PATH");
}

int main(void) {
    test_good_plugin();
    test_planted_flags();
    test_load_errors();
    test_device_plugin();
    test_scan();
    CHECK_DONE("test_plugin_loader");
}
