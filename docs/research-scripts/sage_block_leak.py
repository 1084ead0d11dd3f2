"""sage_block_leak.py SEED — a bare check of SageAttention 1.0.6 (no attnfuzz): does an
output row move when only inputs it must not depend on change?

1. Queries: O row 0 (mask none, so row 0 sees every key) must depend on q_0, K and V
   only. Scale query row 16 by 50 and compare O row 0 bit for bit (the attnfuzz
   campaign's leak bucket: one row of the same 64-row query block changed).
2. Keys, causal: with is_causal=True row i must depend on keys 0..i only. Scale keys
   200..255 by 50 and compare O rows 0..199.
Each part prints the largest move of the protected rows and the fp64 reference's own
error of those rows (the move is a dependence, not rounding, when the reference's inputs
are the same in both runs). fp16, b1 h4, layout HND, d 64 (part 1) and 128 (part 2).
"""
import sys

import torch
from sageattention import sageattn

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.manual_seed(seed)
dev = "cuda"


def ref(q, k, v, causal):
    s = (q.double() @ k.double().transpose(-1, -2)) / q.shape[-1] ** 0.5
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool, device=s.device), 1), float("-inf"))
    return torch.softmax(s, -1) @ v.double()


# part 1: a query row of the same block
b, h, n, d = 1, 4, 128, 64
q = (0.25 * torch.randn(b, h, n, d, device=dev)).half()
k = (0.25 * torch.randn(b, h, n, d, device=dev)).half()
v = (0.25 * torch.randn(b, h, n, d, device=dev)).half()
o1 = sageattn(q.clone(), k.clone(), v.clone(), tensor_layout="HND", is_causal=False)
q2 = q.clone()
q2[:, :, 16, :] *= 50
o2 = sageattn(q2, k.clone(), v.clone(), tensor_layout="HND", is_causal=False)
move = (o1[:, :, 0, :].float() - o2[:, :, 0, :].float()).abs().max().item()
err = (o1[:, :, 0, :].double() - ref(q, k, v, False)[:, :, 0, :]).abs().max().item()
print("seed %d part 1 (query row 16 x 50): O row 0 moved by %.4g (bitwise equal: %s); its error vs fp64 %.4g"
      % (seed, move, bool(torch.equal(o1[:, :, 0, :], o2[:, :, 0, :])), err))

# part 2: future keys under causal
b, h, n, d = 1, 4, 256, 128
q = torch.randn(b, h, n, d, device=dev).half()
k = torch.randn(b, h, n, d, device=dev).half()
v = torch.randn(b, h, n, d, device=dev).half()
o1 = sageattn(q.clone(), k.clone(), v.clone(), tensor_layout="HND", is_causal=True)
k2 = k.clone()
k2[:, :, 200:, :] *= 50
o2 = sageattn(q.clone(), k2, v.clone(), tensor_layout="HND", is_causal=True)
move = (o1[:, :, :200, :].float() - o2[:, :, :200, :].float()).abs().max().item()
err = (o1[:, :, :200, :].double() - ref(q, k, v, True)[:, :, :200, :]).abs().max().item()
print("seed %d part 2 (keys 200..255 x 50, causal): O rows 0..199 moved by %.4g (bitwise equal: %s); their error "
      "vs fp64 %.4g" % (seed, move, bool(torch.equal(o1[:, :, :200, :], o2[:, :, :200, :])), err))
kk = k.clone()
sageattn(q.clone(), kk, v.clone(), tensor_layout="HND", is_causal=True)
print("seed %d: sageattn left its K argument unchanged: %s" % (seed, bool(torch.equal(kk, k))))
