/* test_corpus_merge.c — the corpus merge touches only what the campaign made
 * (campaign/corpus_merge.h): a DIR/corpus that is a symlink is refused and nothing it
 * points at is read, renamed or removed; a file in a real DIR/corpus that the campaign
 * did not name survives; the campaign's own inputs are still merged (duplicates go). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "campaign/corpus_merge.h"
#include "util/check.h"
#include "util/fsutil.h"

static void put(const char *dir, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK(af_write_file_atomic(path, text, strlen(text), NULL, 0) == 0);
}

static bool holds(const char *dir, const char *name, const char *text) {
    char path[512], buf[256] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return !strcmp(buf, text);
}

int main(void) {
    char root[] = "/tmp/af_cmerge_XXXXXX";
    CHECK(mkdtemp(root));
    af_fuzz_limits limits;
    af_fuzz_limits_default(&limits);
    char path[512], why[1024];
    af_corpus_merge_summary sum;

    /* DIR/corpus -> a shared folder holding names the campaign itself uses */
    char shared[512], dir[512];
    snprintf(shared, sizeof shared, "%s/shared", root);
    snprintf(dir, sizeof dir, "%s/c", root);
    CHECK(mkdir(shared, 0755) == 0 && mkdir(dir, 0755) == 0);
    put(shared, "important.txt", "keep");
    put(shared, "seed-x", "keep");
    put(shared, "0123456789abcdef", "keep");
    put(shared, "0123456789abcdee", "keep"); /* a duplicate: the merge would drop one */
    snprintf(path, sizeof path, "%s/corpus", dir);
    CHECK(symlink(shared, path) == 0);
    CHECK(af_corpus_merge(dir, &limits, &sum, why, sizeof why) == -1);
    CHECK_MSG(strstr(why, "symbolic link") && strstr(why, "nothing in it removed"), "%s", why);
    CHECK(holds(shared, "important.txt", "keep") && holds(shared, "seed-x", "keep"));
    CHECK(holds(shared, "0123456789abcdef", "keep") && holds(shared, "0123456789abcdee", "keep"));

    /* a real DIR/corpus: the campaign's inputs merged, anything else left alone */
    CHECK(unlink(path) == 0 && mkdir(path, 0755) == 0);
    put(path, "important.txt", "my notes");
    put(path, "README", "mine");
    put(path, "seed-a", "same bytes");
    put(path, "seed-b", "same bytes");
    CHECK(af_corpus_merge(dir, &limits, &sum, why, sizeof why) == 0);
    CHECK_MSG(sum.before == 2 && sum.kept == 1 && sum.duplicates == 1, "before %d kept %d duplicates %d", sum.before,
              sum.kept, sum.duplicates);
    CHECK(holds(path, "important.txt", "my notes") && holds(path, "README", "mine"));
    CHECK(!af_is_regular_file(strcat(strcpy(why, path), "/seed-a")) &&
          !af_is_regular_file(strcat(strcpy(why, path), "/seed-b")));

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    CHECK_DONE("test_corpus_merge");
}
