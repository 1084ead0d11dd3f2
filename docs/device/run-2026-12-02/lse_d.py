# LSE error of torch's fused SDPA kernels against fp64, in units of attnfuzz's LSE allowance
# kappa = 2^-21 (1 + A_i) + 2^-24 sqrt(n_i) (harness/judge/criterion.c), per head dim.
import math, torch
aten = torch.ops.aten
torch.backends.cuda.matmul.allow_tf32 = False
def run(d, engine, B=2, H=8, S=512, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed + d)
    q, k, v = (torch.randn(B, H, S, d, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
    sc = 1 / math.sqrt(d)
    if engine == "efficient":
        lse = aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, True, scale=sc)[1][..., :S]
    elif engine == "flash":
        lse = aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True, False, scale=sc)[1]
    else:  # fp32 IEEE GEMM on the GPU (no tensor cores for fp32 with TF32 off), LSE in fp32
        s32 = (q.float() @ k.float().transpose(-1, -2)) * sc
        s32 = s32.masked_fill(torch.ones(S, S, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
        lse = torch.logsumexp(s32, -1)
    qd, kd = q.double(), k.double()
    s = (qd @ kd.transpose(-1, -2)) * sc
    a = (qd.abs() @ kd.abs().transpose(-1, -2)) * sc
    causal = torch.ones(S, S, device="cuda", dtype=torch.bool).triu(1)
    s = s.masked_fill(causal, float("-inf")); a = a.masked_fill(causal, 0)
    ex = torch.logsumexp(s, -1)
    A = a.amax(-1); n = torch.arange(1, S + 1, device="cuda", dtype=torch.float64)
    kappa = 2.0**-21 * (1 + A) + 2.0**-24 * n.sqrt()
    r = ((lse.double() - ex).abs() / kappa).flatten()
    score_units = None
    return r.max().item(), torch.quantile(r, 0.999).item(), (r > 1).sum().item(), r.numel()
print("engine d: max ratio, 99.9% ratio, rows over 1, rows (B2 H8 S512 causal bf16 randn)")
for eng in ("fp32-gemm", "efficient", "flash"):
    for d in (64, 128, 256, 512):
        try:
            print(eng, d, "%.3f %.3f %d %d" % run(d, eng), flush=True)
        except Exception as e:
            print(eng, d, "error", str(e)[:120], flush=True)
