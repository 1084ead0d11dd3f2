"""cudnn_alibi_batch.py [SEED] — a bare check (no attnfuzz) of cuDNN's SDPA forward with ALiBi at
batch 1 and batch 2, written while triaging docs/cudnn-findings.md ("The other candidates of
2026-12-05": attnfuzz's pointwise ALiBi graph fails on every engine at batch 2 and passes at batch
1; with the paper's slopes the LSE of batch 1 is off by exactly 4.0, a constant shift of the row).

Two graphs through cudnn-frontend's pygraph, each at batch 1 and 2 (fp16, h 4, s_q = s_kv 64,
d 64, causal top-left), against a float64 reference of the same inputs:
  fe-alibi   the frontend's own use_alibi_mask (slopes 2^(-8 (h + 1) / H), the bias
             slope * (col - row) on the visible keys col <= row);
  fe-bias    the same ALiBi handed as a materialised [1, h, s_q, s_kv] bias tensor (a control).
Prints, per graph and batch, the largest O error over max |reference| (fp16 rounding is about
5e-4) and the largest |Stats - LSE| per batch index (natural log; fp32 about 1e-6). A batch-2
failure of fe-alibi with fe-bias right would show the frontend's ALiBi itself loses the batch.
Needs the nvidia-cudnn-frontend wheel and torch with CUDA. Exit 0 always: it reports.
"""
import sys

import torch

import fe_graph  # this folder's shared pygraph runner

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
dev = "cuda"
H, S, D = 4, 64, 64


def slopes():
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)], dtype=torch.float64, device=dev)


def alibi_bias():  # [1, H, S, S] float64: slope * (col - row), causal top-left
    i = torch.arange(S, device=dev).view(S, 1)
    j = torch.arange(S, device=dev).view(1, S)
    return slopes().view(1, H, 1, 1) * (j - i).double().view(1, 1, S, S)


def reference(q, k, v, scale):
    s = (q.double() @ k.double().transpose(-1, -2)) * scale + alibi_bias()
    s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=dev).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v.double(), torch.logsumexp(s, -1)


def run(cudnn, handle, q, k, v, scale, form):
    b = q.shape[0]
    o = torch.empty_like(q)
    stats = torch.empty(b, H, S, 1, device=dev, dtype=torch.float32)
    g = cudnn.pygraph(io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=handle)
    pack = {}
    tq, tk, tv = (fe_graph.bind(g, pack, x) for x in (q, k, v))
    kw = dict(name="fwd", q=tq, k=tk, v=tv, is_inference=False, attn_scale=scale, use_causal_mask=True)
    if form == "alibi":
        kw["use_alibi_mask"] = True
    else:
        bias = alibi_bias().half().contiguous()
        kw["bias"] = fe_graph.bind(g, pack, bias)
    return fe_graph.sdpa_forward(cudnn, g, pack, handle, kw, o, stats)


def main():
    import cudnn

    handle = cudnn.create_handle()
    print("cudnn backend %s, seed %d, fp16 h %d s %d d %d causal" % (cudnn.backend_version(), seed, H, S, D))
    for batch in (1, 2):
        torch.manual_seed(seed)
        q, k, v = (torch.randn(batch, H, S, D, device=dev).half() for _ in range(3))
        scale = D ** -0.5
        ro, rl = reference(q, k, v, scale)
        for form in ("alibi", "bias"):
            try:
                o, lse = run(cudnn, handle, q, k, v, scale, form)
            except Exception as e:  # a refusal is a result too
                print("batch %d fe-%-5s refused: %s" % (batch, form, str(e).splitlines()[0][:200]))
                continue
            oe = ((o - ro).abs().max() / ro.abs().max()).item()
            le = ", ".join("b%d %.2e" % (bi, (lse[bi] - rl[bi]).abs().max().item()) for bi in range(batch))
            print("batch %d fe-%-5s O err/max %.2e; |Stats - LSE| %s" % (batch, form, oe, le))


main()
