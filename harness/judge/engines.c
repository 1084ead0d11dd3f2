/* judge/engines.c — run and judge every engine config of a case (judge/engines.h). */
#include "judge/engines.h"

#include <stdlib.h>
#include <string.h>

int af_engine_list_make(af_backend *be, const af_case *c, const char *engine, af_engine_list *l, char *why,
                        size_t cap) {
    memset(l, 0, sizeof *l);
    l->count = 1;
    if (!engine) engine = "";
    bool all = !strcmp(engine, "all");
    if (!all || !be->engines) {
        /* "all" on a backend without a config list: its one (default) engine */
        snprintf(l->single, sizeof l->single, "%s", all ? "" : engine);
        return 0;
    }
    l->count = 0;
    l->names = calloc(AF_ENGINE_LIST_MAX, sizeof *l->names);
    if (!l->names) {
        snprintf(why, cap, "out of memory listing engine configs");
        return -1;
    }
    char list_why[512] = "";
    int n = be->engines(be, c, l->names, AF_ENGINE_LIST_MAX, list_why, sizeof list_why);
    if (n <= 0) {
        snprintf(why, cap, "%s", n < 0 ? list_why : "no engine config finalizes for this case");
        return -1;
    }
    l->count = n;
    return 0;
}

void af_engine_list_free(af_engine_list *l) {
    free(l->names);
    memset(l, 0, sizeof *l);
}

const char *af_engine_list_name(const af_engine_list *l, int i) { return l->names ? l->names[i] : l->single; }

void af_judge_engines(af_runner *r, af_prepared *p, af_backend *be, const af_engine_list *l, const char *what,
                      bool want_outputs, af_context_state *ctx, af_engine_verdict_fn on_verdict, void *user) {
    af_verdict *v = malloc(sizeof *v);
    if (!v) return;
    for (int i = 0; i < l->count; i++) {
        const char *engine = af_engine_list_name(l, i);
        if (af_context_lost_verdict(be, ctx->lost, be->name, engine, v)) {
            on_verdict(user, engine, v, false, NULL);
            continue;
        }
        af_tensors t;
        memset(&t, 0, sizeof t);
        af_judge(r, p, be, engine, v, want_outputs ? &t : NULL);
        af_context_note(be, v, what, engine, ctx->lost, sizeof ctx->lost);
        on_verdict(user, engine, v, true, want_outputs ? &t : NULL);
        if (want_outputs) af_tensors_free(&t);
    }
    free(v);
}
