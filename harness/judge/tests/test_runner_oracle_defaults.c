/* test_runner_oracle_defaults.c — ATTNFUZZ_GPU_MPFR_BUDGET (util/config.h) through
 * af_runner_oracle_defaults: unset keeps af_oracle_opts_default's options, a number > 0
 * replaces gpu_mpfr_budget and nothing else, any other value keeps the default and is said
 * once on stderr (the first bad value named), never again in the process. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "judge/runner.h"
#include "util/check.h"

/* o's options equal to the defaults, gpu_mpfr_budget aside */
static int same_but_budget(const af_oracle_opts *o) {
    af_oracle_opts d, x = *o;
    af_oracle_opts_default(&d);
    x.gpu_mpfr_budget = d.gpu_mpfr_budget;
    return memcmp(&x, &d, sizeof d) == 0;
}

int main(void) {
    af_oracle_opts d, o;
    af_oracle_opts_default(&d);
    CHECK(d.gpu_mpfr_budget == 4e6);

    unsetenv("ATTNFUZZ_GPU_MPFR_BUDGET");
    af_runner_oracle_defaults(&o);
    CHECK(memcmp(&o, &d, sizeof d) == 0);

    const struct {
        const char *v;
        double want;
    } good[] = {{"1e5", 1e5}, {"1", 1.0}, {"250000000", 2.5e8}, {"0.5", 0.5}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("ATTNFUZZ_GPU_MPFR_BUDGET", good[i].v, 1);
        af_runner_oracle_defaults(&o);
        CHECK_MSG(o.gpu_mpfr_budget == good[i].want, "%s -> %g", good[i].v, o.gpu_mpfr_budget);
        CHECK(same_but_budget(&o));
    }

    /* the bad values: stderr into a file for the warning */
    char path[] = "/tmp/af_budget_warn_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    CHECK(saved >= 0 && dup2(fd, 2) == 2);
    const char *bad[] = {"abc", "0", "-1", "inf", "nan", "1e5x", " "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("ATTNFUZZ_GPU_MPFR_BUDGET", bad[i], 1);
        o.gpu_mpfr_budget = -7.0;
        af_runner_oracle_defaults(&o);
        CHECK_MSG(o.gpu_mpfr_budget == 4e6, "%s -> %g", bad[i], o.gpu_mpfr_budget);
        CHECK(same_but_budget(&o));
    }
    fflush(stderr);
    CHECK(dup2(saved, 2) == 2);
    close(saved);
    char text[512] = {0};
    FILE *f = fopen(path, "r");
    CHECK(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    unlink(path);
    close(fd);
    text[n] = '\0';
    CHECK_MSG(
        strcmp(text, "attnfuzz: warning: ATTNFUZZ_GPU_MPFR_BUDGET=abc is not a number > 0 (the default kept)\n") == 0,
        "stderr was: %s", text);
    unsetenv("ATTNFUZZ_GPU_MPFR_BUDGET");
    CHECK_DONE("test_runner_oracle_defaults");
}
