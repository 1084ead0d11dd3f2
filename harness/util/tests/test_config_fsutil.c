/* test_config_fsutil.c — util/config.h (the ATTNFUZZ_* table, its reader, the warning
 * about unknown names) and util/fsutil.h (mkdir -p, atomic replace, planted symlinks, confined reads). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/check.h"
#include "util/config.h"
#include "util/fsutil.h"

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

static void test_config(void) {
    /* every row is named ATTNFUZZ_*, has a default and a meaning, and names are unique */
    for (int i = 0; i < AF_CFG_COUNT; i++) {
        const af_config_entry *e = af_config_entry_of((af_config_var)i);
        CHECK(e && !strncmp(e->name, "ATTNFUZZ_", 9) && e->default_value[0] && e->meaning[0]);
        for (int k = 0; k < i; k++) CHECK(strcmp(af_config_entry_of((af_config_var)k)->name, e->name));
    }
    CHECK(af_config_entry_of(AF_CFG_COUNT) == NULL);
    CHECK(!strcmp(af_config_entry_of(AF_CFG_MAX_WORK)->name, "ATTNFUZZ_MAX_WORK"));

    /* the reader: unset and empty read as NULL */
    unsetenv("ATTNFUZZ_MAX_WORK");
    CHECK(af_config_get(AF_CFG_MAX_WORK) == NULL);
    setenv("ATTNFUZZ_MAX_WORK", "", 1);
    CHECK(af_config_get(AF_CFG_MAX_WORK) == NULL);
    setenv("ATTNFUZZ_MAX_WORK", "65536", 1);
    CHECK(af_config_get(AF_CFG_MAX_WORK) && !strcmp(af_config_get(AF_CFG_MAX_WORK), "65536"));
    unsetenv("ATTNFUZZ_MAX_WORK");

    CHECK(!strcmp(af_config_closest("ATTNFUZZ_MAXWORK"), "ATTNFUZZ_MAX_WORK"));
    CHECK(!strcmp(af_config_closest("ATTNFUZZ_CPU_THREAD"), "ATTNFUZZ_CPU_THREADS"));
    CHECK(!strcmp(af_config_closest("ATTNFUZZ_PLUGINS_PATH"), "ATTNFUZZ_PLUGIN_PATH"));

    /* unknown names warn, one line each, with the suggestion; known ones and others do not */
    char *env[] = {"PATH=/bin",
                   "ATTNFUZZ_MAX_WORK=4096",
                   "ATTNFUZZ_MAXWORK=4096",
                   "ATTNFUZZ_BAKEND=cpu",
                   "ATTNFUZZ_OUT",
                   "XATTNFUZZ_NOPE=1",
                   NULL};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f);
    CHECK(af_config_warn_unknown(env, "prog", f) == 2);
    fclose(f);
    CHECK_MSG(strstr(text, "prog: warning: unknown environment variable ATTNFUZZ_MAXWORK (ignored); did you mean "
                           "ATTNFUZZ_MAX_WORK?\n"),
              "%s", text);
    CHECK_MSG(strstr(text, "ATTNFUZZ_BAKEND (ignored); did you mean ATTNFUZZ_BACKEND?"), "%s", text);
    CHECK(!strstr(text, "NOPE") && !strstr(text, "ATTNFUZZ_OUT "));
    free(text);
    char *known[] = {"ATTNFUZZ_CPU_THREADS=2", "ATTNFUZZ_PLUGIN_PATH=", NULL};
    CHECK(af_config_warn_unknown(known, "prog", NULL) == 0);
}

/* af_config_warn_once: the exact line, once per variable, the variables apart. */
static void test_config_warn_once(void) {
    char path[] = "/tmp/af_config_warn_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    CHECK(saved >= 0 && dup2(fd, 2) == 2);
    setenv("ATTNFUZZ_GPU_SYNC", "fast", 1);
    setenv("ATTNFUZZ_ORACLE_GPU_MMA", "3", 1);
    af_config_warn_once(AF_CFG_GPU_SYNC, "is none of auto, spin, yield, block (CUDA's default kept)");
    af_config_warn_once(AF_CFG_GPU_SYNC, "said again");
    af_config_warn_once(AF_CFG_ORACLE_GPU_MMA, "is none of 0, 1, 2 (0 kept)");
    af_config_warn_once(AF_CFG_ORACLE_GPU_MMA, "said again");
    fflush(stderr);
    CHECK(dup2(saved, 2) == 2);
    close(saved);
    char text[512] = {0};
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    unlink(path);
    close(fd);
    text[n] = '\0';
    CHECK_MSG(strcmp(text,
                     "attnfuzz: warning: ATTNFUZZ_GPU_SYNC=fast is none of auto, spin, yield, block (CUDA's "
                     "default kept)\nattnfuzz: warning: ATTNFUZZ_ORACLE_GPU_MMA=3 is none of 0, 1, 2 (0 kept)\n") == 0,
              "stderr was: %s", text);
    unsetenv("ATTNFUZZ_GPU_SYNC");
    unsetenv("ATTNFUZZ_ORACLE_GPU_MMA");
}

static void test_fsutil(void) {
    char root[] = "/tmp/af_fsutil_XXXXXX";
    CHECK(mkdtemp(root));
    char path[256], why[256];
    snprintf(path, sizeof path, "%s/a/b//c", root);
    CHECK_MSG(af_mkdirs(path, why, sizeof why) == 0, "%s", why);
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(af_mkdirs(path, why, sizeof why) == 0); /* existing: fine */

    /* a file where a directory should be: an error naming the path */
    snprintf(path, sizeof path, "%s/file", root);
    CHECK(af_write_file_atomic(path, "one", 3, why, sizeof why) == 0);
    CHECK(!strcmp(read_text(path), "one"));
    snprintf(path, sizeof path, "%s/file/sub", root);
    CHECK(af_mkdirs(path, why, sizeof why) == -1 && strstr(why, "/file"));

    /* atomic replace: the new content, mode 0644, no temporary left behind */
    snprintf(path, sizeof path, "%s/file", root);
    af_file_part parts[2] = {{"head-", 5}, {"body", 4}};
    CHECK(af_write_parts_atomic(path, parts, 2, why, sizeof why) == 0);
    CHECK(!strcmp(read_text(path), "head-body"));
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
    DIR *d = opendir(root);
    CHECK(d);
    int entries = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            entries++;
            CHECK_MSG(!strstr(e->d_name, ".tmp"), "left behind: %s", e->d_name);
        }
    closedir(d);
    CHECK(entries == 2); /* a/ and file */

    /* into a directory that does not exist: -1 with why, the old file untouched */
    snprintf(path, sizeof path, "%s/none/file", root);
    CHECK(af_write_file_atomic(path, "x", 1, why, sizeof why) == -1 && strstr(why, "/none/file"));

    /* af_write_all through a pipe */
    int fds[2];
    CHECK(pipe(fds) == 0);
    CHECK(af_write_all(fds[1], "abc", 3) == 0);
    char got[4] = "";
    CHECK(read(fds[0], got, 3) == 3 && !memcmp(got, "abc", 3));
    close(fds[0]);
    CHECK(af_write_all(fds[1], "abc", 3) == -1); /* reader gone: EPIPE (SIGPIPE ignored) */
    close(fds[1]);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
}

/* Symlinks planted in a directory attnfuzz writes to or reads from: a write never goes
 * through one (neither a symlink at the old fixed temp name PATH.tmp nor one at PATH:
 * rename replaces the link, not its target); a confined read refuses a symlink, a FIFO,
 * a directory, a file reached through a symlinked directory outside ROOT and a file
 * over the size limit, and reads a regular file inside ROOT. */
static void test_fsutil_symlinks(void) {
    char root[] = "/tmp/af_fsutil_links_XXXXXX", outside[] = "/tmp/af_fsutil_outside_XXXXXX";
    CHECK(mkdtemp(root) && mkdtemp(outside));
    char path[256], link[300], target[256], why[256];
    snprintf(target, sizeof target, "%s/victim", outside);
    FILE *f = fopen(target, "w");
    CHECK(f && fputs("precious", f) >= 0 && fclose(f) == 0);

    snprintf(path, sizeof path, "%s/report.html", root);
    snprintf(link, sizeof link, "%s.tmp", path);
    CHECK(symlink(target, link) == 0);
    CHECK_MSG(af_write_file_atomic(path, "new", 3, why, sizeof why) == 0, "%s", why);
    CHECK(!strcmp(read_text(target), "precious"));
    CHECK(!strcmp(read_text(path), "new"));
    snprintf(path, sizeof path, "%s/heatmap.png", root);
    CHECK(symlink(target, path) == 0);
    CHECK_MSG(af_write_file_atomic(path, "png", 3, why, sizeof why) == 0, "%s", why);
    CHECK(!strcmp(read_text(target), "precious"));
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode) && af_is_regular_file(path));
    CHECK(!af_is_regular_file(link) && !af_is_regular_file(root));

    char *text = NULL;
    size_t n = 0;
    snprintf(path, sizeof path, "%s/report.html", root);
    CHECK_MSG(af_read_file_inside(root, path, 100, &text, &n, why, sizeof why) == 0, "%s", why);
    CHECK(n == 3 && !strcmp(text, "new"));
    free(text);
    CHECK(af_read_file_inside(root, path, 2, &text, &n, why, sizeof why) == -1 && strstr(why, "over 2 bytes"));
    CHECK(af_read_file_inside(root, link, 100, &text, &n, why, sizeof why) == -1 && text == NULL);
    CHECK_MSG(strstr(why, "symbolic link"), "%s", why);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/bucket", root);
    CHECK(symlink(outside, sub) == 0); /* a directory inside ROOT that leads out of it */
    snprintf(path, sizeof path, "%s/bucket/victim", root);
    CHECK(af_read_file_inside(root, path, 100, &text, &n, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "outside"), "%s", why);
    snprintf(path, sizeof path, "%s/fifo", root);
    CHECK(mkfifo(path, 0600) == 0);
    CHECK(af_read_file_inside(root, path, 100, &text, &n, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "not a regular file"), "%s", why);
    CHECK(af_read_file_inside(root, root, 100, &text, &n, why, sizeof why) == -1);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", root, outside);
    CHECK(system(cmd) == 0);
}

/* ATTNFUZZ_FAIL_WRITE, af_mkdirs over a file, af_subdirs_real. */
static void test_fsutil_faults(void) {
    char root[] = "/tmp/af_fault_XXXXXX";
    CHECK(mkdtemp(root));
    char path[300], why[600];
    /* an injected ENOSPC: the write fails with the reason, nothing is left behind */
    setenv("ATTNFUZZ_FAIL_WRITE", "ENOSPC:/rawmap/", 1);
    snprintf(path, sizeof path, "%s/rawmap", root);
    CHECK(af_mkdirs(path, why, sizeof why) == 0);
    snprintf(path, sizeof path, "%s/rawmap/x", root);
    errno = 0;
    CHECK(af_write_file_atomic(path, "abc", 3, why, sizeof why) == -1);
    CHECK(errno == ENOSPC);
    CHECK_MSG(strstr(why, path) && strstr(why, "No space left on device"), "%s", why);
    snprintf(path, sizeof path, "%s/rawmap", root);
    DIR *d = opendir(path);
    int entries = 0;
    for (struct dirent *e; d && (e = readdir(d));) entries += e->d_name[0] != '.';
    if (d) closedir(d);
    CHECK(entries == 0);
    /* another path is written; a named errno other than ENOSPC */
    snprintf(path, sizeof path, "%s/stats.json", root);
    CHECK(af_write_file_atomic(path, "{}", 2, why, sizeof why) == 0);
    setenv("ATTNFUZZ_FAIL_WRITE", "EIO:stats", 1);
    CHECK(af_write_file_atomic(path, "{}", 2, why, sizeof why) == -1 && errno == EIO);
    CHECK_MSG(strstr(why, "Input/output error"), "%s", why);
    unsetenv("ATTNFUZZ_FAIL_WRITE");
    CHECK(af_write_file_atomic(path, "{}", 2, why, sizeof why) == 0);

    /* mkdir -p over a file: ENOTDIR, not "exists" */
    snprintf(path, sizeof path, "%s/stats.json/sub", root);
    CHECK(af_mkdirs(path, why, sizeof why) == -1);
    snprintf(path, sizeof path, "%s/stats.json", root);
    CHECK(af_mkdirs(path, why, sizeof why) == -1 && errno == ENOTDIR);
    CHECK_MSG(strstr(why, "Not a directory"), "%s", why);

    /* subdirectories: real ones and missing ones pass, a symlink or a file does not */
    char link_target[300];
    snprintf(path, sizeof path, "%s/corpus", root);
    CHECK(mkdir(path, 0755) == 0);
    const char *names[3] = {"corpus", "absent", "stats.json"};
    CHECK(af_subdirs_real(root, names, 2, why, sizeof why) == 0);
    CHECK(af_subdirs_real(root, names, 3, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "stats.json is not a directory"), "%s", why);
    snprintf(path, sizeof path, "%s/findings", root);
    snprintf(link_target, sizeof link_target, "%s/corpus", root);
    CHECK(symlink(link_target, path) == 0);
    const char *linked[1] = {"findings"};
    CHECK(af_subdirs_real(root, linked, 1, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "findings is a symbolic link (to ") && strstr(why, link_target), "%s", why);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
}

int main(void) {
    test_config_warn_once();
    signal(SIGPIPE, SIG_IGN);
    test_config();
    test_fsutil();
    test_fsutil_symlinks();
    test_fsutil_faults();
    CHECK_DONE("test_config_fsutil");
}
