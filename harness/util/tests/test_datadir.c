/* test_datadir.c — util/datadir.h: a data folder is found at $ATTNFUZZ_DATA_DIR first, then
 * in the current directory (the test runs in the checkout), then in an install's
 * <prefix>/share/attnfuzz, then at <prefix>/NAME (a build folder in the checkout); a name
 * found nowhere fails with every place it looked, in that order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/check.h"
#include "util/datadir.h"

static void make_dirs(const char *root, const char *rel) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    CHECK_MSG(mkdir(path, 0755) == 0, "mkdir %s", path);
}

static void expect_found(const af_datadir_roots *roots, const char *name, const char *want) {
    char out[PATH_MAX + 64] = "";
    int rc = af_datadir_find_in(roots, name, out, sizeof out, NULL);
    CHECK_MSG(rc == 0 && !strcmp(out, want), "%s: got rc %d '%s', expected '%s'", name, rc, out, want);
}

int main(void) {
    char tmp[] = "/tmp/test_datadir.XXXXXX";
    CHECK(mkdtemp(tmp));
    char data[PATH_MAX], prefix[PATH_MAX], want[PATH_MAX + 64];
    snprintf(data, sizeof data, "%s/data", tmp);
    snprintf(prefix, sizeof prefix, "%s/prefix", tmp);
    make_dirs(tmp, "data/only-data");
    make_dirs(tmp, "data/corpora/seed");
    make_dirs(tmp, "prefix/share/attnfuzz/only-share");
    make_dirs(tmp, "prefix/share/attnfuzz/both");
    make_dirs(tmp, "prefix/both");
    make_dirs(tmp, "prefix/only-prefix");

    af_datadir_roots roots = {data, ""};
    snprintf(roots.prefix, sizeof roots.prefix, "%s", prefix);

    /* 1. ATTNFUZZ_DATA_DIR wins over the current directory (which also holds corpora/seed) */
    snprintf(want, sizeof want, "%s/corpora/seed", data);
    expect_found(&roots, "corpora/seed", want);
    snprintf(want, sizeof want, "%s/only-data", data);
    expect_found(&roots, "only-data", want);
    /* 2. the current directory: the name as given, so a checkout's paths read as before */
    expect_found(&roots, "corpora/seed-recent", "corpora/seed-recent");
    /* 3. the install's share/attnfuzz, before 4. <prefix>/NAME */
    snprintf(want, sizeof want, "%s/share/attnfuzz/only-share", prefix);
    expect_found(&roots, "only-share", want);
    snprintf(want, sizeof want, "%s/share/attnfuzz/both", prefix);
    expect_found(&roots, "both", want);
    snprintf(want, sizeof want, "%s/only-prefix", prefix);
    expect_found(&roots, "only-prefix", want);
    /* without the environment root, the current directory comes first */
    af_datadir_roots no_env = roots;
    no_env.data_dir = NULL;
    expect_found(&no_env, "corpora/seed", "corpora/seed");

    /* found nowhere: -1, and the search names the four places in order */
    af_datadir_search search;
    char out[PATH_MAX + 64] = "untouched";
    CHECK(af_datadir_find_in(&roots, "nowhere/x", out, sizeof out, &search) == -1);
    CHECK(!strcmp(out, "untouched"));
    CHECK_MSG(search.n == 4, "%d candidates", search.n);
    char tried[4 * (PATH_MAX + 64)], expected[4 * (PATH_MAX + 64)];
    af_datadir_tried(&search, tried, sizeof tried);
    snprintf(expected, sizeof expected, "%s/nowhere/x, ./nowhere/x, %s/share/attnfuzz/nowhere/x, %s/nowhere/x", data,
             prefix, prefix);
    CHECK_MSG(!strcmp(tried, expected), "tried '%s'\nexpected '%s'", tried, expected);
    /* no environment root and an unknown binary: the current directory only */
    af_datadir_roots bare = {NULL, ""};
    CHECK(af_datadir_find_in(&bare, "nowhere/x", out, sizeof out, &search) == -1);
    af_datadir_tried(&search, tried, sizeof tried);
    CHECK_MSG(search.n == 1 && !strcmp(tried, "./nowhere/x"), "tried '%s'", tried);

    /* this process's roots: the prefix is the folder above the test binary's (build/ -> the
     * checkout), and ATTNFUZZ_DATA_DIR is read when set */
    char exe_prefix[PATH_MAX];
    CHECK(af_datadir_exe_prefix(exe_prefix, sizeof exe_prefix) == 0);
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    CHECK(len > 0);
    exe[len] = '\0';
    CHECK_MSG(!strncmp(exe, exe_prefix, strlen(exe_prefix)) && exe[strlen(exe_prefix)] == '/' &&
                  strchr(exe + strlen(exe_prefix) + 1, '/') != NULL,
              "prefix %s of %s", exe_prefix, exe);
    setenv("ATTNFUZZ_DATA_DIR", data, 1);
    snprintf(want, sizeof want, "%s/only-data", data);
    CHECK(af_datadir_find("only-data", out, sizeof out, NULL) == 0 && !strcmp(out, want));
    unsetenv("ATTNFUZZ_DATA_DIR");
    CHECK(af_datadir_find("only-data", out, sizeof out, NULL) == -1);

    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0);
    CHECK_DONE("test_datadir");
}
