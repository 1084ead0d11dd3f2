/* ref_gpu_launch.h — the GPU reference's kernel launchers (ref_gpu_fwd.cu, ref_gpu_bwd.cu),
 * called by the driver in ref_gpu.cu. Each launches on the default stream and returns
 * the launch's cudaError_t (errors while running surface at the driver's sync). */
#ifndef ATTNFUZZ_REF_GPU_LAUNCH_H
#define ATTNFUZZ_REF_GPU_LAUNCH_H

#include <cuda_runtime.h>
#include "kernels/ref_gpu.h"

/* O and LSE of every row: grid (ceil(Sq / 64), Hq, B). */
cudaError_t rg_launch_fwd(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g);
/* D_i = dO_i . O_i (O as stored), one thread per row. */
cudaError_t rg_launch_delta(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g);
/* dQ: grid (ceil(Sq / 64), Hq, B). Needs lse and delta. */
cudaError_t rg_launch_dq(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g);
/* dK, dV: grid (ceil(Skv / 64), Hkv, B). Needs lse and delta. */
cudaError_t rg_launch_dkdv(const af_ref_gpu_desc *d, const af_ref_gpu_buffers *g);

#endif
