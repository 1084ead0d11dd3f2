/* cudnn_graph.c — plain-C builder of cuDNN backend operation graphs (cudnn_graph.h). */
#include "backends/cudnn/cudnn_graph.h"

#ifdef ATTNFUZZ_HAVE_CUDA

#include <stdio.h>
#include <string.h>

void cg_init(af_cg *g, const af_cudnn_api *api, cudnnHandle_t handle) {
    memset(g, 0, sizeof *g);
    g->api = api;
    g->handle = handle;
    g->next_uid = 1;
}

void cg_destroy(af_cg *g) {
    if (g->graph) g->api->BackendDestroyDescriptor(g->graph);
    for (int i = g->n_owned - 1; i >= 0; i--) g->api->BackendDestroyDescriptor(g->owned[i]);
    g->n_owned = 0;
    g->graph = NULL;
}

void cg_fail(af_cg *g, const char *what, cudnnStatus_t st) {
    if (g->failed) return;
    g->failed = true;
    char text[900];
    af_cudnn_status_text(g->api, st, text, sizeof text);
    snprintf(g->err, sizeof g->err, "%s: %s", what, text);
}

static cudnnBackendDescriptor_t create(af_cg *g, cudnnBackendDescriptorType_t type, const char *what) {
    if (g->failed) return NULL;
    if (g->n_owned == CG_MAX_DESC) {
        g->failed = true;
        snprintf(g->err, sizeof g->err, "%s: graph builder out of descriptor slots", what);
        return NULL;
    }
    cudnnBackendDescriptor_t d = NULL;
    cudnnStatus_t st = g->api->BackendCreateDescriptor(type, &d);
    if (st != CUDNN_STATUS_SUCCESS) {
        cg_fail(g, what, st);
        return NULL;
    }
    g->owned[g->n_owned++] = d;
    return d;
}

static void set(af_cg *g, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                cudnnBackendAttributeType_t type, int64_t count, const void *value, const char *what) {
    if (g->failed || !d) return;
    cudnnStatus_t st = g->api->BackendSetAttribute(d, name, type, count, value);
    if (st != CUDNN_STATUS_SUCCESS) {
        char w[160];
        snprintf(w, sizeof w, "%s: set attribute %d", what, (int)name);
        cg_fail(g, w, st);
    }
}

static void finalize(af_cg *g, cudnnBackendDescriptor_t d, const char *what) {
    if (g->failed || !d) return;
    cudnnStatus_t st = g->api->BackendFinalize(d);
    if (st != CUDNN_STATUS_SUCCESS) cg_fail(g, what, st);
}

void cg_packed_strides(const int64_t dims[4], int64_t strides[4]) {
    strides[3] = 1;
    for (int i = 2; i >= 0; i--) strides[i] = strides[i + 1] * dims[i + 1];
}

static void add_vp(af_cg *g, int64_t uid, int slot) {
    if (g->n_vp == CG_MAX_VP) {
        g->failed = true;
        snprintf(g->err, sizeof g->err, "graph builder: too many real tensors");
        return;
    }
    g->vp_uid[g->n_vp] = uid;
    g->vp_slot[g->n_vp] = slot;
    g->n_vp++;
}

static int64_t dt_bytes(cudnnDataType_t dt) {
    switch (dt) {
        case CUDNN_DATA_HALF:
        case CUDNN_DATA_BFLOAT16:
            return 2;
        case CUDNN_DATA_DOUBLE:
        case CUDNN_DATA_INT64:
            return 8;
        case CUDNN_DATA_FP8_E4M3:
        case CUDNN_DATA_FP8_E5M2:
        case CUDNN_DATA_INT8:
        case CUDNN_DATA_UINT8:
        case CUDNN_DATA_BOOLEAN:
            return 1;
        default:
            return 4;
    }
}

int64_t cg_alignment(cudnnDataType_t dt, const int64_t dims[4], const int64_t strides[4], int64_t base_align) {
    int64_t a = base_align > 0 && base_align < 16 ? base_align : 16, bytes = dt_bytes(dt);
    for (int i = 0; i < 4; i++)
        if (dims[i] > 1 && strides[i] != 1)
            while (a > 1 && (strides[i] * bytes) % a) a /= 2;
    return a;
}

static cg_t tensor_full(af_cg *g, cudnnDataType_t dt, const int64_t dims[4], const int64_t strides[4], bool is_virtual,
                        bool by_value, cg_t ragged, int slot) {
    cudnnBackendDescriptor_t d = create(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
    int64_t uid = g->next_uid++;
    /* FE's default is 16 for every tensor (tensor-core engines need it); a real tensor
     * declares what its pointer and strides keep, never more (cuDNN 9.14 and 9.19 run
     * their engines on a smaller declaration all the same: docs/cudnn-findings.md,
     * "Declared alignment") */
    int64_t align = 16;
    if (!is_virtual && !by_value && !g->declare16)
        align = cg_alignment(dt, dims, strides, slot >= 0 && slot < CG_SLOT_COUNT ? g->slot_align[slot] : 16);
    set(g, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor");
    set(g, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, "tensor");
    set(g, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, "tensor");
    set(g, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor");
    set(g, d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor");
    if (is_virtual) {
        bool yes = true;
        set(g, d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes, "tensor");
    }
    if (by_value) {
        bool yes = true;
        set(g, d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes, "tensor");
    }
    if (ragged) set(g, d, CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ragged, "tensor");
    finalize(g, d, "finalize tensor");
    if (!is_virtual && !g->failed) add_vp(g, uid, slot);
    return g->failed ? NULL : d;
}

cg_t cg_tensor(af_cg *g, cudnnDataType_t dt, const int64_t dims[4], const int64_t strides[4], int slot, cg_t ragged) {
    return tensor_full(g, dt, dims, strides, slot < 0, false, ragged, slot);
}

cg_t cg_virtual(af_cg *g, cudnnDataType_t dt, const int64_t dims[4], const int64_t strides[4]) {
    return tensor_full(g, dt, dims, strides, true, false, NULL, -1);
}

cg_t cg_virtual_packed(af_cg *g, cudnnDataType_t dt, int64_t d0, int64_t d1, int64_t d2, int64_t d3) {
    int64_t dims[4] = {d0, d1, d2, d3}, str[4];
    cg_packed_strides(dims, str);
    return cg_virtual(g, dt, dims, str);
}

cg_t cg_index_tensor(af_cg *g, int64_t n, int slot) {
    int64_t dims[4] = {n, 1, 1, 1}, strides[4] = {1, 1, 1, 1};
    return tensor_full(g, CUDNN_DATA_INT32, dims, strides, false, false, NULL, slot);
}

cg_t cg_device_scalar(af_cg *g, int slot) {
    int64_t one[4] = {1, 1, 1, 1};
    return tensor_full(g, CUDNN_DATA_FLOAT, one, one, false, false, NULL, slot);
}

static cg_t scalar(af_cg *g, cudnnDataType_t dt, float f, int32_t i) {
    if (g->failed) return NULL;
    if (g->n_scalar == CG_MAX_SCALARS) {
        g->failed = true;
        snprintf(g->err, sizeof g->err, "graph builder: too many scalars");
        return NULL;
    }
    int k = g->n_scalar++;
    if (dt == CUDNN_DATA_FLOAT)
        g->scalar[k].f = f;
    else
        g->scalar[k].i = i;
    int64_t one[4] = {1, 1, 1, 1};
    return tensor_full(g, dt, one, one, false, true, NULL, CG_SLOT_BY_VALUE + k);
}

cg_t cg_scalar_f32(af_cg *g, float v) { return scalar(g, CUDNN_DATA_FLOAT, v, 0); }

cg_t cg_run_scalar_f32(af_cg *g, int slot) {
    int64_t one[4] = {1, 1, 1, 1};
    return tensor_full(g, CUDNN_DATA_FLOAT, one, one, false, true, NULL, slot);
}
cg_t cg_scalar_i32(af_cg *g, int32_t v) { return scalar(g, CUDNN_DATA_INT32, 0.0f, v); }

static void add_op(af_cg *g, cudnnBackendDescriptor_t op, const char *tag) {
    if (g->failed) return;
    if (g->n_ops == CG_MAX_OPS) {
        g->failed = true;
        snprintf(g->err, sizeof g->err, "graph builder: too many operations");
        return;
    }
    g->ops[g->n_ops++] = op;
    size_t len = strlen(g->ops_text);
    snprintf(g->ops_text + len, sizeof g->ops_text - len, "%s%s", len ? "_" : "", tag);
}

static const char *pw_tag(cudnnPointwiseMode_t m) {
    switch (m) {
        case CUDNN_POINTWISE_ADD:
            return "ADD";
        case CUDNN_POINTWISE_MUL:
            return "MUL";
        case CUDNN_POINTWISE_SUB:
            return "SUB";
        case CUDNN_POINTWISE_DIV:
            return "DIV";
        case CUDNN_POINTWISE_EXP:
            return "EXP";
        case CUDNN_POINTWISE_LOG:
            return "LOG";
        case CUDNN_POINTWISE_IDENTITY:
            return "IDENTITY";
        case CUDNN_POINTWISE_GEN_INDEX:
            return "GEN_INDEX";
        case CUDNN_POINTWISE_CMP_GE:
            return "CMP_GE";
        case CUDNN_POINTWISE_CMP_GT:
            return "CMP_GT";
        case CUDNN_POINTWISE_CMP_LT:
            return "CMP_LT";
        case CUDNN_POINTWISE_LOGICAL_AND:
            return "AND";
        case CUDNN_POINTWISE_TANH_FWD:
            return "TANH_FWD";
        case CUDNN_POINTWISE_TANH_BWD:
            return "TANH_BWD";
        case CUDNN_POINTWISE_ABS:
            return "ABS";
        case CUDNN_POINTWISE_NEG:
            return "NEG";
        case CUDNN_POINTWISE_MAX:
            return "MAX";
        case CUDNN_POINTWISE_MIN:
            return "MIN";
        case CUDNN_POINTWISE_BINARY_SELECT:
            return "SELECT";
        default:
            return "PW";
    }
}

void cg_pointwise(af_cg *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, cg_t x, cg_t b, cg_t t, cg_t y,
                  int64_t axis) {
    cudnnBackendDescriptor_t pw = create(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
    set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise");
    set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "pointwise");
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
        set(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "pointwise");
    finalize(g, pw, "finalize pointwise");
    cudnnBackendDescriptor_t op = create(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise op");
    set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw, "pointwise op");
    set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "pointwise op");
    set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "pointwise op");
    if (b) set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "pointwise op");
    if (t) set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t, "pointwise op");
    float one = 1.0f;
    set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one, "pointwise op");
    set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one, "pointwise op");
    char what[64];
    snprintf(what, sizeof what, "finalize pointwise %s", pw_tag(mode));
    finalize(g, op, what);
    add_op(g, op, pw_tag(mode));
}

void cg_pointwise_bwd(af_cg *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, cg_t dy, cg_t x, cg_t dx) {
    cudnnBackendDescriptor_t pw = create(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
    set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise");
    set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "pointwise");
    finalize(g, pw, "finalize pointwise");
    cudnnBackendDescriptor_t op = create(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise op");
    set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw, "pointwise op");
    set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &dy, "pointwise op");
    set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "pointwise op");
    set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &dx, "pointwise op");
    char what[64];
    snprintf(what, sizeof what, "finalize pointwise %s", pw_tag(mode));
    finalize(g, op, what);
    add_op(g, op, pw_tag(mode));
}

void cg_matmul(af_cg *g, cg_t a, cg_t b, cg_t c, cg_t m_override, cg_t n_override, cg_t k_override) {
    cudnnBackendDescriptor_t mm = create(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul");
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    set(g, mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "matmul");
    finalize(g, mm, "finalize matmul");
    cudnnBackendDescriptor_t op = create(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul op");
    set(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a, "matmul op");
    set(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "matmul op");
    set(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c, "matmul op");
    set(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm, "matmul op");
    if (m_override)
        set(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &m_override,
            "matmul op");
    if (n_override)
        set(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n_override,
            "matmul op");
    if (k_override)
        set(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k_override,
            "matmul op");
    finalize(g, op, "finalize matmul op");
    add_op(g, op, "Matmul");
}

void cg_reduction(af_cg *g, cudnnReduceTensorOp_t rop, cg_t x, cg_t y) {
    cudnnBackendDescriptor_t rd = create(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction");
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    set(g, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "reduction");
    set(g, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &rop, "reduction");
    if (g->api->version >= 91100) {
        bool no = false; /* what FE sets from 9.11 on */
        set(g, rd, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &no, "reduction");
    }
    finalize(g, rd, "finalize reduction");
    cudnnBackendDescriptor_t op = create(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction op");
    set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd, "reduction op");
    set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "reduction op");
    set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "reduction op");
    finalize(g, op, "finalize reduction op");
    add_op(g, op, "Reduction");
}

void cg_reshape(af_cg *g, cg_t x, cg_t y) {
    cudnnBackendDescriptor_t op = create(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape op");
    set(g, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "reshape op");
    set(g, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "reshape op");
    finalize(g, op, "finalize reshape op");
    add_op(g, op, "Reshape");
}

void cg_paged_cache_load(af_cg *g, cg_t container, cg_t page_table, cg_t seq_len, cg_t y) {
    cudnnBackendDescriptor_t op = create(g, CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR, "paged load op");
    set(g, op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &container,
        "paged load op");
    set(g, op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &page_table,
        "paged load op");
    set(g, op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &seq_len,
        "paged load op");
    set(g, op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "paged load op");
    finalize(g, op, "finalize paged load op");
    add_op(g, op, "PagedCacheLoad");
}

void cg_sdpa_fwd_op(af_cg *g, cg_t q, cg_t k, cg_t v, cg_t o, cg_t stats, cg_t scale, cg_t seq_q, cg_t seq_kv) {
    cudnnBackendDescriptor_t op = create(g, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, "sdpa fwd op");
    set(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &q, "sdpa fwd op");
    set(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k, "sdpa fwd op");
    set(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v, "sdpa fwd op");
    set(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o, "sdpa fwd op");
    set(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &stats, "sdpa fwd op");
    set(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &scale, "sdpa fwd op");
    if (seq_q)
        set(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_QDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &seq_q,
            "sdpa fwd op");
    if (seq_kv)
        set(g, op, CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_KVDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &seq_kv,
            "sdpa fwd op");
    finalize(g, op, "finalize sdpa fwd op");
    add_op(g, op, "SDPA_FWD");
}

void cg_finalize(af_cg *g) {
    if (g->failed) return;
    cudnnBackendDescriptor_t d = NULL;
    cudnnStatus_t st = g->api->BackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &d);
    if (st != CUDNN_STATUS_SUCCESS) {
        cg_fail(g, "operation graph", st);
        return;
    }
    g->graph = d;
    /* OPERATIONGRAPH_HANDLE (800) is marked deprecated in the 9.19 headers, but without
     * it engines see smVersion 0 and refuse (ARCH_MISMATCH); FE still sets it. The
     * number avoids the deprecation warning. */
    set(g, d, (cudnnBackendAttributeName_t)800, CUDNN_TYPE_HANDLE, 1, &g->handle, "operation graph handle");
    set(g, d, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->n_ops, g->ops, "operation graph");
    if (g->dynamic_shape) { /* what a kernel cache needs: kernels that take their shapes at run time */
        bool on = true;
        set(g, d, CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED, CUDNN_TYPE_BOOLEAN, 1, &on,
            "operation graph dynamic shape");
    }
    finalize(g, d, "finalize operation graph");
}

#endif /* ATTNFUZZ_HAVE_CUDA */
