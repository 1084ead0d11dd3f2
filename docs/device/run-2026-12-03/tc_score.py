# Score error of bf16 tensor-core dot products on the GPU against fp64, in units of
# 2^-24 a_ij (a_ij = scale sum_d |q_id k_jd|, attnfuzz's A), per head dim and data shape.
# attnfuzz's LSE / P budget has 2^-21 (1 + A_i) for the fp32 score (judge/criterion.c):
# "units" 8 = that term. Engines: a Triton tl.dot kernel (fp32 accumulator, as the MXFP8
# kernels and FlexAttention use), torch's efficient SDPA kernel with one key (LSE_i = s_i0
# exactly, so its LSE error is its score error), and fp32 IEEE GEMM (TF32 off) as control.
import math, sys, torch, triton, triton.language as tl
torch.backends.cuda.matmul.allow_tf32 = False
aten = torch.ops.aten

@triton.jit
def _dot(Q, K, S, M, N, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM); rn = pn * BN + tl.arange(0, BN); rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :], mask=rm[:, None] < M, other=0.0)
    k = tl.load(K + rn[:, None] * D + rd[None, :], mask=rn[:, None] < N, other=0.0)
    s = tl.dot(q, tl.trans(k))  # fp32 accumulate
    tl.store(S + rm[:, None] * N + rn[None, :], s, mask=(rm[:, None] < M) & (rn[None, :] < N))

def triton_scores(q, k):  # q (M, D), k (N, D) bf16 -> (M, N) fp32
    M, D = q.shape; N = k.shape[0]
    s = torch.empty(M, N, device="cuda", dtype=torch.float32)
    _dot[(triton.cdiv(M, 64), triton.cdiv(N, 64))](q, k, s, M, N, D=D, BM=64, BN=64)
    return s

def data(kind, n, d, g):
    x = torch.randn(n, d, device="cuda", generator=g)
    if kind == "outlier8":  # harness data normal:1 outlier_channels:8:-5e+01
        x[:, :8] = -50.0
    elif kind == "positive":
        x = x.abs() + 0.5
    elif kind == "lead":  # one large product first, then many small ones: alignment loss
        x = torch.rand(n, d, device="cuda", generator=g) * 0.01
        x[:, 0] = 64.0
    return x.to(torch.bfloat16)

def units(s_kernel, q, k, sc):
    qd, kd = q.double(), k.double()
    exact = (qd @ kd.T) * sc
    a = (qd.abs() @ kd.abs().T) * sc
    u = ((s_kernel.double() - exact).abs() / (2.0**-24 * a)).flatten()
    return u.max().item(), torch.quantile(u, 0.999).item()

print("kind d engine: max and 99.9% of |s - exact| / (2^-24 a_ij); attnfuzz's term is 8 (+2^-21)")
g = torch.Generator(device="cuda").manual_seed(1)
for kind in ("randn", "outlier8", "positive", "lead"):
    for d in (16, 32, 64, 128, 256, 512):
        q, k = data(kind, 1024, d, g), data(kind, 1024, d, g)
        sc = 1 / math.sqrt(d)
        rows = []
        rows.append(("triton", triton_scores(q, k) * sc))
        rows.append(("fp32-gemm", (q.float() @ k.float().T) * sc))
        for name, s in rows:
            mx, p = units(s, q, k, sc)
            print("%-8s %3d %-10s %8.2f %8.2f" % (kind, d, name, mx, p), flush=True)
        # efficient SDPA, one key per (b, h): LSE = score; 1024 queries x 1 key, 256 (b,h)
        try:
            B, H = 16, 16
            qq = data(kind, B * H * 64, d, g).view(B, H, 64, d)
            kk = data(kind, B * H, d, g).view(B, H, 1, d)
            vv = torch.zeros_like(kk)
            lse = aten._scaled_dot_product_efficient_attention(qq, kk, vv, None, True, 0.0, False, scale=sc)[1][..., :64]
            exact = (qq.double() @ kk.double().transpose(-1, -2)).squeeze(-1) * sc
            a = (qq.double().abs() @ kk.double().abs().transpose(-1, -2)).squeeze(-1) * sc
            u = ((lse.double() - exact).abs() / (2.0**-24 * a)).flatten()
            print("%-8s %3d %-10s %8.2f %8.2f" % (kind, d, "efficient", u.max().item(), torch.quantile(u, 0.999).item()), flush=True)
        except Exception as e:
            print(kind, d, "efficient error", str(e)[:100])
