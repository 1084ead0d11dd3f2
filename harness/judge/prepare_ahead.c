/* prepare_ahead.c — the next case prepared on a thread of its own (prepare_ahead.h). */
#include "judge/prepare_ahead.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/config.h"

int af_prepare_ahead_mode(int cases_at_once) {
    const char *v = af_config_get(AF_CFG_PREPARE_AHEAD);
    if (!v || !*v) return cases_at_once <= 1 ? 2 : 0;
    if (!strcmp(v, "0")) return 0;
    return strcmp(v, "gpu") ? 1 : 2;
}

static void *prepare_thread(void *arg) {
    af_prepare_ahead *a = arg;
    a->rc = af_prepare(&a->runner, &a->c, a->p, a->why, sizeof a->why);
    return NULL;
}

bool af_prepare_ahead_start(af_prepare_ahead *a, const af_runner *r, const af_case *c) {
    if (a->started) return false;
    a->p = calloc(1, sizeof *a->p);
    if (!a->p) return false;
    a->runner = *r;
    a->runner.mark = NULL; /* the judging thread's */
    a->c = *c;
    a->rc = -1;
    a->why[0] = '\0';
    if (pthread_create(&a->thread, NULL, prepare_thread, a) != 0) {
        free(a->p);
        a->p = NULL;
        return false;
    }
    a->started = true;
    return true;
}

/* Join the thread; the preparation is a's until taken or freed. */
static void join(af_prepare_ahead *a) {
    pthread_join(a->thread, NULL);
    a->started = false;
}

void af_prepare_ahead_drop(af_prepare_ahead *a) {
    if (!a->started) return;
    join(a);
    if (a->rc == 0) af_prepared_free(a->p); /* a failed af_prepare freed what it made */
    free(a->p);
    a->p = NULL;
}

bool af_prepare_ahead_take(af_prepare_ahead *a, const af_case *c, const af_runner *r, af_prepared **out, int *rc,
                           char *why, size_t cap) {
    *out = NULL;
    if (!a->started) return false;
    if (!af_case_equal(&a->c, c)) {
        af_prepare_ahead_drop(a);
        return false;
    }
    join(a);
    *rc = a->rc;
    if (a->rc != 0) { /* af_prepare freed what it made */
        snprintf(why, cap, "%s", a->why);
        free(a->p);
    } else {
        *out = a->p;
        (*out)->mark = r->mark; /* af_judge and af_prepare_settle mark the judging thread's stages */
    }
    a->p = NULL;
    return true;
}
