/* ref_gpu.cu — the GPU reference's driver (ref_gpu.h): what it serves, the device run
 * (forward, then D, dQ, dK/dV), and the host entry from dense inputs to dense outputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime.h>

#include "kernels/af_gpu.h"
#include "util/clock.h"
#include "util/parfor.h"
#include "kernels/dense_rows.cuh"
#include "kernels/ref_gpu.h"
#include "kernels/ref_gpu_launch.h"
#include "model/numeric.h"

extern "C" af_run_status af_ref_gpu_supports(const af_case *c, char *why, size_t cap) {
    if (why && cap) why[0] = '\0';
    if (c->dtype != AF_DT_FP16 && c->dtype != AF_DT_BF16) {
        snprintf(why, cap, "gpu reference: serves fp16 and bf16 only (not %s)",
                 c->dtype == AF_DT_FP8_E4M3   ? "fp8_e4m3"
                 : c->dtype == AF_DT_FP8_E5M2 ? "fp8_e5m2"
                                              : "mxfp8");
        return AF_RUN_DECLINED;
    }
    if (c->kv_dtype != AF_KV_SAME) { /* reads K, V as the dtype: the cpu reference dequantises them */
        snprintf(why, cap, "gpu reference: kv_dtype = %s (fp8 K, V) is not served", af_kv_dtype_name(c->kv_dtype));
        return AF_RUN_DECLINED;
    }
    if (c->batch < 1 || c->batch > AF_MAX_BATCH || c->heads_kv < 1 || c->heads_q < 1 || c->heads_q % c->heads_kv != 0 ||
        c->head_dim_qk < 1 || c->head_dim_v < 1 || c->seqlen_q < 0 || c->seqlen_kv < 0) {
        snprintf(why, cap, "gpu reference: invalid shape");
        return AF_RUN_DECLINED;
    }
    if (c->cp_size > 1) {
        snprintf(why, cap, "gpu reference: context parallelism (cp %d) is not served", c->cp_size);
        return AF_RUN_DECLINED;
    }
    if (c->heads_v != 0 && c->heads_v != c->heads_kv) { /* its V is indexed by K's head: the cpu reference serves it */
        snprintf(why, cap, "gpu reference: heads_v = %d != heads_kv = %d is not served", c->heads_v, c->heads_kv);
        return AF_RUN_DECLINED;
    }
    if (af_case_has_features(c)) {
        char features[160];
        af_case_features_text(c, features, sizeof features);
        snprintf(why, cap, "gpu reference: features are not implemented (%s): the cpu reference serves them", features);
        return AF_RUN_DECLINED;
    }
    return AF_RUN_OK;
}

static af_run_status cuda_status(cudaError_t e, const char *what, char *why, size_t cap) {
    if (e == cudaSuccess) return AF_RUN_OK;
    /* af_gpu_sync classifies (sticky errors -> AF_RUN_CRASH) and fills why */
    af_run_status st = af_gpu_sync(what, why, cap);
    if (st != AF_RUN_OK) return st;
    snprintf(why, cap, "%s: CUDA error %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
    (void)cudaGetLastError();
    return e == cudaErrorMemoryAllocation ? AF_RUN_RESOURCE : AF_RUN_ERROR;
}

/* Launch one phase between two events; its device time in *ms. */
static af_run_status timed(cudaError_t (*launch)(const af_ref_gpu_desc *, const af_ref_gpu_buffers *),
                           const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g, const char *what, float *ms,
                           char *why, size_t cap) {
    cudaEvent_t e0 = NULL, e1 = NULL;
    bool ev = cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess;
    if (ev) (void)cudaEventRecord(e0, 0);
    af_run_status st = cuda_status(launch(d, g), what, why, cap);
    if (st == AF_RUN_OK) st = af_gpu_sync(what, why, cap);
    if (ev && st == AF_RUN_OK) {
        (void)cudaEventRecord(e1, 0);
        (void)cudaEventSynchronize(e1);
        if (ms) (void)cudaEventElapsedTime(ms, e0, e1);
    }
    if (e0) (void)cudaEventDestroy(e0);
    if (e1) (void)cudaEventDestroy(e1);
    return st;
}

/* *all_ok = 0 unless every x[0..n) is a value of the dtype (bitwise round trip: NaN
 * fails, +-inf and +-0 pass), for bf16 also 0, inf or of magnitude in [2^-63, 2^63]. */
__global__ void rg_check_inputs_kernel(const float *x, int64_t n, bool fp16, int *all_ok) {
    bool ok = true;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        float v = x[e], a = fabsf(v);
        if (fp16) {
            ok = ok && __float_as_uint(af_f16_to_f32(af_f32_to_f16(v))) == __float_as_uint(v);
        } else {
            ok = ok && __float_as_uint(af_bf16_to_f32(af_f32_to_bf16(v))) == __float_as_uint(v) &&
                 (a == 0.0f || isinf(a) || (a >= 0x1p-63f && a <= 0x1p63f));
        }
    }
    if (!__all_sync(0xffffffffu, ok) && (threadIdx.x & 31) == 0) atomicAnd(all_ok, 0);
}

/* Which GEMM products are exact in fp32 (rg_mac): 2 (all) for an fp16 case whose Q, K,
 * V (and dO) hold fp16 values (P and dS are rounded to fp16 before their GEMMs: every
 * product is of two fp16 values); 1 (Q K and dO V only) for a bf16 case whose inputs are
 * bf16 values of magnitude 0, inf or in [2^-63, 2^63]: products of 8-bit significands in
 * [2^-126, 2^126], fp32's normal range (P and dS may be tiny: their products may
 * underflow); else 0. One read of the inputs. */
static af_run_status exact_products(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g, int *exact, char *why,
                                    size_t cap) {
    *exact = 0;
    int64_t nq = (int64_t)d->B * d->Hq * d->Sq, nkv = (int64_t)d->B * d->Hkv * d->Skv;
    int *flag = NULL, one = 1;
    af_run_status st = af_gpu_malloc((void **)&flag, sizeof(int), why, cap);
    if (st == AF_RUN_OK) st = af_gpu_h2d(flag, &one, sizeof one, why, cap);
    const float *arr[4] = {g->q, g->k, g->v, d->backward ? g->dout : NULL};
    int64_t len[4] = {nq * d->Dqk, nkv * d->Dqk, nkv * d->Dv, nq * d->Dv};
    for (int t = 0; t < 4 && st == AF_RUN_OK; t++) {
        if (!arr[t] || len[t] == 0) continue;
        int64_t blocks = (len[t] + 255) / 256;
        rg_check_inputs_kernel<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256>>>(arr[t], len[t], d->round_fp16, flag);
        st = cuda_status(cudaGetLastError(), "gpu reference: input check", why, cap);
    }
    if (st == AF_RUN_OK) st = af_gpu_sync("gpu reference: input check", why, cap);
    if (st == AF_RUN_OK) st = af_gpu_d2h(&one, flag, sizeof one, why, cap);
    if (st == AF_RUN_OK && one != 0) *exact = d->round_fp16 ? 2 : 1;
    af_gpu_free(flag);
    return st;
}

extern "C" af_run_status af_ref_gpu_run_device(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *buf,
                                               af_ref_gpu_timing *tm, char *why, size_t cap) {
    af_ref_gpu_timing local;
    memset(&local, 0, sizeof local);
    af_ref_gpu_desc run = *d;
    run.exact_products = 0;
    af_run_status st = AF_RUN_OK;
    if (run.kernels != AF_REF_GPU_KERNELS_OLD) st = exact_products(&run, buf, &run.exact_products, why, cap);
    d = &run;
    if (st == AF_RUN_OK) st = timed(rg_launch_fwd, d, buf, "gpu reference forward", &local.fwd_ms, why, cap);
    if (st == AF_RUN_OK && d->backward)
        st = timed(rg_launch_delta, d, buf, "gpu reference D = dO . O", &local.delta_ms, why, cap);
    if (st == AF_RUN_OK && d->backward) st = timed(rg_launch_dq, d, buf, "gpu reference dQ", &local.dq_ms, why, cap);
    if (st == AF_RUN_OK && d->backward)
        st = timed(rg_launch_dkdv, d, buf, "gpu reference dK dV", &local.dkdv_ms, why, cap);
    if (tm) {
        tm->fwd_ms = local.fwd_ms;
        tm->delta_ms = local.delta_ms;
        tm->dq_ms = local.dq_ms;
        tm->dkdv_ms = local.dkdv_ms;
    }
    return st;
}

/* ---- host entry ------------------------------------------------------------------- */

/* The host conversions of upload and download, on af_parfor threads in chunks of
 * CONVERT_CHUNK elements (each element on its own: the same values on any thread count). */
#define CONVERT_CHUNK (1 << 20)
typedef struct {
    const double *d_src; /* upload: double -> float */
    float *f_dst;
    const float *f_src; /* download: float -> double, rows s >= len[b] as 0 */
    double *d_dst;
    int64_t n;
    int H, S, D;
    const int *len;
} convert_pass;

static void convert_chunk(void *ctx, long i) {
    const convert_pass *x = (const convert_pass *)ctx;
    int64_t e0 = (int64_t)i * CONVERT_CHUNK, e1 = e0 + CONVERT_CHUNK < x->n ? e0 + CONVERT_CHUNK : x->n;
    if (x->d_src) {
        for (int64_t e = e0; e < e1; e++) x->f_dst[e] = (float)x->d_src[e];
        return;
    }
    for (int64_t e = e0; e < e1; e++) { /* e = ((b H + h) S + s) D + k */
        int64_t row = e / x->D;
        int s = (int)(row % x->S), b = (int)(row / x->S / x->H);
        x->d_dst[e] = s < x->len[b] ? (double)x->f_src[e] : 0.0;
    }
}

static void convert(convert_pass *x) {
    long chunks = (long)((x->n + CONVERT_CHUNK - 1) / CONVERT_CHUNK);
    af_parfor(chunks, af_parfor_threads((double)x->n), convert_chunk, x);
}

/* One host staging array of fp32 for every upload and download of a run, sized for the
 * largest tensor and mapped once on af_parfor threads: a fresh malloc per transfer faulted
 * its pages one at a time inside the pageable cudaMemcpy's single thread (about a second
 * for the five downloads of b1 h16 s32768 d128). */
static af_run_status staging_new(float **stage, int64_t n, char *why, size_t cap) {
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    *stage = (float *)malloc(bytes);
    if (!*stage) {
        snprintf(why, cap, "gpu reference: out of host memory (%zu bytes)", bytes);
        return AF_RUN_RESOURCE;
    }
    af_par_memset(*stage, 0, bytes);
    return AF_RUN_OK;
}

/* Device copy of a dense double array (n <= the staging array's elements) as fp32 (exact: fp16/bf16 stored values). */
static af_run_status upload(float *stage, float **dev, const double *src, int64_t n, char *why, size_t cap) {
    *dev = NULL;
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    convert_pass x = {src, stage, NULL, NULL, n, 1, 1, 1, NULL};
    convert(&x);
    af_run_status st = af_gpu_malloc((void **)dev, bytes, why, cap);
    if (st == AF_RUN_OK) st = af_gpu_h2d(*dev, stage, bytes, why, cap);
    return st;
}

/* dst (B, H, S, D) doubles from the device's fp32 (B, H, S, D) (B H S D <= the staging array's elements): rows
 * s < len[b] only, the others 0 (as af_outputs_read leaves them). */
static af_run_status download(float *stage, double *dst, const float *dev, int B, int H, int S, int D, const int *len,
                              char *why, size_t cap) {
    int64_t n = (int64_t)B * H * S * D;
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    af_run_status st = af_gpu_d2h(stage, dev, bytes, why, cap);
    if (st == AF_RUN_OK && n > 0) {
        convert_pass x = {NULL, NULL, stage, dst, n, H, S, D, len};
        convert(&x);
    }
    return st;
}

/* dst (n) fp32 from src (n) fp64, element by element: exact (the inputs are fp16 / bf16
 * values), as the host's (float) conversion. */
__global__ void narrow_kernel(const double *src, float *dst, int64_t n) {
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x)
        dst[e] = (float)src[e];
}

/* dst (B, H, S, D) fp64 from src fp32 (B, H, S, D): download()'s values on the device. */
__global__ void widen_kernel(const float *src, double *dst, int64_t n, af_dense_rows r) {
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x)
        dst[e] = af_dense_row_valid(r, e) ? (double)src[e] : 0.0;
}

/* Device fp32 copy of a device fp64 array (the oracle's kept inputs). */
static af_run_status narrow(float **dev, const double *src, int64_t n, char *why, size_t cap) {
    *dev = NULL;
    af_run_status st = af_gpu_malloc((void **)dev, (size_t)(n > 0 ? n : 1) * sizeof(float), why, cap);
    if (st != AF_RUN_OK || n == 0) return st;
    narrow_kernel<<<af_gpu_grid(n), AF_GPU_GRID_THREADS>>>(src, *dev, n);
    return af_gpu_sync("gpu reference: narrow inputs", why, cap);
}

/* *dst: a device fp64 copy of src (B, H, S, D) by download()'s rule; AF_RUN_RESOURCE (nothing
 * kept) when device memory is short. */
static af_run_status widen(double **dst, const float *src, int B, int H, int S, int D, const int *len, char *why,
                           size_t cap) {
    int64_t n = (int64_t)B * H * S * D;
    af_run_status st = af_gpu_malloc((void **)dst, (size_t)(n > 0 ? n : 1) * sizeof(double), why, cap);
    if (st != AF_RUN_OK || n == 0) return st;
    widen_kernel<<<af_gpu_grid(n), AF_GPU_GRID_THREADS>>>(src, *dst, n, af_dense_rows_of(B, H, S, D, len));
    return af_gpu_sync("gpu reference: keep outputs", why, cap);
}

extern "C" void af_ref_gpu_kept_free(af_ref_gpu_kept *k) {
    if (!k) return;
    for (int i = 0; i < 5; i++) af_gpu_free(k->owned[i]);
    free(k);
}

/* The outputs' device copies (af_ref_gpu_dev.keep); NULL when device or host memory is
 * short (the run's host outputs stand either way). */
static af_ref_gpu_kept *keep_outputs(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g) {
    af_ref_gpu_kept *k = (af_ref_gpu_kept *)calloc(1, sizeof *k);
    if (!k) return NULL;
    char why[256];
    const float *src[5] = {g->o, g->lse, g->dq, g->dk, g->dv};
    int H[5] = {d->Hq, d->Hq, d->Hq, d->Hkv, d->Hkv}, D[5] = {d->Dv, 1, d->Dqk, d->Dqk, d->Dv};
    bool kv[5] = {false, false, false, true, true};
    int n = d->backward ? 5 : 2;
    for (int i = 0; i < n; i++) {
        if (widen(&k->owned[i], src[i], d->B, H[i], kv[i] ? d->Skv : d->Sq, D[i], kv[i] ? d->len_kv : d->len_q, why,
                  sizeof why) != AF_RUN_OK) {
            af_ref_gpu_kept_free(k);
            return NULL;
        }
        k->bytes += (double)d->B * H[i] * (kv[i] ? d->Skv : d->Sq) * D[i] * sizeof(double);
    }
    k->out.o = k->owned[0], k->out.lse = k->owned[1];
    k->out.dq = k->owned[2], k->out.dk = k->owned[3], k->out.dv = k->owned[4];
    return k;
}

extern "C" af_run_status af_ref_gpu_run(const af_ref_gpu_desc *d, const af_inputs *in, const af_ref_gpu_dev *dev,
                                        af_outputs *out, af_ref_gpu_timing *tm, char *why, size_t cap) {
    double t0 = af_clock_mono();
    int64_t nq = (int64_t)d->B * d->Hq * d->Sq, nkv = (int64_t)d->B * d->Hkv * d->Skv;
    af_ref_gpu_buffers g;
    memset(&g, 0, sizeof g);
    float *q = NULL, *k = NULL, *v = NULL, *dout = NULL;
    int64_t dmax = d->Dqk > d->Dv ? d->Dqk : d->Dv;
    const af_inputs_dev *din =
        dev && dev->in && dev->in->q && dev->in->k && dev->in->v && (!d->backward || dev->in->dout) ? dev->in : NULL;
    if (dev && dev->keep) *dev->keep = NULL;
    float *stage = NULL; /* (max(nq, nkv) max(Dqk, Dv)) */
    af_run_status st = staging_new(&stage, (nq > nkv ? nq : nkv) * dmax, why, cap);
    if (din) { /* the oracle's device inputs, narrowed there: no host conversion, no upload */
        if (st == AF_RUN_OK) st = narrow(&q, din->q, nq * d->Dqk, why, cap);
        if (st == AF_RUN_OK) st = narrow(&k, din->k, nkv * d->Dqk, why, cap);
        if (st == AF_RUN_OK) st = narrow(&v, din->v, nkv * d->Dv, why, cap);
        if (st == AF_RUN_OK && d->backward) st = narrow(&dout, din->dout, nq * d->Dv, why, cap);
    } else {
        if (st == AF_RUN_OK) st = upload(stage, &q, in->q, nq * d->Dqk, why, cap);
        if (st == AF_RUN_OK) st = upload(stage, &k, in->k, nkv * d->Dqk, why, cap);
        if (st == AF_RUN_OK) st = upload(stage, &v, in->v, nkv * d->Dv, why, cap);
        if (st == AF_RUN_OK && d->backward) st = upload(stage, &dout, in->dout, nq * d->Dv, why, cap);
    }
    g.q = q;
    g.k = k;
    g.v = v;
    g.dout = dout;
    if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&g.o, (size_t)nq * d->Dv * sizeof(float), why, cap);
    if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&g.lse, (size_t)nq * sizeof(float), why, cap);
    if (st == AF_RUN_OK && d->backward) {
        st = af_gpu_malloc((void **)&g.delta, (size_t)nq * sizeof(float), why, cap);
        if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&g.dq, (size_t)nq * d->Dqk * sizeof(float), why, cap);
        if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&g.dk, (size_t)nkv * d->Dqk * sizeof(float), why, cap);
        if (st == AF_RUN_OK) st = af_gpu_malloc((void **)&g.dv, (size_t)nkv * d->Dv * sizeof(float), why, cap);
    }
    double t1 = af_clock_mono();
    if (st == AF_RUN_OK) st = af_ref_gpu_run_device(d, &g, tm, why, cap);
    double t2 = af_clock_mono();
    if (st == AF_RUN_OK) st = download(stage, out->o, g.o, d->B, d->Hq, d->Sq, d->Dv, d->len_q, why, cap);
    if (st == AF_RUN_OK) st = download(stage, out->lse, g.lse, d->B, d->Hq, d->Sq, 1, d->len_q, why, cap);
    if (st == AF_RUN_OK && d->backward) {
        st = download(stage, out->dq, g.dq, d->B, d->Hq, d->Sq, d->Dqk, d->len_q, why, cap);
        if (st == AF_RUN_OK) st = download(stage, out->dk, g.dk, d->B, d->Hkv, d->Skv, d->Dqk, d->len_kv, why, cap);
        if (st == AF_RUN_OK) st = download(stage, out->dv, g.dv, d->B, d->Hkv, d->Skv, d->Dv, d->len_kv, why, cap);
    }
    if (st == AF_RUN_OK && dev && dev->keep) *dev->keep = keep_outputs(d, &g);
    free(stage);
    af_gpu_free(q);
    af_gpu_free(k);
    af_gpu_free(v);
    af_gpu_free(dout);
    af_gpu_free(g.o);
    af_gpu_free(g.lse);
    af_gpu_free(g.delta);
    af_gpu_free(g.dq);
    af_gpu_free(g.dk);
    af_gpu_free(g.dv);
    if (tm) {
        tm->upload_s = t1 - t0;
        tm->download_s = af_clock_mono() - t2;
    }
    return st;
}
