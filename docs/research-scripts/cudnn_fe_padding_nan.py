"""cudnn_fe_padding_nan.py [SEED] — a bare check (no attnfuzz) of cuDNN's SDPA forward with a
padding mask (seq_len_q / seq_len_kv) when the padded rows of Q, K and V hold NaN, written while
triaging a cudnn-fe campaign finding (docs/cudnn-findings.md, "Candidates of 2026-12-05").

The padded tokens (row >= the sequence's length) are masked out: no valid output row may depend
on them. For each shape: O from cudnn-frontend's sdpa_torch with the padding filled with 0 and
with NaN; prints the error of the valid rows against a float64 reference over the valid tokens
(over max |reference|; fp16 rounding is about 5e-4 of it), the number of non-finite values in
the valid rows with NaN padding, and the largest change of a valid row between the two fills.
Needs the nvidia-cudnn-frontend wheel and torch with CUDA. Exit 0 always: it reports.
"""
import sys

import torch

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
dev = "cuda"
SHAPES = [  # (batch, heads, s (= s_q = s_kv), head dim, sequence lengths)
    (1, 1, 2, 8, [1]),
    (2, 2, 64, 64, [37, 64]),
    (2, 1, 128, 128, [100, 5]),
]


def reference(q, k, v, lens, scale):
    o = torch.zeros(q.shape, dtype=torch.float64, device=dev)
    for b, n in enumerate(lens):
        s = (q[b, :, :n].double() @ k[b, :, :n].double().transpose(-1, -2)) * scale
        o[b, :, :n] = torch.softmax(s, -1) @ v[b, :, :n].double()
    return o


def run(cudnn, q, k, v, lens, scale, fill):
    x = [t.clone() for t in (q, k, v)]
    for t in x:
        for b, n in enumerate(lens):
            t[b, :, n:] = fill
    i32 = torch.tensor(lens, dtype=torch.int32, device=dev)
    o, _ = cudnn.sdpa_torch(x[0], x[1], x[2], seq_len_q=i32, seq_len_kv=i32, scale=scale, return_lse=True,
                            is_causal=False)
    torch.cuda.synchronize()
    return o.detach().double()


def main():
    import cudnn

    print("cudnn backend %s, frontend %s, seed %d" % (cudnn.backend_version(), getattr(cudnn, "__version__", "?"),
                                                    seed))
    for (b, h, s, d, lens) in SHAPES:
        torch.manual_seed(seed)
        q, k, v = (torch.randn(b, h, s, d, device=dev).half() for _ in range(3))
        scale = d ** -0.5
        ref = reference(q, k, v, lens, scale)
        try:
            o0 = run(cudnn, q, k, v, lens, scale, 0.0)
            on = run(cudnn, q, k, v, lens, scale, float("nan"))
        except Exception as e:  # a refusal is a result too
            print("b%d h%d s%d d%d lens %s: refused: %s" % (b, h, s, d, lens, str(e).splitlines()[0][:200]))
            continue
        err, bad, moved = 0.0, 0, 0.0
        for bi, n in enumerate(lens):
            r = ref[bi, :, :n]
            err = max(err, ((o0[bi, :, :n] - r).abs().max() / r.abs().max()).item())
            vn = on[bi, :, :n]
            bad += int((~torch.isfinite(vn)).sum().item())
            fin = torch.isfinite(vn)
            if fin.any():
                moved = max(moved, (vn[fin] - o0[bi, :, :n][fin]).abs().max().item())
        print("b%d h%d s%d d%d lens %s: zero padding err/max %.2e; NaN padding: %d non-finite of %d valid O "
              "values, largest finite change %.3g" % (b, h, s, d, lens, err, bad, sum(lens) * h * d, moved))


main()
