/* test_suggest.c — util/suggest.h: the edit distance, and "did you mean" suggesting a near
 * name (the typos of issue reports: campain, --tme, cuda, planted:scale_ignore) but
 * nothing for a word that is no typo of any name. */
#include <string.h>

#include "util/check.h"
#include "util/suggest.h"

static size_t dist(const char *a, const char *b) { return af_edit_distance(a, strlen(a), b, strlen(b)); }

static void expect(const char *typed, const char *const *names, size_t n, const char *want) {
    const char *got = af_suggest(typed, names, n);
    if (!want)
        CHECK_MSG(got == NULL, "'%s': suggested '%s', expected nothing", typed, got);
    else
        CHECK_MSG(got && !strcmp(got, want), "'%s': suggested '%s', expected '%s'", typed, got ? got : "(none)", want);
}

int main(void) {
    CHECK(dist("", "") == 0);
    CHECK(dist("abc", "abc") == 0);
    CHECK(dist("campain", "campaign") == 1); /* one insertion */
    CHECK(dist("cuda", "cudnn") == 2);       /* a substitution and an insertion */
    CHECK(dist("kitten", "sitting") == 3);   /* the textbook pair */
    CHECK(dist("", "time") == 4 && dist("time", "") == 4);

    static const char *const verbs[] = {"run",      "print", "backends", "engines", "triage", "minimize",
                                        "campaign", "repro", "merge",    "select",  "gate"};
    size_t nv = sizeof verbs / sizeof verbs[0];
    expect("campain", verbs, nv, "campaign");
    expect("minimise", verbs, nv, "minimize");
    expect("rnu", verbs, nv, "run");
    expect("backend", verbs, nv, "backends");
    expect("frobnicate", verbs, nv, NULL); /* no verb is near: no guess */
    expect("xyz", verbs, nv, NULL);

    static const char *const options[] = {"--time", "--total-time", "--out", "--backend", "--in-process", "--seed"};
    size_t no = sizeof options / sizeof options[0];
    expect("--tme", options, no, "--time");
    expect("--inprocess", options, no, "--in-process");
    expect("--backedn", options, no, "--backend");
    expect("--nope", options, no, NULL);

    static const char *const backends[] = {"cpu", "cudnn", "planted:scale_ignored", "planted:window_dropped", NULL};
    size_t nb = sizeof backends / sizeof backends[0];
    expect("cuda", backends, nb, "cudnn"); /* NULL names are skipped */
    expect("planted:scale_ignore", backends, nb, "planted:scale_ignored");
    expect("planted:window_drop", backends, nb, "planted:window_dropped");
    expect("nosuch", backends, nb, NULL);
    expect("cpu", backends, nb, "cpu"); /* an exact name is its own nearest */
    CHECK(af_suggest("cpu", backends, 0) == NULL);
    CHECK_DONE("test_suggest");
}
