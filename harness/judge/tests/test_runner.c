/* test_runner.c — the runner's handling of runs that produce no outputs, and of its
 * working copies:
 *   1. a crash is a finding about the whole run: no tensor (AF_T_NONE), printed "-" in
 *      the verdict line, the JSON and the signature, so its bucket is the one of a crash
 *      verdict that carries no finding at all (the campaign's fatal verdicts);
 *   2. af_clone_tensors copies the template bit for bit and shares mxfp8's scale arrays
 *      read-only, also into buffers a released copy left in the case's pool (scribbled
 *      over first); af_clone_release gives the copy's buffers to the pool and leaves the
 *      template's scales.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge/clone.h"
#include "judge/runner.h"
#include "judge/signature.h"
#include "judge/verdict_json.h"
#include "util/check.h"

static af_run_status crash_supports(af_backend *be, const af_case *c, char *why, size_t cap) {
    (void)be, (void)c, (void)why, (void)cap;
    return AF_RUN_OK;
}
static af_run_status crash_run(af_backend *be, const af_case *c, const char *engine, af_tensors *t, af_run_info *info,
                               char *why, size_t cap) {
    (void)be, (void)c, (void)engine, (void)t, (void)info;
    snprintf(why, cap, "illegal memory access");
    return AF_RUN_CRASH;
}

static void crash_has_no_tensor(void) {
    af_backend crasher;
    memset(&crasher, 0, sizeof crasher);
    crasher.name = "crasher";
    crasher.supports = crash_supports;
    crasher.run = crash_run;
    af_runner r;
    memset(&r, 0, sizeof r);
    r.skip_oracle = true;
    af_case c;
    af_case_defaults(&c);
    af_prepared p;
    char why[256];
    CHECK_MSG(af_prepare(&r, &c, &p, why, sizeof why) == 0, "%s", why);
    af_verdict v;
    af_judge(&r, &p, &crasher, "", &v, NULL);
    CHECK(v.kind == AF_V_CRASH && v.n_findings == 1);
    const af_finding *f = &v.findings[0];
    CHECK(f->tensor == AF_T_NONE && f->b == -1 && f->h == -1 && f->row == -1 && f->col == -1);
    CHECK(strcmp(af_tensor_name(f->tensor), "-") == 0);
    CHECK(strstr(f->detail, "illegal memory access") != NULL);

    char line[1024];
    af_verdict_line(&v, line, sizeof line);
    CHECK_MSG(strncmp(line, "FINDING crash - b-1", 19) == 0, "%s", line);

    char json[8192] = "";
    FILE *mem = fmemopen(json, sizeof json - 1, "w");
    CHECK(mem);
    af_json_verdict(mem, "x.case", &v);
    fclose(mem);
    CHECK_MSG(strstr(json, "\"kind\":\"crash\",\"tensor\":\"-\"") != NULL, "%s", json);

    char sig[AF_SIGNATURE_MAX], bare_sig[AF_SIGNATURE_MAX];
    af_signature(&c, &v, sig, sizeof sig);
    CHECK_MSG(strncmp(sig, "crash|crasher|-|", 16) == 0, "%s", sig);
    af_verdict bare;
    af_verdict_init(&bare, "crasher");
    bare.kind = AF_V_CRASH;
    af_signature(&c, &bare, bare_sig, sizeof bare_sig);
    CHECK_MSG(strcmp(sig, bare_sig) == 0, "%s vs %s", sig, bare_sig);
    af_prepared_free(&p);
}

static void clone_shares_scales(void) {
    af_runner r;
    memset(&r, 0, sizeof r);
    r.skip_oracle = true;
    af_case c;
    af_case_defaults(&c);
    c.dtype = AF_DT_MXFP8;
    c.head_dim_qk = c.head_dim_v = 64;
    af_prepared p;
    char why[256];
    CHECK_MSG(af_prepare(&r, &c, &p, why, sizeof why) == 0, "%s", why);
    CHECK(p.tensors.mx_scale_q && p.tensors.mx_scale_k && p.tensors.mx_scale_v);
    uint8_t first_scale = p.tensors.mx_scale_v[0];
    /* round 0 allocates afresh and scribbles over the copy before giving its buffers to
     * the case's pool; round 1 takes those same blocks and must again hold the template
     * byte for byte (guards and poison included); round 2 copies without a pool */
    CHECK(p.clones != NULL);
    void *given[AF_BUF_COUNT] = {0};
    int n_bufs = 0;
    for (int round = 0; round < 3; round++) {
        af_tensors w;
        af_clone_pool *pool = round < 2 ? p.clones : NULL;
        CHECK_MSG(af_clone_tensors(&w, &c, &p.tensors, pool, why, sizeof why) == 0, "%s", why);
        for (int i = 0; i < AF_BUF_COUNT; i++) {
            CHECK((w.alloc[i] == NULL) == (p.tensors.alloc[i] == NULL) && w.bytes[i] == p.tensors.bytes[i]);
            if (w.alloc[i]) {
                CHECK(w.alloc[i] != p.tensors.alloc[i]);
                CHECK(memcmp(w.alloc[i], p.tensors.alloc[i], w.bytes[i] + 2 * AF_GUARD_BYTES) == 0);
                if (round == 1) { /* one of the pool's blocks (buffers of equal size may trade places) */
                    bool reused = false;
                    for (int j = 0; j < AF_BUF_COUNT; j++) reused |= w.alloc[i] == given[j];
                    CHECK(reused);
                }
            }
        }
        CHECK(w.mx_scale_q == p.tensors.mx_scale_q && w.mx_scale_k == p.tensors.mx_scale_k &&
              w.mx_scale_v == p.tensors.mx_scale_v);
        int held = -1;
        if (round == 0) {
            for (int i = 0; i < AF_BUF_COUNT; i++) {
                given[i] = w.alloc[i];
                if (w.alloc[i]) {
                    memset(w.alloc[i], 0x5a, w.bytes[i] + 2 * AF_GUARD_BYTES);
                    n_bufs++;
                }
            }
            af_clone_pool_held(p.clones, &held);
            CHECK(held == 0);
        }
        if (round == 1) {
            af_clone_pool_held(p.clones, &held);
            CHECK(held == 0); /* every block taken again */
        }
        af_clone_release(&w, pool);
        if (round < 2) {
            af_clone_pool_held(p.clones, &held);
            CHECK(held == n_bufs); /* the copy's buffers kept, the shared scales not */
        }
        /* the template's scales survive the copy's release (ASan would see a free) */
        CHECK(p.tensors.mx_scale_v[0] == first_scale);
    }
    af_prepared_free(&p);
}

int main(void) {
    crash_has_no_tensor();
    clone_shares_scales();
    CHECK_DONE("test_runner");
}
