"""sage_short_kv.py SEED — a bare check of SageAttention 1.0.6 (no attnfuzz): is O right
when the key count is not a multiple of the kernel's key block?

With one key, softmax gives that key weight 1, so O must equal V's row exactly. The
attnfuzz campaign's minimised case (fp16, s_q 1, s_kv 1, d 64, mask none) saw O = 0.0449
where V = 2.875, i.e. 2.875 / 64: as if 63 more keys with score 0 and V = 0 shared the
softmax. For s_kv in a range around the block edges this prints, per s_kv, the largest error
of sageattn's O against a float64 reference, the same for a plain fp16 computation
(fp32 accumulation, one rounding), and for s_kv = 1 the ratio O / V.
fp16, b1 h1, layout HND, d 64, no mask.
"""
import sys

import torch
from sageattention import sageattn

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.manual_seed(seed)
dev = "cuda"


def ref(q, k, v, dt):  # softmax(q k^T / sqrt(d)) v in dtype dt
    s = (q.to(dt) @ k.to(dt).transpose(-1, -2)) / q.shape[-1] ** 0.5
    return torch.softmax(s, -1) @ v.to(dt)


d = 64
for skv in (1, 2, 7, 63, 64, 65, 100, 127, 128, 129, 200):
    q = torch.randn(1, 1, 4, d, device=dev).half()
    k = torch.randn(1, 1, skv, d, device=dev).half()
    v = torch.randn(1, 1, skv, d, device=dev).half()
    o = sageattn(q.clone(), k.clone(), v.clone(), tensor_layout="HND", is_causal=False)
    r64 = ref(q, k, v, torch.float64)
    err = (o.double() - r64).abs().max().item()
    err16 = (ref(q, k, v, torch.float32).half().double() - r64).abs().max().item()
    line = "seed %d s_kv %3d: sage O max err %.4g; plain fp16 %.4g; |O| max %.3g" % (
        seed, skv, err, err16, r64.abs().max().item())
    if skv == 1:
        ratio = (o.double() / v.double()).flatten()
        line += "; O / V over d: min %.5g max %.5g (1/64 = %.5g)" % (ratio.min().item(), ratio.max().item(), 1 / 64)
    print(line, flush=True)
