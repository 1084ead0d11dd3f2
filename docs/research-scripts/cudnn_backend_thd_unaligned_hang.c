/* cudnn_backend_thd_unaligned_hang.c — a bare reproducer (no attnfuzz code, no
 * cudnn-frontend) of the suspected cuDNN hang "H1" (docs/cudnn-findings.md, "H1 (candidate)"
 * and "Declared alignment"): cuDNN's SDPA forward, built through the backend C API, engine
 * config eng1_k24=2 (global engine index 1, CUDNN_KNOB_TYPE_KERNEL_CFG = 2), never returns.
 *
 * What it checks. The case of docs/device/next/replay-timeout-9d325e1a036c-capacity.case:
 * fp16, batch 1, heads_q 2 over heads_kv 1 (GQA), head_dim 32 (qk and v), maximum lengths
 * s_q = s_kv = 65 with actual lengths 1 (seq_len_q = seq_len_kv = 1: a padding mask), thd
 * (ragged offsets for Q, K, V, O and Stats), each token row one element longer than its heads
 * (Q's and O's token stride 2 x 32 + 1 = 65 elements, K's and V's 33: rows not 16-byte
 * aligned), 64 unused tokens after the sequence, causal bottom-right with a band of one key
 * (the diagonal), attn scale 0.01, Stats (LSE) float32. The graph is the composite SDPA
 * forward that cudnn-frontend lowers to and attnfuzz builds (harness/backends/cudnn/
 * cudnn_graph_fwd.c), written again here as a plain sequence of backend calls:
 *   S = Q K^T (M, N overridden by seq_len_q / seq_len_kv) * scale
 *   -> padding mask (GEN_INDEX rows / columns < seq lens) -> causal bottom-right bound
 *   -> band left bound 1 -> softmax with Stats = max + log(sum exp) -> O = P V.
 * cudnn-frontend refuses this graph (its strides break 16-byte alignment); the backend
 * accepts it. By default every real tensor declares the byte alignment its strides keep
 * (CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT: 2 for the fp16 rows, 8 for the fp32 Stats, whose
 * token stride is 2 floats, 16 for the int32 index tensors); --align16 declares 16 for all
 * (attnfuzz's old declaration, cudnn-frontend's default).
 *
 * Build (verified with gcc 12, CUDA 13.0, cuDNN 9.19 headers; build/ is git-ignored):
 *   mkdir -p build && gcc -std=c11 -O2 -Wall -Wextra -Werror -I/usr/local/cuda/include -o build/cudnn_backend_thd_unaligned_hang docs/research-scripts/cudnn_backend_thd_unaligned_hang.c -L/usr/local/cuda/lib64 -lcudnn -lcudart_static -ldl -lpthread -lrt -lm
 * libcudnn.so.9 is resolved at run time: the system's (cuDNN 9.14 on the H100) or, with
 * LD_LIBRARY_PATH=<torch venv>/nvidia/cudnn/lib, the venv's 9.19. The first line printed
 * names the version and file loaded.
 *
 * Run:
 *   timeout 60 build/cudnn_backend_thd_unaligned_hang                  # eng1_k24=2, truthful alignment
 *   timeout 60 build/cudnn_backend_thd_unaligned_hang --align16        # the same, 16 declared
 *   timeout 60 build/cudnn_backend_thd_unaligned_hang --aligned        # control: rows of 64 / 32
 *   timeout 60 build/cudnn_backend_thd_unaligned_hang --all            # every config heuristics rank
 *   timeout 60 build/cudnn_backend_thd_unaligned_hang --engine 0 --knob none
 * Options: [--align16] [--aligned] [--engine N] [--knob V|none] [--all]. --knob sets
 * CUDNN_KNOB_TYPE_KERNEL_CFG to V ("none": no knob choice, the engine's default); the
 * default config is --engine 1 --knob 2. --all runs, in one process, each config that
 * heuristics modes A and FALLBACK propose (de-duplicated, in that order).
 *
 * Reading the result. Each run prints "start <name>" (flushed) before
 * cudnnBackendExecute and cudaDeviceSynchronize, "execute returned ..." after the call, and
 * "done <name>: ..." after the synchronisation, with max |O - V[0..31]| (one visible key: the
 * exact O row of each query head is the single kv head's V row) and the LSE of each head
 * against scale * q.k (computed here in double from the fp16 inputs). A config that prints
 * "start" and never "done" before timeout kills the process is the hang; whether
 * "execute returned" came tells whether the host call or the GPU work never finished.
 * H1 reproduces outside attnfuzz if the default run prints "start eng1_k24=2" and never
 * returns, while the --aligned control prints "done eng1_k24=2" with O = V and the LSE right.
 * Exit status: 0 when every requested config ran (whatever its numbers), 1 when a config
 * failed to build or run, 2 on a setup error or a CUDA error that ends the process's use of
 * the device.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <cudnn.h>

/* ------------------------------------------------------------------------------------ */
/* The case                                                                             */
/* ------------------------------------------------------------------------------------ */

enum {
    NB = 1,                     /* batch */
    HQ = 2,                     /* query heads */
    HK = 1,                     /* key / value heads (GQA 2:1) */
    SQ = 65,                    /* maximum query length */
    SKV = 65,                   /* maximum key length */
    DH = 32,                    /* head dim, qk and v */
    LEN_Q = 1,                  /* actual query length of the one sequence */
    LEN_KV = 1,                 /* actual key length */
    THD_GAP = 64,               /* unused tokens after the sequence */
    NTOK_Q = LEN_Q + THD_GAP,   /* tokens in the Q / O / Stats buffers */
    NTOK_KV = LEN_KV + THD_GAP, /* tokens in the K / V buffers */
    LEFT_CUDNN = 1,             /* the band's left bound, counting the diagonal: one key */
    GUARD = 256,                /* bytes before and after every buffer (as attnfuzz) */
    MAX_DESC = 256,
    MAX_OPS = 48,
    MAX_VP = 32,
    MAX_KNOBS = 8,
    MAX_CFGS = 64
};
static const float ATTN_SCALE = 0.01f;

/* Strides (elements) of every real tensor, [b, h, s, d] order, and the ragged offsets. */
typedef struct {
    int64_t tq, tk;                     /* token-row strides: Q/O 65 (aligned 64), K/V 33 (32) */
    int64_t q_elems, kv_elems, s_elems; /* buffer sizes: NTOK_Q*tq, NTOK_KV*tk, NTOK_Q*HQ */
    int64_t str_q[4];                   /* Q, O [1,HQ,SQ,DH]: {SQ*tq, DH, tq, 1} */
    int64_t str_kt[4];                  /* K^T [1,HK,DH,SKV]: {SKV*tk, DH, 1, tk} */
    int64_t str_v[4];                   /* V [1,HK,SKV,DH]: {SKV*tk, DH, tk, 1} */
    int64_t str_s[4];                   /* Stats [1,HQ,SQ,1] fp32 (token, head): {SQ*HQ, 1, HQ, 1} */
    int32_t rag_q[NB + 1];              /* ragged offsets of Q and O: {0, NTOK_Q*tq} */
    int32_t rag_kv[NB + 1];             /* of K and V: {0, NTOK_KV*tk} */
    int32_t rag_s[NB + 1];              /* of Stats: {0, NTOK_Q*HQ} */
} layout;

static void layout_make(layout *L, bool aligned) {
    int64_t gap = aligned ? 0 : 1;
    L->tq = HQ * DH + gap;
    L->tk = HK * DH + gap;
    L->q_elems = NTOK_Q * L->tq;
    L->kv_elems = NTOK_KV * L->tk;
    L->s_elems = NTOK_Q * HQ;
    /* the batch stride is nominal (S * token stride): cuDNN uses the ragged offsets */
    int64_t q[4] = {SQ * L->tq, DH, L->tq, 1}, kt[4] = {SKV * L->tk, DH, 1, L->tk};
    int64_t v[4] = {SKV * L->tk, DH, L->tk, 1}, s[4] = {SQ * HQ, 1, HQ, 1};
    memcpy(L->str_q, q, sizeof q);
    memcpy(L->str_kt, kt, sizeof kt);
    memcpy(L->str_v, v, sizeof v);
    memcpy(L->str_s, s, sizeof s);
    /* offset of sequence b = first token * token stride (elements); one sequence */
    L->rag_q[0] = L->rag_kv[0] = L->rag_s[0] = 0;
    L->rag_q[1] = (int32_t)(NTOK_Q * L->tq);
    L->rag_kv[1] = (int32_t)(NTOK_KV * L->tk);
    L->rag_s[1] = (int32_t)(NTOK_Q * HQ);
}

/* ------------------------------------------------------------------------------------ */
/* Errors                                                                               */
/* ------------------------------------------------------------------------------------ */

/* Print a failed cuDNN call with its status and cuDNN's last error message; false then. */
static bool cudnn_ok(cudnnStatus_t st, const char *call) {
    if (st == CUDNN_STATUS_SUCCESS) return true;
    char msg[2048] = "";
    cudnnGetLastErrorString(msg, sizeof msg);
    for (char *p = msg; *p; p++)
        if (*p == '\n') *p = ' ';
    printf("error: %s: %s (%d)%s%s\n", call, cudnnGetErrorString(st), (int)st, msg[0] ? ": " : "", msg);
    fflush(stdout);
    return false;
}

static bool cuda_ok(cudaError_t e, const char *call) {
    if (e == cudaSuccess) return true;
    printf("error: %s: %s (%d): %s\n", call, cudaGetErrorName(e), (int)e, cudaGetErrorString(e));
    fflush(stdout);
    return false;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------------------------ */
/* fp16 on the host                                                                     */
/* ------------------------------------------------------------------------------------ */

/* float -> IEEE binary16, round to nearest even (the default rounding mode). */
static uint16_t half_from_float(float f) {
    if (isnan(f)) return 0x7E00u;
    uint16_t sign = signbit(f) ? 0x8000u : 0u;
    double a = fabs((double)f);
    if (a >= 65520.0) return (uint16_t)(sign | 0x7C00u);
    if (a < 0x1p-14) /* subnormal: units of 2^-24 (a result of 0x400 is the smallest normal) */
        return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p24));
    int e;
    double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
    int biased = e - 1 + 15;
    double frac = nearbyint((2.0 * m - 1.0) * 1024.0); /* 0 .. 1024 */
    if (frac == 1024.0) frac = 0.0, biased++;
    if (biased >= 31) return (uint16_t)(sign | 0x7C00u);
    return (uint16_t)(sign | (uint16_t)(biased << 10) | (uint16_t)frac);
}

static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (h & 0x8000u) ? -v : v;
}

/* Deterministic pattern: multiples of 1/1024 in [-1, 1] (exact in fp16), splitmix64. */
static uint64_t mix64(uint64_t *state) {
    uint64_t x = (*state += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static void fill_pattern(uint16_t *h, int64_t n, uint64_t seed) {
    for (int64_t i = 0; i < n; i++) h[i] = half_from_float((float)((int)(mix64(&seed) % 2049u) - 1024) / 1024.0f);
}

/* ------------------------------------------------------------------------------------ */
/* Device buffers                                                                       */
/* ------------------------------------------------------------------------------------ */

enum { B_Q, B_K, B_V, B_O, B_S, B_RQ, B_RK, B_RV, B_RO, B_RS, B_SEQ_Q, B_SEQ_KV, B_COUNT };

typedef struct {
    void *base[B_COUNT];    /* cudaMalloc'd: GUARD bytes, the tensor, GUARD bytes (0xA5) */
    void *ptr[B_COUNT];     /* base + GUARD: what the variant pack binds (256-byte aligned) */
    size_t bytes[B_COUNT];  /* the tensor's bytes */
    uint16_t *hq, *hk, *hv; /* host copies of Q [q_elems], K, V [kv_elems] (fp16 bits) */
} buffers;

static bool dev_alloc(buffers *m, int i, size_t bytes) {
    m->bytes[i] = bytes;
    if (!cuda_ok(cudaMalloc(&m->base[i], bytes + 2 * GUARD), "cudaMalloc")) return false;
    m->ptr[i] = (char *)m->base[i] + GUARD;
    return cuda_ok(cudaMemset(m->base[i], 0xA5, bytes + 2 * GUARD), "cudaMemset");
}

static bool upload(buffers *m, int i, const void *host) {
    return cuda_ok(cudaMemcpy(m->ptr[i], host, m->bytes[i], cudaMemcpyHostToDevice), "cudaMemcpy H2D");
}

/* Q [NTOK_Q, tq], K and V [NTOK_KV, tk] fp16, pattern everywhere (gaps and unused tokens
 * too); O [NTOK_Q, tq] fp16 and Stats [NTOK_Q, HQ] fp32 poisoned by poison_outputs; int32
 * ragged offsets [NB + 1] and sequence lengths [NB]. */
static bool buffers_make(buffers *m, const layout *L) {
    memset(m, 0, sizeof *m);
    size_t h = sizeof(uint16_t), i32 = sizeof(int32_t);
    bool ok = dev_alloc(m, B_Q, (size_t)L->q_elems * h) && dev_alloc(m, B_K, (size_t)L->kv_elems * h) &&
              dev_alloc(m, B_V, (size_t)L->kv_elems * h) && dev_alloc(m, B_O, (size_t)L->q_elems * h) &&
              dev_alloc(m, B_S, (size_t)L->s_elems * sizeof(float));
    for (int i = B_RQ; ok && i <= B_RS; i++) ok = dev_alloc(m, i, (NB + 1) * i32);
    ok = ok && dev_alloc(m, B_SEQ_Q, NB * i32) && dev_alloc(m, B_SEQ_KV, NB * i32);
    if (!ok) return false;
    m->hq = malloc((size_t)L->q_elems * h);
    m->hk = malloc((size_t)L->kv_elems * h);
    m->hv = malloc((size_t)L->kv_elems * h);
    if (!m->hq || !m->hk || !m->hv) return false;
    fill_pattern(m->hq, L->q_elems, 49);
    fill_pattern(m->hk, L->kv_elems, 50);
    fill_pattern(m->hv, L->kv_elems, 51);
    int32_t lq[NB] = {LEN_Q}, lkv[NB] = {LEN_KV};
    return upload(m, B_Q, m->hq) && upload(m, B_K, m->hk) && upload(m, B_V, m->hv) && upload(m, B_RQ, L->rag_q) &&
           upload(m, B_RK, L->rag_kv) && upload(m, B_RV, L->rag_kv) && upload(m, B_RO, L->rag_q) &&
           upload(m, B_RS, L->rag_s) && upload(m, B_SEQ_Q, lq) && upload(m, B_SEQ_KV, lkv);
}

static void buffers_free(buffers *m) {
    for (int i = 0; i < B_COUNT; i++)
        if (m->base[i]) cudaFree(m->base[i]);
    free(m->hq);
    free(m->hk);
    free(m->hv);
}

/* O all fp16 NaN (0x7E5A), Stats all fp32 NaN (0x7FC0DEAD): what a kernel leaves stays NaN. */
static bool poison_outputs(buffers *m) {
    size_t no = m->bytes[B_O] / 2, ns = m->bytes[B_S] / 4;
    uint16_t *o = malloc(no * 2);
    uint32_t *s = malloc(ns * 4);
    bool ok = o && s;
    for (size_t i = 0; ok && i < no; i++) o[i] = 0x7E5Au;
    for (size_t i = 0; ok && i < ns; i++) s[i] = 0x7FC0DEADu;
    ok = ok && upload(m, B_O, o) && upload(m, B_S, s);
    free(o);
    free(s);
    return ok;
}

/* ------------------------------------------------------------------------------------ */
/* Graph builder: owned descriptors, the operations, the variant pack's tensors         */
/* ------------------------------------------------------------------------------------ */

typedef cudnnBackendDescriptor_t desc_t;

typedef struct {
    desc_t owned[MAX_DESC]; /* every descriptor made, destroyed in reverse order */
    int n_owned;
    desc_t ops[MAX_OPS]; /* the operation graph's nodes, in order */
    int n_ops;
    int64_t vp_uid[MAX_VP]; /* real and by-value tensors: uid and pointer */
    void *vp_ptr[MAX_VP];
    int n_vp;
    float f_val[8]; /* by-value FLOAT scalars' storage (their variant pack pointers) */
    int n_f;
    int32_t i_val[8]; /* by-value INT32 scalars' storage */
    int n_i;
    int64_t next_uid;
    bool failed;
    bool align16;   /* declare 16 bytes for every tensor */
    size_t version; /* cudnnGetVersion() */
    desc_t graph;
} builder;

static desc_t new_desc(builder *b, cudnnBackendDescriptorType_t type, const char *what) {
    desc_t d = NULL;
    if (b->failed) return NULL;
    if (b->n_owned == MAX_DESC) {
        printf("error: %s: out of descriptor slots\n", what);
        b->failed = true;
        return NULL;
    }
    char call[160];
    snprintf(call, sizeof call, "cudnnBackendCreateDescriptor(%s)", what);
    if (!cudnn_ok(cudnnBackendCreateDescriptor(type, &d), call)) {
        b->failed = true;
        return NULL;
    }
    b->owned[b->n_owned++] = d;
    return d;
}

static void set_attr(builder *b, desc_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                     int64_t count, const void *value, const char *what) {
    if (b->failed || !d) return;
    char call[160];
    snprintf(call, sizeof call, "cudnnBackendSetAttribute(%s, attribute %d)", what, (int)name);
    if (!cudnn_ok(cudnnBackendSetAttribute(d, name, type, count, value), call)) b->failed = true;
}

static void finalize(builder *b, desc_t d, const char *what) {
    if (b->failed || !d) return;
    char call[160];
    snprintf(call, sizeof call, "cudnnBackendFinalize(%s)", what);
    if (!cudnn_ok(cudnnBackendFinalize(d), call)) b->failed = true;
}

static int64_t dtype_bytes(cudnnDataType_t dt) { return dt == CUDNN_DATA_HALF ? 2 : dt == CUDNN_DATA_BOOLEAN ? 1 : 4; }

/* The alignment a real tensor keeps: the largest power of two up to 16 dividing the byte
 * stride of every dimension of extent > 1 and stride != 1 (the pointers are 256-byte
 * aligned). Q, K, V, O here: 2 (rows of 130 / 66 bytes); aligned rows: 16. Stats: 8. */
static int64_t truthful_alignment(cudnnDataType_t dt, const int64_t dims[4], const int64_t str[4]) {
    int64_t a = 16;
    for (int i = 0; i < 4; i++)
        if (dims[i] > 1 && str[i] != 1)
            while (a > 1 && (str[i] * dtype_bytes(dt)) % a) a /= 2;
    return a;
}

typedef enum { T_REAL, T_VIRTUAL, T_BY_VALUE } tensor_kind;

/* A tensor descriptor; a real or by-value one joins the variant pack with ptr. */
static desc_t tensor(builder *b, const char *name, cudnnDataType_t dt, const int64_t dims[4], const int64_t str[4],
                     tensor_kind kind, desc_t ragged, void *ptr) {
    desc_t d = new_desc(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR, name);
    int64_t uid = b->next_uid++;
    int64_t align = kind == T_REAL && !b->align16 ? truthful_alignment(dt, dims, str) : 16;
    bool yes = true;
    set_attr(b, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, name);
    set_attr(b, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, name);
    set_attr(b, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str, name);
    set_attr(b, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, name);
    set_attr(b, d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, name);
    if (kind == T_VIRTUAL) set_attr(b, d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes, name);
    if (kind == T_BY_VALUE) set_attr(b, d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &yes, name);
    if (ragged) set_attr(b, d, CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ragged, name);
    finalize(b, d, name);
    if (b->failed) return NULL;
    if (kind != T_VIRTUAL) {
        if (b->n_vp == MAX_VP) {
            printf("error: too many real tensors\n");
            b->failed = true;
            return NULL;
        }
        b->vp_uid[b->n_vp] = uid;
        b->vp_ptr[b->n_vp++] = ptr;
    }
    if (kind == T_REAL)
        printf("  tensor %-8s uid %2lld dims [%lld,%lld,%lld,%lld] strides [%lld,%lld,%lld,%lld] align %lld%s\n", name,
               (long long)uid, (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3],
               (long long)str[0], (long long)str[1], (long long)str[2], (long long)str[3], (long long)align,
               ragged ? " ragged" : "");
    return d;
}

static const int64_t ONE4[4] = {1, 1, 1, 1};

/* INT32 [n,1,1,1] real tensor: ragged offsets (n = NB + 1) or sequence lengths (n = NB). */
static desc_t index_tensor(builder *b, const char *name, int64_t n, void *ptr) {
    int64_t dims[4] = {n, 1, 1, 1};
    return tensor(b, name, CUDNN_DATA_INT32, dims, ONE4, T_REAL, NULL, ptr);
}

static desc_t scalar_f32(builder *b, float v) { /* by-value FLOAT [1,1,1,1] */
    if (b->n_f == 8) return b->failed = true, NULL;
    b->f_val[b->n_f] = v;
    return tensor(b, "f32", CUDNN_DATA_FLOAT, ONE4, ONE4, T_BY_VALUE, NULL, &b->f_val[b->n_f++]);
}

static desc_t scalar_i32(builder *b, int32_t v) { /* by-value INT32 [1,1,1,1] */
    if (b->n_i == 8) return b->failed = true, NULL;
    b->i_val[b->n_i] = v;
    return tensor(b, "i32", CUDNN_DATA_INT32, ONE4, ONE4, T_BY_VALUE, NULL, &b->i_val[b->n_i++]);
}

static void packed(const int64_t dims[4], int64_t str[4]) {
    str[3] = 1;
    for (int i = 2; i >= 0; i--) str[i] = str[i + 1] * dims[i + 1];
}

/* Virtual score-shaped tensor [1,HQ,SQ,SKV], packed, of type dt. */
static desc_t vscore(builder *b, cudnnDataType_t dt) {
    int64_t dims[4] = {NB, HQ, SQ, SKV}, str[4];
    packed(dims, str);
    return tensor(b, "virtual", dt, dims, str, T_VIRTUAL, NULL, NULL);
}

/* Virtual row statistic [1,HQ,SQ,1] FLOAT, packed. */
static desc_t vrow(builder *b) {
    int64_t dims[4] = {NB, HQ, SQ, 1}, str[4];
    packed(dims, str);
    return tensor(b, "virtual", CUDNN_DATA_FLOAT, dims, str, T_VIRTUAL, NULL, NULL);
}

static void add_op(builder *b, desc_t op) {
    if (b->failed) return;
    if (b->n_ops == MAX_OPS) {
        printf("error: too many operations\n");
        b->failed = true;
        return;
    }
    b->ops[b->n_ops++] = op;
}

/* y = mode(x, bx, t): math precision prec; axis for GEN_INDEX (2 rows, 3 columns). */
static desc_t pointwise(builder *b, cudnnPointwiseMode_t mode, cudnnDataType_t prec, desc_t x, desc_t bx, desc_t t,
                        desc_t y, int64_t axis) {
    desc_t pw = new_desc(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
    set_attr(b, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise");
    set_attr(b, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "pointwise");
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
        set_attr(b, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "pointwise");
    finalize(b, pw, "pointwise");
    desc_t op = new_desc(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise op");
    float one = 1.0f;
    set_attr(b, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw, "pw op");
    set_attr(b, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "pw op");
    if (bx) set_attr(b, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bx, "pw op");
    if (t) set_attr(b, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t, "pw op");
    set_attr(b, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "pw op");
    set_attr(b, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one, "pw op");
    set_attr(b, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one, "pw op");
    char what[48];
    snprintf(what, sizeof what, "pointwise op, mode %d", (int)mode);
    finalize(b, op, what);
    add_op(b, op);
    return y;
}

/* c = a b (FLOAT accumulation); m / n / k overrides: the actual lengths (seq tensors). */
static void matmul(builder *b, desc_t a, desc_t bm, desc_t c, desc_t m_over, desc_t n_over, desc_t k_over) {
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    desc_t mm = new_desc(b, CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul");
    set_attr(b, mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "matmul");
    finalize(b, mm, "matmul");
    desc_t op = new_desc(b, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul op");
    set_attr(b, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a, "matmul op");
    set_attr(b, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bm, "matmul op");
    set_attr(b, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c, "matmul op");
    set_attr(b, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm, "matmul op");
    if (m_over)
        set_attr(b, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &m_over,
                 "matmul op");
    if (n_over)
        set_attr(b, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n_over,
                 "matmul op");
    if (k_over)
        set_attr(b, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k_over,
                 "matmul op");
    finalize(b, op, "matmul op");
    add_op(b, op);
}

/* y [1,HQ,SQ,1] = reduce_rop(x [1,HQ,SQ,SKV]) over the last axis (FLOAT). */
static void reduction(builder *b, cudnnReduceTensorOp_t rop, desc_t x, desc_t y) {
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    bool no = false;
    desc_t rd = new_desc(b, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction");
    set_attr(b, rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "reduction");
    set_attr(b, rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &rop, "reduction");
    if (b->version >= 91100) /* cudnn-frontend sets it from 9.11 on; attnfuzz too */
        set_attr(b, rd, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &no, "reduction");
    finalize(b, rd, "reduction");
    desc_t op = new_desc(b, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction op");
    set_attr(b, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd, "reduction op");
    set_attr(b, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "reduction op");
    set_attr(b, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "reduction op");
    finalize(b, op, "reduction op");
    add_op(b, op);
}

/* ------------------------------------------------------------------------------------ */
/* The SDPA forward graph (attnfuzz's composite forward, cudnn-frontend's lowering)      */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    desc_t q, kt, v, o, stats, seq_q, seq_kv;
} graph_io;

/* Real tensors: Q [1,HQ,SQ,DH], K^T [1,HK,DH,SKV] (K's memory, dims and strides 2 <-> 3
 * swapped), V [1,HK,SKV,DH], O [1,HQ,SQ,DH] fp16; Stats [1,HQ,SQ,1] fp32; each with its own
 * INT32 [2,1,1,1] ragged offset tensor; seq_len_q, seq_len_kv INT32 [1,1,1,1]. */
static void make_io(builder *b, const layout *L, const buffers *m, graph_io *io) {
    int64_t dq[4] = {NB, HQ, SQ, DH}, dkt[4] = {NB, HK, DH, SKV}, dv[4] = {NB, HK, SKV, DH}, ds[4] = {NB, HQ, SQ, 1};
    desc_t rq = index_tensor(b, "ragged_Q", NB + 1, m->ptr[B_RQ]);
    io->q = tensor(b, "Q", CUDNN_DATA_HALF, dq, L->str_q, T_REAL, rq, m->ptr[B_Q]);
    io->seq_q = index_tensor(b, "seq_q", NB, m->ptr[B_SEQ_Q]);
    io->seq_kv = index_tensor(b, "seq_kv", NB, m->ptr[B_SEQ_KV]);
    desc_t rk = index_tensor(b, "ragged_K", NB + 1, m->ptr[B_RK]);
    io->kt = tensor(b, "K^T", CUDNN_DATA_HALF, dkt, L->str_kt, T_REAL, rk, m->ptr[B_K]);
    desc_t rv = index_tensor(b, "ragged_V", NB + 1, m->ptr[B_RV]);
    io->v = tensor(b, "V", CUDNN_DATA_HALF, dv, L->str_v, T_REAL, rv, m->ptr[B_V]);
    desc_t ro = index_tensor(b, "ragged_O", NB + 1, m->ptr[B_RO]);
    io->o = tensor(b, "O", CUDNN_DATA_HALF, dq, L->str_q, T_REAL, ro, m->ptr[B_O]);
    desc_t rs = index_tensor(b, "ragged_S", NB + 1, m->ptr[B_RS]);
    io->stats = tensor(b, "Stats", CUDNN_DATA_FLOAT, ds, L->str_s, T_REAL, rs, m->ptr[B_S]);
}

/* The INT32 row and column index of every score of s, computed in `compute`. */
static void row_col(builder *b, desc_t s, cudnnDataType_t compute, desc_t *row, desc_t *col) {
    *row = vscore(b, CUDNN_DATA_INT32);
    *col = vscore(b, CUDNN_DATA_INT32);
    pointwise(b, CUDNN_POINTWISE_GEN_INDEX, compute, s, NULL, NULL, *row, 2);
    pointwise(b, CUDNN_POINTWISE_GEN_INDEX, compute, s, NULL, NULL, *col, 3);
}

/* keep ? s : -inf, a new FLOAT score tensor. */
static desc_t masked(builder *b, desc_t s, desc_t keep) {
    return pointwise(b, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, s, scalar_f32(b, -INFINITY), keep,
                     vscore(b, CUDNN_DATA_FLOAT), -1);
}

/* keep = (row < seq_q) && (col < seq_kv); s = keep ? s : -inf. */
static desc_t padding_mask(builder *b, const graph_io *io, desc_t s) {
    desc_t row, col;
    row_col(b, s, CUDNN_DATA_INT32, &row, &col);
    desc_t row_ok = vscore(b, CUDNN_DATA_BOOLEAN), col_ok = vscore(b, CUDNN_DATA_BOOLEAN);
    desc_t keep = vscore(b, CUDNN_DATA_BOOLEAN);
    pointwise(b, CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, row, io->seq_q, NULL, row_ok, -1);
    pointwise(b, CUDNN_POINTWISE_CMP_LT, CUDNN_DATA_BOOLEAN, col, io->seq_kv, NULL, col_ok, -1);
    pointwise(b, CUDNN_POINTWISE_LOGICAL_AND, CUDNN_DATA_BOOLEAN, row_ok, col_ok, NULL, keep, -1);
    return masked(b, s, keep);
}

/* Causal, bottom-right: keep (row + seq_kv - seq_q) >= col. Index generators compute in
 * FLOAT and write INT32 (as cudnn-frontend). */
static desc_t causal_bottom_right(builder *b, const graph_io *io, desc_t s) {
    desc_t row, col;
    row_col(b, s, CUDNN_DATA_FLOAT, &row, &col);
    desc_t r1 = vscore(b, CUDNN_DATA_INT32), r2 = vscore(b, CUDNN_DATA_INT32);
    pointwise(b, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, row, io->seq_kv, NULL, r1, -1);
    pointwise(b, CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, r1, io->seq_q, NULL, r2, -1);
    desc_t keep = vscore(b, CUDNN_DATA_BOOLEAN);
    pointwise(b, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, r2, col, NULL, keep, -1);
    return masked(b, s, keep);
}

/* The band's left bound, bottom-right: keep (col + LEFT_CUDNN - seq_kv + seq_q) > row;
 * with LEFT_CUDNN = 1 and the causal bound only the diagonal key stays. */
static desc_t band_left(builder *b, const graph_io *io, desc_t s) {
    desc_t row, col;
    row_col(b, s, CUDNN_DATA_FLOAT, &row, &col);
    desc_t a = vscore(b, CUDNN_DATA_INT32), c0 = vscore(b, CUDNN_DATA_INT32), c1 = vscore(b, CUDNN_DATA_INT32);
    pointwise(b, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, col, scalar_i32(b, LEFT_CUDNN), NULL, a, -1);
    pointwise(b, CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, a, io->seq_kv, NULL, c0, -1);
    pointwise(b, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, c0, io->seq_q, NULL, c1, -1);
    desc_t keep = vscore(b, CUDNN_DATA_BOOLEAN);
    pointwise(b, CUDNN_POINTWISE_CMP_GT, CUDNN_DATA_BOOLEAN, c1, row, NULL, keep, -1);
    return masked(b, s, keep);
}

/* m = max s; e = exp(s - m); z = sum e; Stats = m + log z; returns P = e / z (fp16). */
static desc_t softmax(builder *b, const graph_io *io, desc_t s) {
    desc_t m = vrow(b), z = vrow(b), logz = vrow(b);
    desc_t t = vscore(b, CUDNN_DATA_FLOAT), e = vscore(b, CUDNN_DATA_FLOAT), p = vscore(b, CUDNN_DATA_HALF);
    reduction(b, CUDNN_REDUCE_TENSOR_MAX, s, m);
    pointwise(b, CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, s, m, NULL, t, -1);
    pointwise(b, CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, t, NULL, NULL, e, -1);
    reduction(b, CUDNN_REDUCE_TENSOR_ADD, e, z);
    pointwise(b, CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, z, NULL, NULL, logz, -1);
    pointwise(b, CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, m, logz, NULL, io->stats, -1);
    return pointwise(b, CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, e, z, NULL, p, -1);
}

/* The operation graph over every node, with the handle (attribute 800,
 * CUDNN_ATTR_OPERATIONGRAPH_HANDLE: deprecated in the 9.19 header, so named by number to
 * keep -Werror quiet; without it engines see no SM version, as attnfuzz notes). */
static void graph_finalize(builder *b, cudnnHandle_t handle) {
    b->graph = new_desc(b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
    set_attr(b, b->graph, (cudnnBackendAttributeName_t)800, CUDNN_TYPE_HANDLE, 1, &handle, "operation graph");
    set_attr(b, b->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, b->n_ops, b->ops,
             "operation graph");
    finalize(b, b->graph, "operation graph");
}

static bool build_graph(builder *b, cudnnHandle_t handle, const layout *L, const buffers *m) {
    graph_io io;
    make_io(b, L, m, &io);
    desc_t s0 = vscore(b, CUDNN_DATA_FLOAT);
    matmul(b, io.q, io.kt, s0, io.seq_q, io.seq_kv, NULL); /* S0 = Q K^T */
    desc_t s = pointwise(b, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, s0, scalar_f32(b, ATTN_SCALE), NULL,
                         vscore(b, CUDNN_DATA_FLOAT), -1);
    s = padding_mask(b, &io, s);
    s = causal_bottom_right(b, &io, s);
    s = band_left(b, &io, s);
    desc_t p = softmax(b, &io, s);
    matmul(b, p, io.v, io.o, io.seq_q, NULL, io.seq_kv); /* O = P V */
    graph_finalize(b, handle);
    if (!b->failed) printf("graph: %d operations, %d variant-pack tensors: finalized\n", b->n_ops, b->n_vp);
    return !b->failed;
}

static void builder_destroy(builder *b) {
    for (int i = b->n_owned - 1; i >= 0; i--) cudnnBackendDestroyDescriptor(b->owned[i]);
    b->n_owned = 0;
}

/* ------------------------------------------------------------------------------------ */
/* Engine configs: heuristics, plans                                                    */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    int64_t engine; /* global engine index */
    int n_knobs;
    int64_t knob_type[MAX_KNOBS], knob_value[MAX_KNOBS];
} cfg_id;

static void cfg_name(const cfg_id *c, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "eng%lld", (long long)c->engine);
    for (int i = 0; i < c->n_knobs && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "_k%lld=%lld", (long long)c->knob_type[i], (long long)c->knob_value[i]);
}

static bool cfg_same(const cfg_id *a, const cfg_id *b) {
    if (a->engine != b->engine || a->n_knobs != b->n_knobs) return false;
    for (int i = 0; i < a->n_knobs; i++)
        if (a->knob_type[i] != b->knob_type[i] || a->knob_value[i] != b->knob_value[i]) return false;
    return true;
}

/* The knob choices of an engine config descriptor into c. */
static void read_knobs(desc_t cfg, cfg_id *c) {
    desc_t knobs[CUDNN_KNOB_TYPE_COUNTS];
    int nk = 0;
    int64_t got = 0;
    while (nk < CUDNN_KNOB_TYPE_COUNTS &&
           cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[nk]) == CUDNN_STATUS_SUCCESS)
        nk++;
    /* a config without knob choices may refuse the query: no knobs then, nothing printed */
    if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, nk, &got,
                                 knobs) == CUDNN_STATUS_SUCCESS)
        for (int64_t i = 0; i < got && i < nk && c->n_knobs < MAX_KNOBS; i++) {
            cudnnBackendKnobType_t type;
            int64_t value = 0, one = 0;
            if (cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &one,
                                         &type) ||
                cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &one,
                                         &value))
                continue;
            c->knob_type[c->n_knobs] = type;
            c->knob_value[c->n_knobs++] = value;
        }
    for (int i = 0; i < nk; i++) cudnnBackendDestroyDescriptor(knobs[i]);
}

/* Engine index and knob choices of a heuristics result. */
static bool read_cfg(desc_t cfg, cfg_id *c) {
    memset(c, 0, sizeof *c);
    desc_t engine = NULL;
    int64_t one = 0;
    if (!cudnn_ok(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine),
                  "cudnnBackendCreateDescriptor(ENGINE)"))
        return false;
    bool ok = cudnn_ok(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                                &one, &engine),
                       "cudnnBackendGetAttribute(ENGINECFG_ENGINE)") &&
              cudnn_ok(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &one,
                                                &c->engine),
                       "cudnnBackendGetAttribute(ENGINE_GLOBAL_INDEX)");
    if (ok) read_knobs(cfg, c);
    cudnnBackendDestroyDescriptor(engine);
    return ok;
}

/* Print the configs heuristics mode `mode` proposes and add the new ones to list[*n]. */
static void heuristics(desc_t graph, cudnnBackendHeurMode_t mode, const char *label, cfg_id *list, int *n) {
    desc_t heur = NULL, cfgs[MAX_CFGS];
    int64_t count = 0, got = 0;
    int made = 0;
    if (!cudnn_ok(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur),
                  "cudnnBackendCreateDescriptor(ENGINEHEUR)"))
        return;
    bool ok = cudnn_ok(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph),
                       "cudnnBackendSetAttribute(ENGINEHEUR_OPERATION_GRAPH)") &&
              cudnn_ok(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode),
                       "cudnnBackendSetAttribute(ENGINEHEUR_MODE)") &&
              cudnn_ok(cudnnBackendFinalize(heur), "cudnnBackendFinalize(ENGINEHEUR)") &&
              cudnn_ok(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                                &count, NULL),
                       "cudnnBackendGetAttribute(ENGINEHEUR_RESULTS count)");
    if (count > MAX_CFGS) count = MAX_CFGS;
    while (ok && made < count &&
           cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[made]) == CUDNN_STATUS_SUCCESS)
        made++;
    if (ok && made > 0)
        ok = cudnn_ok(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, made,
                                               &got, cfgs),
                      "cudnnBackendGetAttribute(ENGINEHEUR_RESULTS)");
    printf("heuristics %s: %lld config(s)\n", label, ok ? (long long)got : 0LL);
    for (int64_t i = 0; ok && i < got && i < made; i++) {
        cfg_id c;
        char name[128];
        if (!read_cfg(cfgs[i], &c)) continue;
        cfg_name(&c, name, sizeof name);
        printf("  %s #%lld %s\n", label, (long long)i, name);
        bool seen = false;
        for (int k = 0; k < *n; k++) seen = seen || cfg_same(&list[k], &c);
        if (!seen && *n < MAX_CFGS) list[(*n)++] = c;
    }
    for (int i = 0; i < made; i++) cudnnBackendDestroyDescriptor(cfgs[i]);
    cudnnBackendDestroyDescriptor(heur);
    fflush(stdout);
}

/* An execution plan for config c: engine (graph, index) -> knob choices -> engine config
 * -> plan; its workspace size. The descriptors are destroyed by plan_destroy. */
typedef struct {
    desc_t engine, knobs[MAX_KNOBS], cfg, plan;
    int n_knobs;
    int64_t workspace;
} plan_t;

static void plan_destroy(plan_t *p) {
    if (p->plan) cudnnBackendDestroyDescriptor(p->plan);
    if (p->cfg) cudnnBackendDestroyDescriptor(p->cfg);
    for (int i = 0; i < p->n_knobs; i++) cudnnBackendDestroyDescriptor(p->knobs[i]);
    if (p->engine) cudnnBackendDestroyDescriptor(p->engine);
    memset(p, 0, sizeof *p);
}

static bool knob_make(plan_t *p, const cfg_id *c, int i) {
    cudnnBackendKnobType_t type = (cudnnBackendKnobType_t)c->knob_type[i];
    if (!cudnn_ok(cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &p->knobs[i]),
                  "cudnnBackendCreateDescriptor(KNOB_CHOICE)"))
        return false;
    p->n_knobs++;
    return cudnn_ok(
               cudnnBackendSetAttribute(p->knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type),
               "cudnnBackendSetAttribute(KNOB_CHOICE_KNOB_TYPE)") &&
           cudnn_ok(cudnnBackendSetAttribute(p->knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
                                             &c->knob_value[i]),
                    "cudnnBackendSetAttribute(KNOB_CHOICE_KNOB_VALUE)") &&
           cudnn_ok(cudnnBackendFinalize(p->knobs[i]), "cudnnBackendFinalize(KNOB_CHOICE)");
}

static bool plan_build(desc_t graph, const cfg_id *c, plan_t *p) {
    memset(p, 0, sizeof *p);
    int64_t one = 0;
    bool ok =
        cudnn_ok(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &p->engine),
                 "cudnnBackendCreateDescriptor(ENGINE)") &&
        cudnn_ok(cudnnBackendSetAttribute(p->engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                          1, &graph),
                 "cudnnBackendSetAttribute(ENGINE_OPERATION_GRAPH)") &&
        cudnn_ok(cudnnBackendSetAttribute(p->engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &c->engine),
                 "cudnnBackendSetAttribute(ENGINE_GLOBAL_INDEX)") &&
        cudnn_ok(cudnnBackendFinalize(p->engine), "cudnnBackendFinalize(ENGINE)");
    for (int i = 0; ok && i < c->n_knobs; i++) ok = knob_make(p, c, i);
    ok = ok &&
         cudnn_ok(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &p->cfg),
                  "cudnnBackendCreateDescriptor(ENGINECFG)") &&
         cudnn_ok(cudnnBackendSetAttribute(p->cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                           &p->engine),
                  "cudnnBackendSetAttribute(ENGINECFG_ENGINE)");
    if (ok && p->n_knobs)
        ok = cudnn_ok(cudnnBackendSetAttribute(p->cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                               p->n_knobs, p->knobs),
                      "cudnnBackendSetAttribute(ENGINECFG_KNOB_CHOICES)");
    ok = ok && cudnn_ok(cudnnBackendFinalize(p->cfg), "cudnnBackendFinalize(ENGINECFG)") &&
         cudnn_ok(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &p->plan),
                  "cudnnBackendCreateDescriptor(EXECUTION_PLAN)") &&
         cudnn_ok(cudnnBackendSetAttribute(p->plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p->cfg),
                  "cudnnBackendSetAttribute(EXECUTION_PLAN_ENGINE_CONFIG)") &&
         cudnn_ok(cudnnBackendFinalize(p->plan), "cudnnBackendFinalize(EXECUTION_PLAN)") &&
         cudnn_ok(cudnnBackendGetAttribute(p->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &one,
                                           &p->workspace),
                  "cudnnBackendGetAttribute(EXECUTION_PLAN_WORKSPACE_SIZE)");
    if (!ok) plan_destroy(p);
    return ok;
}

/* ------------------------------------------------------------------------------------ */
/* Running one config and reading its result                                            */
/* ------------------------------------------------------------------------------------ */

/* Variant pack over the builder's tensors and workspace ws; execute. */
static bool execute(cudnnHandle_t handle, const builder *b, const plan_t *p, void *ws) {
    desc_t pack = NULL;
    bool ok = cudnn_ok(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack),
                       "cudnnBackendCreateDescriptor(VARIANT_PACK)") &&
              cudnn_ok(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, b->n_vp,
                                                b->vp_uid),
                       "cudnnBackendSetAttribute(VARIANT_PACK_UNIQUE_IDS)") &&
              cudnn_ok(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                                b->n_vp, b->vp_ptr),
                       "cudnnBackendSetAttribute(VARIANT_PACK_DATA_POINTERS)") &&
              cudnn_ok(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws),
                       "cudnnBackendSetAttribute(VARIANT_PACK_WORKSPACE)") &&
              cudnn_ok(cudnnBackendFinalize(pack), "cudnnBackendFinalize(VARIANT_PACK)");
    if (ok) {
        double t0 = now_s();
        cudnnStatus_t st = cudnnBackendExecute(handle, p->plan, pack);
        printf("  execute returned %s after %.3f s; synchronizing\n", cudnnGetErrorString(st), now_s() - t0);
        fflush(stdout);
        ok = cudnn_ok(st, "cudnnBackendExecute");
    }
    if (pack) cudnnBackendDestroyDescriptor(pack);
    return ok;
}

/* O's row of query head h at token 0 against V's row (kv head 0, token 0): the one
 * visible key. LSE of head h (Stats[token 0, h]) against scale * q_h . k_0. Also counts
 * the O and Stats elements written outside the sequence's rows (they should stay NaN). */
static void report(const char *name, const buffers *m, const layout *L) {
    int64_t no = L->q_elems, ns = L->s_elems, outside_o = 0, outside_s = 0;
    uint16_t *o = malloc((size_t)no * 2);
    float *s = malloc((size_t)ns * 4);
    if (!o || !s || !cuda_ok(cudaMemcpy(o, m->ptr[B_O], (size_t)no * 2, cudaMemcpyDeviceToHost), "cudaMemcpy O") ||
        !cuda_ok(cudaMemcpy(s, m->ptr[B_S], (size_t)ns * 4, cudaMemcpyDeviceToHost), "cudaMemcpy Stats")) {
        free(o);
        free(s);
        return;
    }
    double err[HQ], lse_ref[HQ];
    for (int h = 0; h < HQ; h++) {
        double e = 0.0, dot = 0.0;
        for (int d = 0; d < DH; d++) {
            double diff = fabs(half_to_double(o[h * DH + d]) - half_to_double(m->hv[d]));
            if (isnan(diff) || diff > e) e = diff; /* a NaN stays */
            dot += half_to_double(m->hq[h * DH + d]) * half_to_double(m->hk[d]);
        }
        err[h] = e;
        lse_ref[h] = (double)ATTN_SCALE * dot;
    }
    for (int64_t i = HQ * DH; i < no; i++) /* token 0's heads are elements 0 .. 63 */
        if (!isnan(half_to_double(o[i]))) outside_o++;
    for (int64_t i = HQ; i < ns; i++)
        if (!isnan(s[i])) outside_s++;
    double worst = isnan(err[0]) || err[0] > err[1] ? err[0] : err[1];
    printf("done %s: O max|O - V[0..31]| %.3g (head 0 %.3g, head 1 %.3g), LSE %.6f %.6f vs scale*q.k %.6f %.6f; "
           "written outside the sequence: O %lld, LSE %lld\n",
           name, worst, err[0], err[1], (double)s[0], (double)s[1], lse_ref[0], lse_ref[1], (long long)outside_o,
           (long long)outside_s);
    fflush(stdout);
    free(o);
    free(s);
}

typedef enum { RUN_OK, RUN_FAILED, RUN_DEVICE_LOST } run_result;

/* Build config c's plan, poison the outputs, execute, synchronize, report. */
static run_result run_config(cudnnHandle_t handle, const builder *b, buffers *m, const layout *L, const cfg_id *c) {
    char name[128];
    plan_t p;
    cfg_name(c, name, sizeof name);
    if (!plan_build(b->graph, c, &p)) {
        printf("skip %s: the plan does not build\n", name);
        fflush(stdout);
        return RUN_FAILED;
    }
    void *ws = NULL;
    size_t ws_bytes = p.workspace > 0 ? (size_t)p.workspace : 256;
    if (!cuda_ok(cudaMalloc(&ws, ws_bytes), "cudaMalloc(workspace)") || !poison_outputs(m) ||
        !cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize (before)")) {
        if (ws) cudaFree(ws);
        plan_destroy(&p);
        return RUN_DEVICE_LOST;
    }
    printf("start %s (workspace %lld bytes)\n", name, (long long)p.workspace);
    fflush(stdout);
    double t0 = now_s();
    bool ok = execute(handle, b, &p, ws);
    cudaError_t e = cudaDeviceSynchronize();
    double dt = now_s() - t0;
    run_result r = RUN_OK;
    if (!cuda_ok(e, "cudaDeviceSynchronize")) {
        printf("done %s: CUDA error after %.3f s; the device is not used further\n", name, dt);
        r = RUN_DEVICE_LOST;
    } else if (!ok) {
        printf("done %s: execute failed (%.3f s)\n", name, dt);
        r = RUN_FAILED;
    } else {
        printf("  synchronized after %.3f s\n", dt);
        report(name, m, L);
    }
    fflush(stdout);
    cudaFree(ws);
    plan_destroy(&p);
    return r;
}

/* ------------------------------------------------------------------------------------ */
/* Main                                                                                 */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    bool align16, aligned, all;
    cfg_id want; /* the single config to run without --all */
} options;

static int usage(const char *argv0) {
    fprintf(stderr, "usage: %s [--align16] [--aligned] [--engine N] [--knob V|none] [--all]\n", argv0);
    return 2;
}

static int parse(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->want.engine = 1; /* eng1_k24=2 */
    o->want.n_knobs = 1;
    o->want.knob_type[0] = CUDNN_KNOB_TYPE_KERNEL_CFG;
    o->want.knob_value[0] = 2;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--align16"))
            o->align16 = true;
        else if (!strcmp(argv[i], "--aligned"))
            o->aligned = true;
        else if (!strcmp(argv[i], "--all"))
            o->all = true;
        else if (!strcmp(argv[i], "--engine") && i + 1 < argc) {
            o->want.engine = strtoll(argv[++i], &end, 10);
            if (*end || o->want.engine < 0) return usage(argv[0]);
        } else if (!strcmp(argv[i], "--knob") && i + 1 < argc) {
            if (!strcmp(argv[++i], "none")) {
                o->want.n_knobs = 0;
                continue;
            }
            o->want.n_knobs = 1;
            o->want.knob_value[0] = strtoll(argv[i], &end, 10);
            if (*end) return usage(argv[0]);
        } else
            return usage(argv[0]);
    }
    return 0;
}

/* cuDNN's version and file, the GPU, the CUDA versions. */
static void describe(void) {
    const char *file = "?";
    struct link_map *map = NULL;
    void *lib = dlopen("libcudnn.so.9", RTLD_LAZY | RTLD_NOLOAD); /* the copy already loaded */
    if (lib && dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) file = map->l_name;
    printf("cudnnGetVersion() = %zu (headers %d) from %s\n", cudnnGetVersion(), CUDNN_VERSION, file);
    if (lib) dlclose(lib);
    int drv = 0, rt = 0, dev = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    struct cudaDeviceProp prop;
    if (cuda_ok(cudaGetDevice(&dev), "cudaGetDevice") &&
        cuda_ok(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties"))
        printf("GPU %d: %s sm_%d%d; CUDA driver %d, runtime %d\n", dev, prop.name, prop.major, prop.minor, drv, rt);
    fflush(stdout);
}

static int run_all(cudnnHandle_t handle, const builder *b, buffers *m, const layout *L, const options *o,
                   const cfg_id *list, int n) {
    int status = 0;
    if (!o->all) {
        run_result r = run_config(handle, b, m, L, &o->want);
        return r == RUN_OK ? 0 : r == RUN_FAILED ? 1 : 2;
    }
    if (n == 0) printf("--all: heuristics proposed no config\n");
    for (int i = 0; i < n; i++) {
        run_result r = run_config(handle, b, m, L, &list[i]);
        if (r == RUN_DEVICE_LOST) return 2;
        if (r == RUN_FAILED) status = 1;
    }
    return status;
}

int main(int argc, char **argv) {
    options o;
    if (parse(argc, argv, &o)) return 2;
    describe();
    layout L;
    layout_make(&L, o.aligned);
    printf("case: fp16 thd, b %d, heads %d over %d, d %d, s_q = s_kv = %d with lengths %d / %d, %d unused tokens, "
           "token rows %lld / %lld elements (%s), causal bottom-right, band of one key, scale %g; declared "
           "alignment: %s\n",
           NB, HQ, HK, DH, SQ, LEN_Q, LEN_KV, THD_GAP, (long long)L.tq, (long long)L.tk,
           o.aligned ? "aligned control" : "not 16-byte aligned", (double)ATTN_SCALE,
           o.align16 ? "16 for every tensor (--align16)" : "what the strides keep");
    cudnnHandle_t handle = NULL;
    buffers m;
    if (!cuda_ok(cudaSetDevice(0), "cudaSetDevice") || !cudnn_ok(cudnnCreate(&handle), "cudnnCreate") ||
        !buffers_make(&m, &L))
        return 2;
    static builder b; /* static: the variant pack points into its scalar storage */
    memset(&b, 0, sizeof b);
    b.next_uid = 1;
    b.align16 = o.align16;
    b.version = cudnnGetVersion();
    int status = 2;
    if (build_graph(&b, handle, &L, &m)) {
        cfg_id list[MAX_CFGS];
        int n = 0;
        heuristics(b.graph, CUDNN_HEUR_MODE_A, "A", list, &n);
        heuristics(b.graph, CUDNN_HEUR_MODE_FALLBACK, "FALLBACK", list, &n);
        status = run_all(handle, &b, &m, &L, &o, list, n);
    }
    builder_destroy(&b);
    buffers_free(&m);
    cudnnDestroy(handle);
    printf("exit %d\n", status);
    return status;
}
