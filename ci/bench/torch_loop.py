#!/usr/bin/env python3
"""torch_loop.py MIX.jsonl [TIME_LIMIT_S] — the anchor of the judge benchmark: a plain
PyTorch test loop over the same configurations attnfuzz runs (gen_mix.py).

Per case: inputs (normal, the case dtype, bhsd) on the GPU; torch SDPA with its default
backend, forward + backward; a float64 math reference and a low-precision math
reference (the case dtype) of the same case, forward + backward through autograd; the
FlashAttention criterion on O, dQ, dK, dV: max|x - ref64| <= 2 max|lowp - ref64| + 1e-5.
Prints one summary line: cases, seconds, cases/s, failures.

  python3 ci/bench/torch_loop.py out/mix/mix.jsonl 120
  python3 ci/bench/torch_loop.py --long S [--heads 16 --dim 128]   # float64 reference only
"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F


def math_attention(q, k, v, causal, scale):
    """q (B,Hq,Sq,D), k/v (B,Hkv,Skv,D): the textbook formula in q's dtype."""
    group = q.shape[1] // k.shape[1]
    if group > 1:
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        sq, skv = q.shape[2], k.shape[2]
        mask = torch.ones(sq, skv, dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~mask, float('-inf'))
    p = torch.softmax(s, dim=-1)
    return p @ v


def leaf(x):
    return x.detach().clone().requires_grad_(True)


def one_case(c, dev):
    dt = {'bf16': torch.bfloat16, 'fp16': torch.float16}[c['dtype']]
    g = torch.Generator(device=dev).manual_seed(c['seed'])
    B, Hq, Hkv, D = c['batch'], c['heads_q'], c['heads_kv'], c['head_dim']
    q = torch.randn(B, Hq, c['seqlen_q'], D, generator=g, device=dev).to(dt)
    k = torch.randn(B, Hkv, c['seqlen_kv'], D, generator=g, device=dev).to(dt)
    v = torch.randn(B, Hkv, c['seqlen_kv'], D, generator=g, device=dev).to(dt)
    do = torch.randn(B, Hq, c['seqlen_q'], D, generator=g, device=dev).to(dt)
    scale = 1.0 / math.sqrt(D)
    results = []
    for kind in ('kernel', 'ref64', 'lowp'):
        if kind == 'ref64':
            qi, ki, vi, doi = leaf(q.double()), leaf(k.double()), leaf(v.double()), do.double()
        else:
            qi, ki, vi, doi = leaf(q), leaf(k), leaf(v), do
        if kind == 'kernel':
            o = F.scaled_dot_product_attention(qi, ki, vi, is_causal=c['causal'], scale=scale,
                                               enable_gqa=Hq != Hkv)
        else:
            o = math_attention(qi, ki, vi, c['causal'], scale)
        o.backward(doi)
        results.append([o.detach().double(), qi.grad.double(), ki.grad.double(), vi.grad.double()])
    kern, ref, lowp = results
    ok = True
    for a, r, l in zip(kern, ref, lowp):
        if not bool(((a - r).abs().max() <= 2 * (l - r).abs().max() + 1e-5).item()):
            ok = False
    return ok


def long_reference(s, heads, dim):
    """Seconds and peak GPU bytes of the float64 reference (fwd + bwd) of b1 h s d causal,
    or the exception name when it fails (out of memory)."""
    dev = 'cuda'
    torch.cuda.reset_peak_memory_stats()
    try:
        t0 = time.time()
        q = torch.randn(1, heads, s, dim, device=dev, dtype=torch.float64, requires_grad=True)
        k = torch.randn(1, heads, s, dim, device=dev, dtype=torch.float64, requires_grad=True)
        v = torch.randn(1, heads, s, dim, device=dev, dtype=torch.float64, requires_grad=True)
        o = math_attention(q, k, v, True, 1.0 / math.sqrt(dim))
        o.backward(torch.randn_like(o))
        torch.cuda.synchronize()
        return '%.3f s, peak %.1f GiB' % (time.time() - t0, torch.cuda.max_memory_allocated() / 2**30)
    except torch.OutOfMemoryError:
        return 'out of memory (peak %.1f GiB before failing)' % (torch.cuda.max_memory_allocated() / 2**30)


def main():
    if sys.argv[1] == '--long':
        s = int(sys.argv[2])
        heads = int(sys.argv[sys.argv.index('--heads') + 1]) if '--heads' in sys.argv else 16
        dim = int(sys.argv[sys.argv.index('--dim') + 1]) if '--dim' in sys.argv else 128
        print('torch float64 reference b1 h%d s%d d%d causal fwd+bwd: %s' % (heads, s, dim, long_reference(s, heads, dim)))
        return
    limit = float(sys.argv[2]) if len(sys.argv) > 2 else 1e9
    cases = [json.loads(line) for line in open(sys.argv[1])]
    dev = 'cuda'
    one_case(cases[0], dev)   # warm-up (kernels, cuBLAS handles), not timed
    torch.cuda.synchronize()
    t0 = time.time()
    done = fails = 0
    for c in cases:
        if not one_case(c, dev):
            fails += 1
        done += 1
        if time.time() - t0 > limit:
            break
    torch.cuda.synchronize()
    dt = time.time() - t0
    print('torch loop: %d cases in %.1f s = %.2f cases/s (%d failed the criterion)' % (done, dt, done / dt, fails))


if __name__ == '__main__':
    main()
