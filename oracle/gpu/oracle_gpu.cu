/* oracle_gpu.cu — host side of the GPU oracle tier (oracle_gpu.h): device buffers,
 * transfers, the order of the passes, errors as messages.
 *
 * Passes: forward (O, LSE) -> D_i -> dQ -> dK, dV. Device memory: the inputs, the outputs
 * and three (B,Hq,Sq) statistics, all O(s); nothing of size Sq x Skv.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime.h>
#include "kernels/af_gpu.h"
#include "oracle/gpu/oracle_gpu_dev.cuh"
#include "util/clock.h"
#include "util/config.h"
#include "util/parfor.h"

/* Every device allocation of one call, freed together; tracks the peak. */
#define OG_MAX_ALLOCS 24
typedef struct {
    void *ptr[OG_MAX_ALLOCS];
    int n;
    double bytes, peak;
} og_arena;

static int og_fail(cudaError_t e, const char *what, char *why, size_t cap) {
    snprintf(why, cap, "oracle gpu: %s: CUDA error %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
    (void)cudaGetLastError();
    return -1;
}

static int og_alloc(og_arena *a, double **dev, size_t count, char *why, size_t cap) {
    size_t bytes = (count ? count : 1) * sizeof(double);
    *dev = NULL;
    if (a->n == OG_MAX_ALLOCS) {
        snprintf(why, cap, "oracle gpu: too many buffers");
        return -1;
    }
    cudaError_t e = af_gpu_malloc_cuda((void **)dev, bytes); /* the device's pool (kernels/af_gpu.h) */
    if (e != cudaSuccess) return og_fail(e, "device memory", why, cap);
    a->ptr[a->n++] = *dev;
    a->bytes += (double)bytes;
    if (a->bytes > a->peak) a->peak = a->bytes;
    return 0;
}

static void og_arena_free(og_arena *a) {
    for (int k = 0; k < a->n; k++) af_gpu_free(a->ptr[k]);
    a->n = 0;
    a->bytes = 0;
}

static int og_put(og_arena *a, double **dev, const double *host, size_t count, char *why, size_t cap) {
    if (og_alloc(a, dev, count, why, cap)) return -1;
    cudaError_t e = host ? cudaMemcpy(*dev, host, count * sizeof(double), cudaMemcpyHostToDevice)
                         : cudaMemset(*dev, 0, (count ? count : 1) * sizeof(double));
    return e == cudaSuccess ? 0 : og_fail(e, "copy to device", why, cap);
}

static int og_get(double *host, const double *dev, size_t count, char *why, size_t cap) {
    cudaError_t e = cudaMemcpy(host, dev, count * sizeof(double), cudaMemcpyDeviceToHost);
    return e == cudaSuccess ? 0 : og_fail(e, "copy to host", why, cap);
}

extern "C" int af_oracle_gpu_usable(char *why, size_t cap) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, cap, "no usable CUDA device: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        (void)cudaGetLastError();
        return -1;
    }
    if (n == 0) {
        snprintf(why, cap, "no CUDA device present");
        return -1;
    }
    return 0;
}

extern "C" int af_oracle_gpu_supports(const af_oracle_problem *p, char *why, size_t cap) {
    if (!p->len_q || !p->len_kv) {
        snprintf(why, cap, "oracle gpu: lengths must be set");
        return -1;
    }
    return af_oracle_gpu_implements(p, why, cap);
}

static int og_dmax(const af_oracle_problem *p) {
    int m = p->Dqk > p->Dv ? p->Dqk : p->Dv;
    return m <= 64 ? 64 : m <= 128 ? 128 : 256;
}

/* The tile products on the fp64 tensor cores when ATTNFUZZ_ORACLE_GPU_MMA is "1"
 * (mma m8n8k4) or "2" (m16n8k4), else plain fma chains on the CUDA cores (all within the
 * tier's stated bound; the tensor cores stay opt-in until they have run against MPFR on
 * a GPU). Another value is said once on stderr and the chains kept. */
static int og_mma_wanted(void) {
    const char *e = af_config_get(AF_CFG_ORACLE_GPU_MMA);
    if (!e || strcmp(e, "0") == 0) return 0;
    if (strcmp(e, "1") == 0) return 1;
    if (strcmp(e, "2") == 0) return 2;
    af_config_warn_once(AF_CFG_ORACLE_GPU_MMA, "is none of 0, 1, 2 (0 kept)");
    return 0;
}

/* Problem dims + uploaded lengths and inputs (dout only when `with_dout`; p->in_dev's
 * device arrays instead of uploads when it has them). */
static int og_setup(const af_oracle_problem *p, bool with_dout, og_arena *a, og_dims *d, og_bufs *m, char *why,
                    size_t cap) {
    memset(d, 0, sizeof *d);
    memset(m, 0, sizeof *m);
    d->mma = og_mma_wanted();
    d->B = p->B, d->Hq = p->Hq, d->Hkv = p->Hkv, d->Sq = p->Sq, d->Skv = p->Skv;
    d->Dqk = p->Dqk, d->Dv = p->Dv, d->group = p->Hq / p->Hkv;
    d->scale = p->scale;
    d->mask = p->mask;
    if (af_oracle_gpu_supports(p, why, cap)) return -1;
    double *lens;
    if (og_alloc(a, &lens, (size_t)p->B, why, cap)) return -1; /* 2B ints fit in B doubles */
    int *li = (int *)lens;
    cudaError_t e = cudaMemcpy(li, p->len_q, (size_t)p->B * sizeof(int), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(li + p->B, p->len_kv, (size_t)p->B * sizeof(int), cudaMemcpyHostToDevice);
    if (e != cudaSuccess) return og_fail(e, "copy lengths", why, cap);
    d->len_q = li;
    d->len_kv = li + p->B;
    size_t rows = (size_t)p->B * p->Hq * p->Sq, keys = (size_t)p->B * p->Hkv * p->Skv;
    const af_inputs_dev *dv = p->in_dev;
    if (dv && dv->q && dv->k && dv->v && (!with_dout || dv->dout)) { /* made on the device: read there */
        m->q = dv->q, m->k = dv->k, m->v = dv->v, m->dout = with_dout ? dv->dout : NULL;
        return 0;
    }
    double *q, *k, *v, *dout = NULL;
    if (og_put(a, &q, p->in->q, rows * p->Dqk, why, cap) || og_put(a, &k, p->in->k, keys * p->Dqk, why, cap) ||
        og_put(a, &v, p->in->v, keys * p->Dv, why, cap))
        return -1;
    if (with_dout && og_put(a, &dout, p->in->dout, rows * p->Dv, why, cap)) return -1;
    m->q = q, m->k = k, m->v = v, m->dout = dout;
    return 0;
}

static int og_wait(cudaError_t launch, const char *what, char *why, size_t cap) {
    if (launch != cudaSuccess) return og_fail(launch, what, why, cap);
    cudaError_t e = cudaDeviceSynchronize();
    return e == cudaSuccess ? 0 : og_fail(e, what, why, cap);
}

/* The magnitude passes' buffers (og_bufs' magnitude fields), O(s) each. */
static int og_mag_alloc(og_arena *a, size_t rows, size_t keys, og_bufs *m, char *why, size_t cap) {
    double *dm, *ddabs, *qmax, *domax, *kmax, *ra, *rb, *ka, *kb;
    if (og_put(a, &dm, NULL, rows, why, cap) || og_put(a, &ddabs, NULL, rows, why, cap) ||
        og_put(a, &qmax, NULL, rows, why, cap) || og_put(a, &domax, NULL, rows, why, cap) ||
        og_put(a, &kmax, NULL, keys, why, cap) || og_put(a, &ra, NULL, rows, why, cap) ||
        og_put(a, &rb, NULL, rows, why, cap) || og_put(a, &ka, NULL, keys, why, cap) ||
        og_put(a, &kb, NULL, keys, why, cap))
        return -1;
    m->drow_mag = dm, m->row_dd_abs = ddabs, m->row_qmax = qmax, m->row_domax = domax;
    m->key_kmax = kmax, m->row_a = ra, m->row_b = rb, m->key_a = ka, m->key_b = kb;
    return 0;
}

/* g = the maxima of the magnitude passes' per-row and per-key results. */
static int og_mag_collect(const og_bufs *m, size_t rows, size_t keys, af_grad_magnitudes *g, char *why, size_t cap) {
    double *host = (double *)malloc((rows > keys ? rows : keys) * sizeof(double));
    const double *src[4] = {m->row_a, m->row_b, m->key_a, m->key_b};
    double *dst[4] = {&g->dq, &g->ds_max, &g->dk, &g->dv};
    int rc = 0;
    if (!host) {
        snprintf(why, cap, "oracle gpu: out of host memory");
        return -1;
    }
    for (int k = 0; k < 4 && rc == 0; k++) {
        size_t n = k < 2 ? rows : keys;
        rc = og_get(host, src[k], n, why, cap);
        for (size_t x = 0; rc == 0 && x < n; x++) *dst[k] = fmax(*dst[k], host[x]);
    }
    free(host);
    return rc;
}

/* Map the host arrays the tier fills while its forward pass runs: their fresh pages (calloc /
 * malloc) otherwise fault one at a time inside the pageable downloads' single thread (about
 * 1.4 s of the 5.2 s tier at b1 h16 s32768 d128 on an H100: the same tier run again into
 * touched arrays took 3.8 s). Zeros on af_parfor threads; the downloads overwrite every
 * element. */
static void og_touch_outputs(const af_oracle_problem *p, af_outputs *out, double *lse64, double *drow64,
                             bool backward) {
    size_t rows = (size_t)p->B * p->Hq * p->Sq, keys = (size_t)p->B * p->Hkv * p->Skv;
    af_par_memset(out->o, 0, rows * p->Dv * sizeof(double));
    af_par_memset(out->lse, 0, rows * sizeof(double));
    if (lse64) af_par_memset(lse64, 0, rows * sizeof(double));
    if (!backward) return;
    af_par_memset(out->dq, 0, rows * p->Dqk * sizeof(double));
    af_par_memset(out->dk, 0, keys * p->Dqk * sizeof(double));
    af_par_memset(out->dv, 0, keys * p->Dv * sizeof(double));
    if (drow64) af_par_memset(drow64, 0, rows * sizeof(double));
}

/* The arena of a successful run handed to the caller with the addresses it wants
 * (af_oracle_gpu_run's keep); the scratch (lengths, statistics, magnitude buffers) is
 * O(s) and goes with it. NULL when out of host memory (the arena is then freed). */
static af_oracle_gpu_kept *og_keep(og_arena *a, const og_bufs *m, bool backward) {
    af_oracle_gpu_kept *k = (af_oracle_gpu_kept *)calloc(1, sizeof *k);
    og_arena *own = (og_arena *)malloc(sizeof *own);
    if (!k || !own) {
        free(k), free(own);
        return NULL;
    }
    *own = *a;
    a->n = 0; /* the caller's arena no longer frees them (its peak stays for the stats) */
    a->bytes = 0;
    k->owner = own;
    k->bytes = own->bytes;
    k->in.q = m->q, k->in.k = m->k, k->in.v = m->v, k->in.dout = m->dout;
    k->out.o = m->o, k->out.lse = m->lse;
    if (backward) k->out.dq = m->dq, k->out.dk = m->dk, k->out.dv = m->dv;
    return k;
}

extern "C" void af_oracle_gpu_kept_free(af_oracle_gpu_kept *k) {
    if (!k) return;
    og_arena *own = (og_arena *)k->owner;
    if (own) og_arena_free(own);
    free(own);
    free(k);
}

extern "C" int af_oracle_gpu_fetch(double *host, const double *dev, size_t count, char *why, size_t cap) {
    return count ? og_get(host, dev, count, why, cap) : 0;
}

extern "C" int af_oracle_gpu_run(const af_oracle_problem *p, af_outputs *out, double *lse64, double *drow64,
                                 const af_oracle_gpu_mags *mags, af_oracle_gpu_kept **keep, af_oracle_gpu_stats *st,
                                 char *why, size_t cap) {
    double t0 = af_clock_mono();
    if (keep) *keep = NULL;
    og_arena a;
    memset(&a, 0, sizeof a);
    og_dims d;
    og_bufs m;
    bool backward = p->in->dout != NULL;
    bool want_score = mags && mags->score_abs, want_grad = mags && mags->grad && backward;
    size_t rows = (size_t)p->B * p->Hq * p->Sq, keys = (size_t)p->B * p->Hkv * p->Skv;
    int dmax = og_dmax(p), rc = -1;
    double *o, *lse, *drow, *dq, *dk, *dv, *sa = NULL;
    double t_pass, fwd_s = 0, rows_s = 0, keys_s = 0;
    if (want_grad) memset(mags->grad, 0, sizeof *mags->grad);
    if (og_setup(p, backward, &a, &d, &m, why, cap) || og_put(&a, &o, NULL, rows * p->Dv, why, cap) ||
        og_put(&a, &lse, NULL, rows, why, cap) || (want_score && og_put(&a, &sa, NULL, rows, why, cap)))
        goto done;
    m.o = o, m.lse = lse, m.row_a = sa;
    /* mode 2: the score magnitudes (row_a) from the forward's own tiles */
    t_pass = af_clock_mono();
    {
        cudaError_t launch = og_launch_fwd(dmax, want_score ? 2 : 0, d, m);
        if (launch == cudaSuccess) og_touch_outputs(p, out, lse64, drow64, backward); /* beside the pass */
        if (og_wait(launch, "forward pass", why, cap)) goto done;
    }
    fwd_s = af_clock_mono() - t_pass;
    if (want_score && og_get(mags->score_abs, sa, rows, why, cap)) goto done;
    if (backward) {
        if (og_put(&a, &drow, NULL, rows, why, cap) || og_put(&a, &dq, NULL, rows * p->Dqk, why, cap) ||
            og_put(&a, &dk, NULL, keys * p->Dqk, why, cap) || og_put(&a, &dv, NULL, keys * p->Dv, why, cap) ||
            (want_grad && og_mag_alloc(&a, rows, keys, &m, why, cap)))
            goto done;
        m.drow = drow, m.dq = dq, m.dk = dk, m.dv = dv;
        /* mode 2: the gradients' term magnitudes from the dQ and dK / dV passes' tiles */
        int mode = want_grad ? 2 : 0;
        if (og_wait(og_launch_drow(d, m), "D_i pass", why, cap) ||
            (want_grad && og_wait(og_launch_mag_prep(d, m), "magnitude inputs", why, cap)))
            goto done;
        t_pass = af_clock_mono();
        if (og_wait(og_launch_bwd_rows(dmax, mode, d, m), "dQ pass", why, cap)) goto done;
        rows_s = af_clock_mono() - t_pass;
        t_pass = af_clock_mono();
        if (og_wait(og_launch_bwd_keys(dmax, mode, d, m), "dK/dV pass", why, cap)) goto done;
        keys_s = af_clock_mono() - t_pass;
        if (want_grad && og_mag_collect(&m, rows, keys, mags->grad, why, cap)) goto done;
    }
    if (og_get(out->o, o, rows * p->Dv, why, cap) || og_get(out->lse, lse, rows, why, cap)) goto done;
    if (lse64) memcpy(lse64, out->lse, rows * sizeof(double));
    if (backward && (og_get(out->dq, dq, rows * p->Dqk, why, cap) || og_get(out->dk, dk, keys * p->Dqk, why, cap) ||
                     og_get(out->dv, dv, keys * p->Dv, why, cap) || (drow64 && og_get(drow64, drow, rows, why, cap))))
        goto done;
    rc = 0;
    if (keep) *keep = og_keep(&a, &m, backward); /* NULL (out of host memory): nothing kept */
done:
    if (st) {
        st->peak_bytes = a.peak;
        st->seconds = af_clock_mono() - t0;
        st->fwd_s = fwd_s, st->rows_s = rows_s, st->keys_s = keys_s;
    }
    og_arena_free(&a);
    return rc;
}

extern "C" int af_oracle_gpu_score_abs(const af_oracle_problem *p, double *out, char *why, size_t cap) {
    og_arena a;
    memset(&a, 0, sizeof a);
    og_dims d;
    og_bufs m;
    size_t rows = (size_t)p->B * p->Hq * p->Sq;
    double *res;
    int rc = -1;
    if (og_setup(p, false, &a, &d, &m, why, cap) || og_put(&a, &res, NULL, rows, why, cap)) goto done;
    m.row_a = res;
    if (og_wait(og_launch_fwd(og_dmax(p), 1, d, m), "score magnitude pass", why, cap) ||
        og_get(out, res, rows, why, cap))
        goto done;
    rc = 0;
done:
    og_arena_free(&a);
    return rc;
}

extern "C" int af_oracle_gpu_grad_abs(const af_oracle_problem *p, const af_outputs *exact, af_grad_magnitudes *g,
                                      char *why, size_t cap) {
    memset(g, 0, sizeof *g);
    if (!p->in->dout || !exact->o || !exact->lse) return 0;
    og_arena a;
    memset(&a, 0, sizeof a);
    og_dims d;
    og_bufs m;
    size_t rows = (size_t)p->B * p->Hq * p->Sq, keys = (size_t)p->B * p->Hkv * p->Skv;
    double *o, *lse;
    int rc = -1;
    if (og_setup(p, true, &a, &d, &m, why, cap) || og_put(&a, &o, exact->o, rows * p->Dv, why, cap) ||
        og_put(&a, &lse, exact->lse, rows, why, cap) || og_mag_alloc(&a, rows, keys, &m, why, cap))
        goto done;
    m.o = o, m.lse = lse;
    if (og_wait(og_launch_mag_prep(d, m), "magnitude inputs", why, cap) ||
        og_wait(og_launch_bwd_rows(og_dmax(p), 1, d, m), "row magnitude pass", why, cap) ||
        og_wait(og_launch_bwd_keys(og_dmax(p), 1, d, m), "key magnitude pass", why, cap) ||
        og_mag_collect(&m, rows, keys, g, why, cap))
        goto done;
    rc = 0;
done:
    og_arena_free(&a);
    return rc;
}
