/* cudnn_graph.h — a small builder of cuDNN backend operation graphs in plain C.
 *
 * One af_cg owns every descriptor it creates (destroyed together) and remembers
 * which real tensor binds to which data slot, so a finalized graph and its plans can
 * be executed again on new buffers (plans are cached per case shape). Errors are
 * sticky: after the first failing call the builder does nothing and cg->err holds
 * "what: CUDNN_STATUS_...: cuDNN's last error text".
 */
#ifndef ATTNFUZZ_CUDNN_GRAPH_H
#define ATTNFUZZ_CUDNN_GRAPH_H

#ifdef ATTNFUZZ_HAVE_CUDA

#include <stdbool.h>
#include "backends/cudnn/cudnn_api.h"

/* What a real (non-virtual) tensor of a graph points at during execution. */
typedef enum {
    CG_SLOT_Q = 0,
    CG_SLOT_K,
    CG_SLOT_V,
    CG_SLOT_O,
    CG_SLOT_STATS,
    CG_SLOT_DO,
    CG_SLOT_DQ,
    CG_SLOT_DK,
    CG_SLOT_DV,
    CG_SLOT_SEQ_Q,
    CG_SLOT_SEQ_KV, /* INT32 [b,1,1,1] actual lengths */
    CG_SLOT_RAG_Q,
    CG_SLOT_RAG_K,
    CG_SLOT_RAG_V, /* INT32 [b+1,1,1,1] ragged offsets */
    CG_SLOT_RAG_O,
    CG_SLOT_RAG_STATS,
    CG_SLOT_RAG_DO,
    CG_SLOT_RAG_DQ,
    CG_SLOT_RAG_DK,
    CG_SLOT_RAG_DV,
    CG_SLOT_PAGE_TABLE,  /* INT32 [b,1,pages_per_seq,1] */
    CG_SLOT_SOFTMAX_SUM, /* bwd scratch FLOAT [b,hq,sq,1] */
    CG_SLOT_DQ_ACCUM,    /* bwd scratch FLOAT [b,hq,sq,dqk] */
    /* fp8 forward: device FLOAT [1,1,1,1] scalars (inputs) and amax outputs */
    CG_SLOT_DESCALE_Q,
    CG_SLOT_DESCALE_K,
    CG_SLOT_DESCALE_V,
    CG_SLOT_DESCALE_S,
    CG_SLOT_SCALE_S,
    CG_SLOT_SCALE_O,
    CG_SLOT_AMAX_S,
    CG_SLOT_AMAX_O,
    /* fp8 backward: more device FLOAT [1,1,1,1] scalars and amax outputs (contiguous
     * after the forward's: cudnn.c uploads DESCALE_Q..AMAX_DV as one block) */
    CG_SLOT_DESCALE_O,
    CG_SLOT_DESCALE_DO,
    CG_SLOT_DESCALE_DP,
    CG_SLOT_SCALE_DP,
    CG_SLOT_SCALE_DQ,
    CG_SLOT_SCALE_DK,
    CG_SLOT_SCALE_DV,
    CG_SLOT_AMAX_DP,
    CG_SLOT_AMAX_DQ,
    CG_SLOT_AMAX_DK,
    CG_SLOT_AMAX_DV,
    /* features (oracle/feature_spec.h; cudnn_graph_feat.c), device buffers of the run */
    CG_SLOT_BIAS,         /* io dtype [bias_b,bias_h,sq,skv], extent 1 = broadcast */
    CG_SLOT_ALIBI_SLOPES, /* FLOAT [1,hq,1,1] */
    CG_SLOT_SINK,         /* FLOAT [1,hq,1,1] sink logits (0 for off_by_one) */
    CG_SLOT_DSINK,        /* FLOAT [1,hq,1,1] output: gradient of learnable sinks */
    CG_SLOT_DROPOUT_MASK, /* io dtype [b,hq,sq,skv] keep mask: 1 kept, 0 dropped */
    /* host FLOAT by-value scalars given with each run, not built into the graph: one
     * graph serves every value (cudnn.c keys its cache without them) */
    CG_SLOT_ATTN_SCALE,    /* the score scale */
    CG_SLOT_DROPOUT_SCALE, /* 1 / (1 - p) */
    CG_SLOT_COUNT,
    CG_SLOT_BY_VALUE = 100 /* host scalar owned by the graph */
} cg_slot;

#define CG_MAX_DESC    640
#define CG_MAX_OPS     96 /* the backward with every feature, padding and both bounds: ~61 */
#define CG_MAX_VP      64
#define CG_MAX_SCALARS 32

typedef struct {
    const af_cudnn_api *api;
    cudnnHandle_t handle; /* tells the graph its device (engines need the SM) */
    cudnnBackendDescriptor_t owned[CG_MAX_DESC];
    int n_owned;
    cudnnBackendDescriptor_t ops[CG_MAX_OPS];
    int n_ops;
    cudnnBackendDescriptor_t graph; /* finalized OPERATIONGRAPH, NULL before */
    int64_t next_uid;
    union {
        float f;
        int32_t i;
    } scalar[CG_MAX_SCALARS]; /* by-value data, stable address */
    int n_scalar;
    int64_t vp_uid[CG_MAX_VP];
    int vp_slot[CG_MAX_VP]; /* cg_slot, or CG_SLOT_BY_VALUE + scalar index */
    int n_vp;
    size_t scratch_bytes[CG_SLOT_COUNT]; /* device scratch the graph needs per slot */
    /* the byte alignment each real tensor's pointer keeps (a power of two <= 16; 0 = 16),
     * and whether every tensor declares 16 whatever its strides (ATTNFUZZ_CUDNN_ALIGN=16):
     * tensor_full declares the alignment the pointer and every stride keep (cg_alignment) */
    int64_t slot_align[CG_SLOT_COUNT];
    bool declare16;
    bool dynamic_shape; /* finalized as a dynamic-shape graph (ATTNFUZZ_CUDNN_KERNEL_CACHE) */
    char ops_text[512]; /* "Matmul_MUL_GEN_INDEX..." like FE's tag */
    bool failed;
    char err[1024];
} af_cg;

typedef cudnnBackendDescriptor_t cg_t; /* a tensor descriptor */

void cg_init(af_cg *g, const af_cudnn_api *api, cudnnHandle_t handle);
void cg_destroy(af_cg *g);

/* The byte alignment a real tensor keeps: the largest power of two <= 16 that divides
 * base_align and the byte stride of every dimension of extent > 1 and stride != 1 (the
 * rule cudnn-frontend 1.32 enforces on the SDPA operands it declares 16-byte aligned,
 * node_interface.h misaligned_stride_dimension). */
int64_t cg_alignment(cudnnDataType_t dt, const int64_t dims[4], const int64_t strides[4], int64_t base_align);
/* A tensor: dims/strides rank 4. slot < 0: virtual. ragged: offset tensor or NULL. */
cg_t cg_tensor(af_cg *g, cudnnDataType_t dt, const int64_t dims[4], const int64_t strides[4], int slot, cg_t ragged);
/* Virtual tensor with the given dims and strides. */
cg_t cg_virtual(af_cg *g, cudnnDataType_t dt, const int64_t dims[4], const int64_t strides[4]);
/* Packed virtual tensor [d0,d1,d2,d3]. */
cg_t cg_virtual_packed(af_cg *g, cudnnDataType_t dt, int64_t d0, int64_t d1, int64_t d2, int64_t d3);
/* Real INT32 [n,1,1,1] tensor bound to slot (seq lengths, ragged offsets). */
cg_t cg_index_tensor(af_cg *g, int64_t n, int slot);
/* Real (device) FLOAT [1,1,1,1] tensor bound to slot (fp8 scales and amax outputs). */
cg_t cg_device_scalar(af_cg *g, int slot);
/* By-value [1,1,1,1] scalars (host memory, owned by the graph). */
cg_t cg_scalar_f32(af_cg *g, float v);
cg_t cg_scalar_i32(af_cg *g, int32_t v);
/* By-value FLOAT [1,1,1,1] scalar whose host value each run gives in slot
 * (CG_SLOT_ATTN_SCALE, CG_SLOT_DROPOUT_SCALE). */
cg_t cg_run_scalar_f32(af_cg *g, int slot);

/* y = op(x [, b [, t]]); prec = math precision; axis >= 0 only for GEN_INDEX. */
void cg_pointwise(af_cg *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, cg_t x, cg_t b, cg_t t, cg_t y,
                  int64_t axis);
/* Activation backward (TANH_BWD ...): dx = f'(x) * dy, as cuDNN's DYDESC / XDESC / DXDESC. */
void cg_pointwise_bwd(af_cg *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, cg_t dy, cg_t x, cg_t dx);
/* c = a x b (batched over dims 0,1 with broadcasting); overrides may be NULL. */
void cg_matmul(af_cg *g, cg_t a, cg_t b, cg_t c, cg_t m_override, cg_t n_override, cg_t k_override);
void cg_reduction(af_cg *g, cudnnReduceTensorOp_t op, cg_t x, cg_t y);
void cg_reshape(af_cg *g, cg_t x, cg_t y);
void cg_paged_cache_load(af_cg *g, cg_t container, cg_t page_table, cg_t seq_len, cg_t y);

/* The unified SDPA forward operation (one op); seq_q/seq_kv may be NULL. */
void cg_sdpa_fwd_op(af_cg *g, cg_t q, cg_t k, cg_t v, cg_t o, cg_t stats, cg_t scale, cg_t seq_q, cg_t seq_kv);

/* Finalize the operation graph from the ops added so far. */
void cg_finalize(af_cg *g);

/* Record a failure (first one wins). */
void cg_fail(af_cg *g, const char *what, cudnnStatus_t st);

/* Contiguous strides of dims (row-major). */
void cg_packed_strides(const int64_t dims[4], int64_t strides[4]);

#endif /* ATTNFUZZ_HAVE_CUDA */
#endif
