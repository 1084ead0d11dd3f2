/* test_fuzz_envelope.c — the envelope learnt from declines (fuzz/fuzz_envelope.h).
 *
 * A fake backend declines head_dim % 8 != 0. A fuzzing loop draws cases (half of its
 * head dims odd), redraws the ones the envelope puts outside (8 tries, as the campaign's
 * in-process engine) and notes each run. Specification: the odd-head-dim cells are learnt
 * outside with the backend's reason and no served cell is; declined runs fall from about
 * half of the draws to the exploration share; when the backend starts serving them the
 * cells come back inside through exploration; the JSON lists the outside cells.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz/fuzz_envelope.h"
#include "util/check.h"
#include "util/rng.h"

typedef struct {
    bool serve_odd; /* the "new version": serves every head dim */
} fake_state;

static af_run_status fake_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    const fake_state *fs = be->state;
    if (!fs->serve_odd && (c->head_dim_qk % 8 || c->head_dim_v % 8)) {
        snprintf(why, cap, "fake: head_dim %% 8 != 0 (got %d, %d)", c->head_dim_qk, c->head_dim_v);
        return AF_RUN_DECLINED;
    }
    return AF_RUN_OK;
}

static const int dims[] = {64, 128, 72, 63, 100, 33};

static af_case draw(uint64_t *rng) {
    af_case c;
    af_case_defaults(&c);
    uint64_t r = af_rng_mix64(++*rng);
    c.dtype = r % 2 ? AF_DT_BF16 : AF_DT_FP16;
    c.head_dim_qk = c.head_dim_v = dims[(r >> 8) % 6];
    c.backward = (r >> 16) % 2;
    c.mask = (r >> 24) % 2 ? AF_MASK_CAUSAL : AF_MASK_NONE;
    return c;
}

/* n draws of the loop; returns how many runs were declined. */
static long long fuzz_loop(af_fuzz_envelope *env, af_backend *be, uint64_t *rng, int n) {
    long long declined = 0;
    for (int i = 0; i < n; i++) {
        af_case c = draw(rng);
        for (int attempt = 0; attempt < 8 && af_envelope_redraw(env, &c, af_rng_mix64(++*rng)); attempt++)
            c = draw(rng);
        char why[256] = "";
        bool d = be->supports(be, &c, why, sizeof why) == AF_RUN_DECLINED;
        declined += d;
        af_envelope_note(env, &c, d, why);
    }
    return declined;
}

int main(void) {
    fake_state fs = {false};
    af_backend be;
    memset(&be, 0, sizeof be);
    be.name = "fake";
    be.state = &fs;
    be.supports = fake_supports;
    static af_fuzz_envelope env;
    af_envelope_init(&env, be.name);
    uint64_t rng = 12345;

    /* learning: the first draws decline about half the time, later ones rarely */
    long long early = fuzz_loop(&env, &be, &rng, 200);
    long long late = fuzz_loop(&env, &be, &rng, 4000);
    printf("declined: %lld of the first 200 runs, %lld of the next 4000 (redrawn %lld, explored %lld)\n", early, late,
           env.redrawn, env.explored);
    CHECK(early > 40);
    CHECK(late < 4000 / 10); /* without the envelope: ~2000 */
    CHECK(env.explored > 0 && env.redrawn > env.explored);

    /* the outside cells are exactly the odd ones, with the backend's reason */
    int outside = 0;
    for (int i = 0; i < env.n_cells; i++) {
        const af_envelope_cell *cell = &env.cells[i];
        bool odd = strstr(cell->key, "/odd8") != NULL;
        bool out = cell->decline_streak >= AF_ENVELOPE_LEARN_AFTER;
        CHECK_MSG(odd == out, "cell %s streak %d", cell->key, cell->decline_streak);
        if (out) CHECK(strstr(cell->reason, "head_dim % 8 != 0"));
        outside += out;
    }
    /* odd classes 32-63/odd8 (63, 33) and 64-127/odd8 (100), x dtype x backward x mask */
    CHECK_MSG(outside == 2 * 2 * 2 * 2, "%d cells outside", outside);
    af_case odd = draw(&rng);
    odd.head_dim_qk = odd.head_dim_v = 63;
    CHECK(af_envelope_outside(&env, &odd));
    odd.head_dim_qk = odd.head_dim_v = 64;
    CHECK(!af_envelope_outside(&env, &odd));

    json_t *j = af_envelope_json(&env);
    CHECK(j && json_array_size(json_object_get(j, "outside")) == (size_t)outside);
    CHECK(strcmp(json_string_value(json_object_get(j, "backend")), "fake") == 0);
    json_decref(j);

    /* the backend changes: exploration finds it, every cell comes back inside */
    fs.serve_odd = true;
    CHECK(fuzz_loop(&env, &be, &rng, 20000) == 0);
    for (int i = 0; i < env.n_cells; i++) CHECK_MSG(env.cells[i].decline_streak == 0, "%s", env.cells[i].key);
    CHECK_DONE("test_fuzz_envelope");
}
