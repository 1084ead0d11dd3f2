/* criterion_rows.cu — a tensor's row summaries with their term fields on the device
 * (af_criterion_row_summaries_gpu, criterion_gpu.h).
 *
 * One thread per row (b, h, s) of the dense (B, H, S, D) arrays runs the host's two row
 * functions (af_row_summary_row of kernels/row_summary.h, af_row_terms_row of
 * judge/criterion/row_terms.h) in the host's order; this library is built with
 * -fmad=false, so each summary has the host's bits. The budgets kappa and mass are the
 * GPU pass's device copies (terms_dev.cuh) when it kept them, else uploaded; so are the
 * oracle's values when the pass kept the very array given; the kernel's, the reference's
 * and the per-run extra budget (dterm) are uploaded in chunks of rows.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "judge/criterion/criterion_gpu.h"
#include "judge/criterion/gpu/terms_dev.cuh"
#include "kernels/af_gpu.h"
#include "judge/criterion/row_terms.h"
#include "oracle/gpu/oracle_gpu.h"
extern "C" {
#include "judge/tolerance.h"
}

/* At most this many doubles per uploaded array (256 MiB). */
#define CR_CHUNK_DOUBLES (32ll << 20)
#define CR_THREADS       128

typedef struct {
    const double *kernel, *ref, *exact, *dterm; /* the chunk's rows (n, D); ref, dterm may be NULL */
    const double *kappa, *mass;                 /* the chunk's rows (n, D); mass may be NULL        */
    long long n;
    int D;
    double unit, min_normal, sub_half;
    af_row_summary *out; /* (n) */
} cr_args;

/* rows [0, a.n) of the chunk: one thread each */
__global__ void cr_rows_kernel(cr_args a) {
    long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= a.n) return;
    size_t e = (size_t)r * a.D;
    af_row_summary s;
    af_row_summary_row(a.kernel + e, a.ref ? a.ref + e : NULL, a.exact + e, a.D, &s);
    af_row_terms_row(a.kernel + e, a.ref ? a.ref + e : NULL, a.exact + e, a.kappa + e, a.mass ? a.mass + e : NULL,
                     a.dterm ? a.dterm + e : NULL, a.D, false, a.unit, a.min_normal, a.sub_half, &s);
    a.out[r] = s;
}

#define CR_TRY(expr)                                                                                                   \
    do {                                                                                                               \
        cudaError_t cr_e_ = (expr);                                                                                    \
        if (cr_e_ != cudaSuccess) {                                                                                    \
            snprintf(why, cap, "row summaries on the GPU: %s (%s:%d)", cudaGetErrorString(cr_e_), __FILE__, __LINE__); \
            rc = -1;                                                                                                   \
            goto done;                                                                                                 \
        }                                                                                                              \
    } while (0)

/* Copy rows [r0, r0 + n) of a host array (rows, D) to dev (NULL host: nothing). */
static cudaError_t cr_up(double *dev, const double *host, long long r0, long long n, int D) {
    if (!host) return cudaSuccess;
    return cudaMemcpy(dev, host + (size_t)r0 * D, (size_t)n * D * sizeof(double), cudaMemcpyHostToDevice);
}

extern "C" int af_criterion_row_summaries_gpu(const af_case *c, af_tensor_id id, const double *kernel,
                                              const double *ref, const double *ref_dev, const double *exact,
                                              const double *exact_dev, const af_criterion_terms *t, const double *dterm,
                                              double unit, af_row_summary *out, char *why, size_t cap) {
    if (id == AF_T_LSE || !af_criterion_terms_have(t, id)) {
        snprintf(why, cap, "row summaries on the GPU: %s has no element budgets here", af_tensor_name(id));
        return 1;
    }
    if (af_oracle_gpu_usable(why, cap) != 0) return 1;
    bool kvside = id == AF_T_DK || id == AF_T_DV;
    const int D = (id == AF_T_O || id == AF_T_DV) ? c->head_dim_v : c->head_dim_qk;
    const long long rows = (long long)c->batch * af_tensor_heads(c, id) * (kvside ? c->seqlen_kv : c->seqlen_q);
    if (rows <= 0) return 0;
    const af_storage st = af_case_tensor_storage(c, id);
    const bool resident = t->dev && t->dev->kappa[id];
    /* the oracle's values already on the device (the terms pass's upload of this array) */
    const double *dev_exact = exact_dev                                          ? exact_dev
                              : af_criterion_terms_gpu_keeps_exact(t, id, exact) ? t->dev->exact[id]
                                                                                 : NULL;
    long long chunk = CR_CHUNK_DOUBLES / D;
    if (chunk < 1) chunk = 1;
    if (chunk > rows) chunk = rows;
    const size_t arr = (size_t)chunk * D * sizeof(double);
    double *d_kernel = NULL, *d_ref = NULL, *d_exact = NULL, *d_dterm = NULL, *d_kappa = NULL, *d_mass = NULL;
    af_row_summary *d_out = NULL;
    int rc = 0;
    CR_TRY(af_gpu_malloc_cuda((void **)&d_kernel, arr));
    if (!dev_exact) CR_TRY(af_gpu_malloc_cuda((void **)&d_exact, arr));
    if (!ref) ref_dev = NULL;
    if (ref && !ref_dev) CR_TRY(af_gpu_malloc_cuda((void **)&d_ref, arr));
    if (dterm) CR_TRY(af_gpu_malloc_cuda((void **)&d_dterm, arr));
    if (!resident) {
        CR_TRY(af_gpu_malloc_cuda((void **)&d_kappa, arr));
        if (t->mass[id]) CR_TRY(af_gpu_malloc_cuda((void **)&d_mass, arr));
    }
    CR_TRY(af_gpu_malloc_cuda((void **)&d_out, (size_t)chunk * sizeof(af_row_summary)));
    for (long long r0 = 0; r0 < rows; r0 += chunk) {
        long long n = rows - r0 < chunk ? rows - r0 : chunk;
        CR_TRY(cr_up(d_kernel, kernel, r0, n, D));
        if (!dev_exact) CR_TRY(cr_up(d_exact, exact, r0, n, D));
        if (!ref_dev) CR_TRY(cr_up(d_ref, ref, r0, n, D));
        CR_TRY(cr_up(d_dterm, dterm, r0, n, D));
        cr_args a;
        memset(&a, 0, sizeof a);
        a.kernel = d_kernel, a.dterm = d_dterm;
        a.ref = ref_dev ? ref_dev + (size_t)r0 * D : d_ref;
        a.exact = dev_exact ? dev_exact + (size_t)r0 * D : d_exact;
        if (resident) {
            a.kappa = t->dev->kappa[id] + (size_t)r0 * D;
            a.mass = t->dev->mass[id] ? t->dev->mass[id] + (size_t)r0 * D : NULL;
        } else {
            CR_TRY(cr_up(d_kappa, t->kappa[id], r0, n, D));
            CR_TRY(cr_up(d_mass, t->mass[id], r0, n, D));
            a.kappa = d_kappa, a.mass = d_mass;
        }
        a.n = n, a.D = D, a.unit = unit;
        a.min_normal = af_storage_min_normal(st), a.sub_half = af_storage_subnormal_half_step(st);
        a.out = d_out;
        cr_rows_kernel<<<(unsigned)((n + CR_THREADS - 1) / CR_THREADS), CR_THREADS>>>(a);
        CR_TRY(cudaGetLastError());
        CR_TRY(cudaMemcpy(out + r0, d_out, (size_t)n * sizeof(af_row_summary), cudaMemcpyDeviceToHost));
    }
done:
    af_gpu_free(d_kernel), af_gpu_free(d_ref), af_gpu_free(d_exact), af_gpu_free(d_dterm);
    af_gpu_free(d_kappa), af_gpu_free(d_mass), af_gpu_free(d_out);
    return rc;
}
