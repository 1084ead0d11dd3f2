"""fa4_findings.py SEED — the two shapes an attnfuzz campaign minimised on FlashAttention 4
(flash-attn-4 4.0.0b36, H200), run without attnfuzz against a float64 reference:

1. fp16 forward, paged K/V: b1, h 1, s_q 1, s_kv 256 in pages of 64 (a shuffled page
   table), d_qk 96, d_v 64, no mask: O.
2. fp16 backward: b1, h 1, s_q 65, s_kv 2, d 8, no mask: dQ (and dK, dV).

For each output it prints the largest error against float64 and, beside it, the same
error of a plain fp16 computation (torch, fp32 accumulation, one rounding per output):
an FA4 error far above that one is worth the write-up; close to it, it is rounding.
Written for the offline install of docs/targets.md (PYTHONPATH from ci/wheels/install.sh).
"""
import sys

import torch
from flash_attn.cute import flash_attn_func, flash_attn_varlen_func

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.manual_seed(seed)
dev = "cuda"


def ref64(q, k, v, scale):  # (B, S, H, D) -> (B, Sq, H, Dv), float64
    s = torch.einsum("bqhd,bkhd->bhqk", q.double(), k.double()) * scale
    return torch.einsum("bhqk,bkhd->bqhd", torch.softmax(s, -1), v.double())


def ref16(q, k, v, scale):  # fp32 accumulation, outputs rounded to fp16 once
    s = torch.einsum("bqhd,bkhd->bhqk", q.float(), k.float()) * scale
    return torch.einsum("bhqk,bkhd->bqhd", torch.softmax(s, -1), v.float()).half()


# 1. paged decode with d_qk 96, d_v 64
B, Sq, Skv, H, Dqk, Dv, page = 1, 1, 256, 1, 96, 64, 64
q = torch.randn(B, Sq, H, Dqk, device=dev).half()
k = torch.randn(B, Skv, H, Dqk, device=dev).half()
v = torch.randn(B, Skv, H, Dv, device=dev).half()
npages = Skv // page
perm = torch.randperm(npages, device=dev)
kpool = torch.empty(npages, page, H, Dqk, device=dev, dtype=torch.half)
vpool = torch.empty(npages, page, H, Dv, device=dev, dtype=torch.half)
for p in range(npages):  # logical page p lives in pool slot perm[p]
    kpool[perm[p]] = k[0, p * page:(p + 1) * page]
    vpool[perm[p]] = v[0, p * page:(p + 1) * page]
table = perm.to(torch.int32).view(B, npages)
scale = Dqk ** -0.5
i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
out, lse = flash_attn_varlen_func(q, kpool, vpool, page_table=table, seqused_q=i32([Sq]), seqused_k=i32([Skv]),
                                  softmax_scale=scale, causal=False, return_lse=True)
exact = ref64(q, k, v, scale)
print("seed %d paged decode d_qk 96 d_v 64: FA4 O max err %.4g; plain fp16 O max err %.4g; |O| max %.3g" % (
    seed, (out.double() - exact).abs().max().item(), (ref16(q, k, v, scale).double() - exact).abs().max().item(),
    exact.abs().max().item()))
dense, _ = flash_attn_func(q, k, v, softmax_scale=scale, causal=False, return_lse=True)
print("seed %d the same without pages (flash_attn_func): O max err %.4g" % (seed, (dense.double() - exact).abs().max().item()))

# 2. backward, s_q 65 > s_kv 2, d 8
B, Sq, Skv, H, D = 1, 65, 2, 1, 8
q = torch.randn(B, Sq, H, D, device=dev).half().requires_grad_()
k = torch.randn(B, Skv, H, D, device=dev).half().requires_grad_()
v = torch.randn(B, Skv, H, D, device=dev).half().requires_grad_()
do = torch.randn(B, Sq, H, D, device=dev).half()
scale = D ** -0.5
out, lse = flash_attn_func(q, k, v, softmax_scale=scale, causal=False, return_lse=True)
out.backward(do)
grads = [t.grad.double() for t in (q, k, v)]
q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
ref64(q64, k64, v64, scale).backward(do.double())
q32, k32, v32 = (t.detach().float().requires_grad_() for t in (q, k, v))
s = torch.einsum("bqhd,bkhd->bhqk", q32, k32) * scale
torch.einsum("bhqk,bkhd->bqhd", torch.softmax(s, -1), v32).backward(do.float())
for name, g, e, p in zip(("dQ", "dK", "dV"), grads, (q64.grad, k64.grad, v64.grad), (q32.grad, k32.grad, v32.grad)):
    print("seed %d bwd s_q 65 s_kv 2 d 8: FA4 %s max err %.4g; fp32 %s rounded to fp16 max err %.4g; |%s| max %.3g" % (
        seed, name, (g - e).abs().max().item(), name, (p.half().double() - e).abs().max().item(), name,
        e.abs().max().item()))
