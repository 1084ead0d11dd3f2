/* test_cudnn_plan_key.c — the plan folder's keys and files (cudnn_plan_disk.h), on the CPU:
 * a fake cuDNN table stands for the library. Checks: a key is 32 hex digits and the same for
 * the same plan; it changes with any byte of the graph's description, the graph kind, the
 * alignment form, the engine's index, a knob, the context; the context changes with cuDNN's
 * version and file and with the GPU. A plan written and read back keeps its workspace and
 * notes and hands cuDNN the same text and the caller's handle (cuDNN makes no plan from
 * text without one); a missing file is no plan and no message; a file
 * whose first line is not ours, or whose notes are out of range, is refused with a message
 * and kept; one whose text cuDNN refuses, or whose workspace differs from the recorded
 * one, is refused and removed. The folder's trim keeps the newest plan files and touches
 * nothing else (trim_checks). Without CUDA (no cudnn backend) it prints SKIP and exits 77.
 */
#include <stdio.h>

#include "util/check.h"

#ifndef ATTNFUZZ_HAVE_CUDA
int main(void) {
    printf("SKIP test_cudnn_plan_key: built without CUDA (no cudnn backend)\n");
    return CHECK_SKIP_CODE;
}
#else

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/cudnn/cudnn_plan_disk.h"

/* The fake library: one plan's text (what Get hands out and what Set received), its
 * workspace, and whether Finalize succeeds. */
static char given_text[256], set_text[256];
static int64_t fake_ws = 4096;
static int finalize_fails;
static int fake_desc, fake_handle_obj;
static cudnnHandle_t set_handle; /* what the plan was given as its handle */
static const cudnnHandle_t fake_handle = (cudnnHandle_t)&fake_handle_obj;

static const char *error_string(cudnnStatus_t st) { return st ? "CUDNN_STATUS_BAD_PARAM" : "CUDNN_STATUS_SUCCESS"; }
static void last_error(char *buf, size_t cap) { snprintf(buf, cap, "fake"); }
static cudnnStatus_t create_desc(cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t *d) {
    (void)t;
    *d = (cudnnBackendDescriptor_t)&fake_desc;
    set_text[0] = 0;
    set_handle = NULL;
    return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t destroy_desc(cudnnBackendDescriptor_t d) {
    (void)d;
    return CUDNN_STATUS_SUCCESS;
}
/* as cuDNN: a plan made from its text needs the handle (9.19 crashed without it) */
static cudnnStatus_t finalize(cudnnBackendDescriptor_t d) {
    (void)d;
    return finalize_fails || set_handle != fake_handle ? CUDNN_STATUS_BAD_PARAM : CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t set_attr(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t,
                              int64_t n, const void *v) {
    (void)d;
    if (a == CUDNN_ATTR_EXECUTION_PLAN_HANDLE) {
        if (t != CUDNN_TYPE_HANDLE || n != 1) return CUDNN_STATUS_BAD_PARAM;
        set_handle = *(const cudnnHandle_t *)v;
        return CUDNN_STATUS_SUCCESS;
    }
    if (a != CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION || t != CUDNN_TYPE_CHAR || n < 1 ||
        n > (int64_t)sizeof set_text || ((const char *)v)[n - 1] != 0)
        return CUDNN_STATUS_BAD_PARAM;
    memcpy(set_text, v, (size_t)n);
    return CUDNN_STATUS_SUCCESS;
}
static cudnnStatus_t get_attr(cudnnBackendDescriptor_t const d, cudnnBackendAttributeName_t a,
                              cudnnBackendAttributeType_t t, int64_t req, int64_t *n, void *v) {
    (void)d;
    if (a == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE && t == CUDNN_TYPE_INT64) {
        *n = 1;
        *(int64_t *)v = fake_ws;
        return CUDNN_STATUS_SUCCESS;
    }
    if (a == CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION && t == CUDNN_TYPE_CHAR) {
        *n = (int64_t)strlen(given_text) + 1;
        if (v && req >= *n) memcpy(v, given_text, (size_t)*n);
        return CUDNN_STATUS_SUCCESS;
    }
    return CUDNN_STATUS_BAD_PARAM;
}

static af_cudnn_api fake_api(size_t version, const char *path) {
    af_cudnn_api api;
    memset(&api, 0, sizeof api);
    api.version = version;
    snprintf(api.path, sizeof api.path, "%s", path);
    api.GetErrorString = error_string;
    api.GetLastErrorString = last_error;
    api.BackendCreateDescriptor = create_desc;
    api.BackendDestroyDescriptor = destroy_desc;
    api.BackendFinalize = finalize;
    api.BackendSetAttribute = set_attr;
    api.BackendGetAttribute = get_attr;
    return api;
}

static void key_of(uint64_t ctx, const af_sdpa_desc *d, int kind, int align, const af_cudnn_cfg_id *id, char *key) {
    af_cudnn_plan_disk_key(ctx, d, kind, align, id, key);
    CHECK_MSG(strlen(key) == 32 && strspn(key, "0123456789abcdef") == 32, "key %s", key);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* af_cudnn_plan_disk_trim: 12 plan files of distinct ages beside a file of another name, a
 * link named as a plan and a name in upper-case hex; at most 10 kept: the 3 oldest go (9
 * left, 90 %), nothing else; again: nothing; no limit: nothing; a missing folder: -1. */
static void trim_checks(const char *root) {
    char dir[600], path[700], why[512];
    snprintf(dir, sizeof dir, "%s/trim", root);
    CHECK(mkdir(dir, 0755) == 0);
    for (int i = 0; i < 12; i++) {
        snprintf(path, sizeof path, "%s/%032x.plan", dir, 1000 - i); /* names opposite to ages */
        write_file(path, "x");
        struct timespec t[2] = {{1700000000 + 10 * i, 0}, {1700000000 + 10 * i, 0}};
        CHECK(utimensat(AT_FDCWD, path, t, 0) == 0);
    }
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    write_file(path, "mine");
    snprintf(path, sizeof path, "%s/%032X.plan", dir, 0xABCDEF);
    write_file(path, "upper case: not a key");
    char link[700];
    snprintf(link, sizeof link, "%s/%032x.plan", dir, 7);
    CHECK(symlink("notes.txt", link) == 0);
    CHECK_MSG(af_cudnn_plan_disk_trim(dir, 10, why, sizeof why) == 3, "%s", why);
    for (int i = 0; i < 12; i++) {
        snprintf(path, sizeof path, "%s/%032x.plan", dir, 1000 - i);
        CHECK_MSG((access(path, F_OK) == 0) == (i >= 3), "plan file of age rank %d %s", i, i >= 3 ? "removed" : "kept");
    }
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    CHECK(access(path, F_OK) == 0);
    snprintf(path, sizeof path, "%s/%032X.plan", dir, 0xABCDEF);
    CHECK(access(path, F_OK) == 0);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(af_cudnn_plan_disk_trim(dir, 10, why, sizeof why) == 0);
    CHECK(af_cudnn_plan_disk_trim(dir, 0, why, sizeof why) == 0);
    snprintf(path, sizeof path, "%s/none", dir);
    why[0] = 0;
    CHECK(af_cudnn_plan_disk_trim(path, 10, why, sizeof why) == -1 && strstr(why, "none") != NULL);
}

int main(void) {
    af_cudnn_api api = fake_api(91900, "/opt/cudnn/libcudnn.so.9");
    af_cudnn_api other_version = fake_api(91400, "/opt/cudnn/libcudnn.so.9");
    af_cudnn_api other_file = fake_api(91900, "/usr/lib/libcudnn.so.9");
    uint64_t ctx = af_cudnn_plan_disk_context(&api, "NVIDIA H100 80GB HBM3", 90);
    CHECK(ctx == af_cudnn_plan_disk_context(&api, "NVIDIA H100 80GB HBM3", 90));
    CHECK(ctx != af_cudnn_plan_disk_context(&other_version, "NVIDIA H100 80GB HBM3", 90));
    CHECK(ctx != af_cudnn_plan_disk_context(&other_file, "NVIDIA H100 80GB HBM3", 90));
    CHECK(ctx != af_cudnn_plan_disk_context(&api, "NVIDIA H200", 90));
    CHECK(ctx != af_cudnn_plan_disk_context(&api, "NVIDIA H100 80GB HBM3", 100));

    af_sdpa_desc d;
    memset(&d, 0, sizeof d);
    d.b = 2, d.hq = 8, d.hk = 2, d.sq = 1024, d.skv = 1024, d.dqk = d.dv = 128;
    af_cudnn_cfg_id id;
    memset(&id, 0, sizeof id);
    id.global_index = 2;
    id.n_knobs = 1;
    id.knob_type[0] = 24;
    id.knob_value[0] = 7;
    char k0[AF_CUDNN_PLAN_KEY_LEN], k1[AF_CUDNN_PLAN_KEY_LEN];
    key_of(ctx, &d, 0, 0, &id, k0);
    key_of(ctx, &d, 0, 0, &id, k1);
    CHECK_MSG(strcmp(k0, k1) == 0, "the same plan, two keys: %s %s", k0, k1);
    /* every byte of the description counts: flip each in turn */
    unsigned char *bytes = (unsigned char *)&d;
    int same = 0;
    for (size_t i = 0; i < sizeof d; i++) {
        bytes[i] ^= 0x10;
        key_of(ctx, &d, 0, 0, &id, k1);
        same += strcmp(k0, k1) == 0;
        bytes[i] ^= 0x10;
    }
    CHECK_MSG(same == 0, "%d of %zu description bytes do not change the key", same, sizeof d);
    key_of(ctx, &d, 2, 0, &id, k1);
    CHECK(strcmp(k0, k1) != 0); /* graph kind */
    key_of(ctx, &d, 0, 1, &id, k1);
    CHECK(strcmp(k0, k1) != 0); /* alignment form */
    key_of(ctx + 1, &d, 0, 0, &id, k1);
    CHECK(strcmp(k0, k1) != 0); /* context */
    af_cudnn_cfg_id id2 = id;
    id2.global_index = 1;
    key_of(ctx, &d, 0, 0, &id2, k1);
    CHECK(strcmp(k0, k1) != 0); /* engine */
    id2 = id;
    id2.knob_value[0] = 8;
    key_of(ctx, &d, 0, 0, &id2, k1);
    CHECK(strcmp(k0, k1) != 0); /* knob value */
    id2 = id;
    id2.knob_type[0] = 14;
    key_of(ctx, &d, 0, 0, &id2, k1);
    CHECK(strcmp(k0, k1) != 0); /* knob type */
    id2 = id;
    id2.n_knobs = 0;
    key_of(ctx, &d, 0, 0, &id2, k1);
    CHECK(strcmp(k0, k1) != 0); /* knobs given at all */

    char dir[] = "/tmp/attnfuzz-plan-key-XXXXXX", sub[512], path[600], why[1024];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(sub, sizeof sub, "%s/plans", dir); /* made by the first store */
    snprintf(path, sizeof path, "%s/%s.plan", sub, k0);
    af_cudnn_plan plan;
    why[0] = 0;
    CHECK(af_cudnn_plan_disk_load(&api, fake_handle, sub, k0, &plan, why, sizeof why) == -1);
    CHECK_MSG(why[0] == 0, "a missing file said: %s", why);

    /* written and read back */
    snprintf(given_text, sizeof given_text, "{\"engine\":2,\"text\":\"opaque\"}");
    memset(&plan, 0, sizeof plan);
    plan.plan = (cudnnBackendDescriptor_t)&fake_desc;
    plan.workspace = fake_ws;
    plan.n_numerical = 2, plan.numerical[0] = 0, plan.numerical[1] = 3;
    plan.n_behavior = 1, plan.behavior[0] = 1;
    CHECK_MSG(af_cudnn_plan_disk_store(&api, sub, k0, &plan, why, sizeof why) == 0, "%s", why);
    af_cudnn_plan back;
    CHECK_MSG(af_cudnn_plan_disk_load(&api, fake_handle, sub, k0, &back, why, sizeof why) == 0, "%s", why);
    CHECK(back.plan != NULL && back.engine == NULL && back.cfg == NULL);
    CHECK(back.workspace == fake_ws);
    CHECK(back.n_numerical == 2 && back.numerical[0] == 0 && back.numerical[1] == 3);
    CHECK(back.n_behavior == 1 && back.behavior[0] == 1);
    CHECK_MSG(strcmp(set_text, given_text) == 0, "cuDNN was handed %s", set_text);
    CHECK_MSG(set_handle == fake_handle, "the plan was finalized without the caller's handle");
    /* without a handle: refused before cuDNN is asked, the file kept */
    why[0] = 0;
    CHECK(af_cudnn_plan_disk_load(&api, NULL, sub, k0, &back, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "no cuDNN handle") != NULL, "%s", why);
    CHECK(access(path, F_OK) == 0);
    /* no notes at all */
    plan.n_numerical = plan.n_behavior = 0;
    CHECK_MSG(af_cudnn_plan_disk_store(&api, sub, k0, &plan, why, sizeof why) == 0, "%s", why);
    CHECK_MSG(af_cudnn_plan_disk_load(&api, fake_handle, sub, k0, &back, why, sizeof why) == 0, "%s", why);
    CHECK(back.n_numerical == 0 && back.n_behavior == 0);

    /* refused, kept: not our first line; a note out of range; no text */
    const char *bad[] = {"{\"engine\":2}\n", "attnfuzz-cudnn-plan 1 ws=4096 num=99 beh=\n{}",
                         "attnfuzz-cudnn-plan 1 ws=4096 num=1,x beh=\n{}",
                         "attnfuzz-cudnn-plan 2 ws=4096 num= beh=\n{}", "attnfuzz-cudnn-plan 1 ws=-5 num= beh=\n{}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(path, bad[i]);
        why[0] = 0;
        CHECK_MSG(af_cudnn_plan_disk_load(&api, fake_handle, sub, k0, &back, why, sizeof why) == -1,
                  "bad file %zu read", i);
        CHECK_MSG(strstr(why, "not an attnfuzz cuDNN plan file") != NULL, "bad file %zu: %s", i, why);
        CHECK_MSG(access(path, F_OK) == 0, "bad file %zu removed", i);
    }
    /* refused and removed: cuDNN does not finalize; the workspace differs */
    CHECK_MSG(af_cudnn_plan_disk_store(&api, sub, k0, &plan, why, sizeof why) == 0, "%s", why);
    finalize_fails = 1;
    CHECK(af_cudnn_plan_disk_load(&api, fake_handle, sub, k0, &back, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "did not finalize") != NULL, "%s", why);
    CHECK(access(path, F_OK) != 0);
    finalize_fails = 0;
    CHECK_MSG(af_cudnn_plan_disk_store(&api, sub, k0, &plan, why, sizeof why) == 0, "%s", why);
    fake_ws = 8192;
    CHECK(af_cudnn_plan_disk_load(&api, fake_handle, sub, k0, &back, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "workspace 8192, the file says 4096") != NULL, "%s", why);
    CHECK(access(path, F_OK) != 0);
    /* a plan whose text cuDNN will not give is not written */
    given_text[0] = 0;
    CHECK(af_cudnn_plan_disk_store(&api, sub, k1, &plan, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "no text") != NULL, "%s", why);
    trim_checks(dir);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    CHECK_DONE("test_cudnn_plan_key");
}
#endif
