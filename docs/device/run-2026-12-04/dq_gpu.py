"""The real torch kernels on the exact inputs of a finding case (saved by dq_variants.py
with DQ_SAVE; numpy npz, loaded without pickle): forward + backward per SDPA backend and
mask form, each gradient's largest error against fp64 autograd on the same inputs, and the
value at one element. Run on the GPU: python3 dq_gpu.py FILE.npz [h,i,c]"""
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"math": SDPBackend.MATH, "efficient": SDPBackend.EFFICIENT_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def run(backend, q, k, v, do, scale, mask, is_causal):
    q, k, v = (x.clone().requires_grad_(True) for x in (q, k, v))
    with sdpa_kernel([BACKENDS[backend]]):
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)
    o.backward(do)
    return o.detach(), q.grad, k.grad, v.grad


def main():
    z = np.load(sys.argv[1], allow_pickle=False)
    at = tuple(int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "0,0,0").split(","))
    dt = torch.float16 if bool(z["fp16"]) else torch.bfloat16
    q, k, v, do = (torch.from_numpy(z[n]).cuda() for n in ("q", "k", "v", "do"))
    vis = torch.from_numpy(z["mask"]).cuda()
    scale = float(z["scale"])
    g = q.shape[1] // k.shape[1]
    kr, vr = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)  # K/V heads repeated (dK, dV summed back)
    print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), "shape q", tuple(q.shape), "k",
          tuple(k.shape), dt)
    ref = run("math", q.double(), kr.double(), vr.double(), do.double(), scale, vis[None, None], False)
    tril = torch.ones_like(vis).tril()
    forms = {"bool mask": vis[None, None], "float -inf mask":
             torch.zeros(vis.shape, device="cuda", dtype=dt).masked_fill(~vis, float("-inf"))[None, None]}
    if torch.equal(vis, tril):
        forms["is_causal"] = None
    inputs = {"dtype": lambda x: x.to(dt), "fp32": lambda x: x.float()}
    for iname, conv in inputs.items():
        for fname, mask in forms.items():
            for b in BACKENDS:
                m = mask if mask is None or mask.dtype == torch.bool else (mask if iname == "dtype" else mask.float())
                try:
                    out = run(b, conv(q), conv(kr), conv(vr), conv(do), scale, m, mask is None)
                except RuntimeError as e:
                    print("%-6s %-16s %-9s declined: %s" % (iname, fname, b, str(e).splitlines()[0][:90]))
                    continue
                errs = ["%s %.3g" % (n, (x.double() - r).abs().max().item())
                        for n, x, r in zip(("O", "dQ", "dK", "dV"), out, ref)]
                h, i, c = at
                print("%-6s %-16s %-9s max err %s | dQ[h%d r%d c%d] %.6f (exact %.6f)" % (
                    iname, fname, b, ", ".join(errs), h, i, c, out[1][0, h, i, c].item(), ref[1][0, h, i, c].item()))


if __name__ == "__main__":
    main()
