/* test_stage_mark.c — marks shared across fork (util/stage_mark.h): what a child writes
 * its parent reads after the child is gone; the reading says whether a backend call was in
 * flight, with the stage and its step; calls in flight are counted (nested calls leave the
 * count where it was); a NULL mark is ignored everywhere. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/check.h"
#include "util/stage_mark.h"

/* Fork a child that runs fn on mark m and exits; wait for it. */
static void in_child(void (*fn)(af_stage_mark *), af_stage_mark *m) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        fn(m);
        _exit(0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void child_in_oracle(af_stage_mark *m) {
    af_stage_mark_set(m, AF_STAGE_GEN);
    af_stage_mark_backend_enter(m); /* a call that returned */
    af_stage_mark_backend_leave(m);
    af_stage_mark_set(m, AF_STAGE_ORACLE);
}

static void child_in_probe_call(af_stage_mark *m) {
    af_stage_mark_set(m, AF_STAGE_PROBES);
    af_stage_mark_step(m, "capacity");
    af_stage_mark_backend_enter(m);
    af_stage_mark_backend_enter(m); /* nested (a wrapper's inner backend) */
    af_stage_mark_backend_leave(m);
}

int main(void) {
    af_stage_mark *marks = af_stage_marks_new();
    CHECK(marks != NULL);
    char buf[200];
    /* a fresh mark: nothing in flight */
    CHECK(!af_stage_mark_describe(&marks[0], 0.0, buf, sizeof buf));
    CHECK_MSG(strstr(buf, "start stage") && strstr(buf, "no backend call in flight"), "%s", buf);

    in_child(child_in_oracle, &marks[1]);
    CHECK(marks[1].stage == AF_STAGE_ORACLE && marks[1].in_backend == 0);
    CHECK(!af_stage_mark_describe(&marks[1], marks[1].stage_since + 280.0, buf, sizeof buf));
    CHECK_MSG(!strcmp(buf, "in attnfuzz's oracle stage for 280 s, no backend call in flight"), "%s", buf);

    in_child(child_in_probe_call, &marks[2]);
    CHECK(marks[2].in_backend == 1);
    CHECK(af_stage_mark_describe(&marks[2], marks[2].backend_since + 100.0, buf, sizeof buf));
    CHECK_MSG(!strcmp(buf, "in the backend's call for 100 s (attnfuzz's probes stage: capacity)"), "%s", buf);
    CHECK(marks[1].stage == AF_STAGE_ORACLE); /* each child its own mark */

    /* a new stage clears the step; a reset clears everything */
    af_stage_mark_set(&marks[2], AF_STAGE_STORE);
    CHECK(marks[2].step[0] == '\0');
    af_stage_mark_reset(&marks[2]);
    CHECK(marks[2].stage == AF_STAGE_NONE && marks[2].in_backend == 0);
    /* a step longer than the field is cut, never overrun */
    af_stage_mark_step(&marks[3], "a step name far longer than the twenty-four bytes");
    CHECK(strlen(marks[3].step) == sizeof marks[3].step - 1 && marks[4].stage == 0);

    /* NULL: nothing, no crash */
    af_stage_mark_set(NULL, AF_STAGE_RUN);
    af_stage_mark_step(NULL, "x");
    af_stage_mark_backend_enter(NULL);
    af_stage_mark_backend_leave(NULL);
    af_stage_mark_reset(NULL);
    CHECK(!strcmp(af_stage_name(AF_STAGE_CERT), "certification") && !strcmp(af_stage_name(AF_STAGE_COUNT), "unknown"));
    af_stage_marks_free(marks);
    CHECK_DONE("test_stage_mark");
}
