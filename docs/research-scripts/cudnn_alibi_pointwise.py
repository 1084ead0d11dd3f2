"""cudnn_alibi_pointwise.py [SEED] — a bare check (no attnfuzz) of ALiBi written as pointwise
nodes the way attnfuzz's cudnn backend writes it (harness/backends/cudnn/cudnn_graph_feat.c),
handed to cuDNN through cudnn-frontend's pygraph as the SDPA node's score modifier.

Why: attnfuzz's ALiBi graph fails at batch 2 on every engine and passes at batch 1
(docs/cudnn-findings.md, "ALiBi at batch 2"), while the frontend's own `use_alibi_mask` is
right at batch 2 (cudnn_alibi_batch.py). The two differ in three ways: attnfuzz's failing
seed has no mask (the frontend's ALiBi requires the causal one), attnfuzz adds |.| and a
bottom-right shift, and its slopes may be per (batch, head). This script builds attnfuzz's
description with the frontend (the frontend refuses a score modifier together with a mask,
so, like the failing seed, no mask):
    row = GEN_INDEX(score, axis 2), col = GEN_INDEX(score, axis 3)   (INT32)
    dist = col - row - (s_kv - s_q)                                   (INT32)
    abs form: dist = -|dist|                                          (INT32)
    score += dist * slopes[nb, h, 1, 1]                               (FLOAT)
at batch 1 and 2, slopes per head (nb 1) and per (batch, head) (nb = batch), signed and
abs, s_q < s_kv and s_q = s_kv (fp16, h 3, d 16, as the seed
corpora/seed-features/fp16-alibi-signed-batch-fwd.case), plus a materialised bias of the
same values as a control. Against a float64 reference it prints, per variant, the largest
O error over max |reference| (fp16 rounding is about 5e-4), and per batch index the largest
|Stats - LSE| and its spread over the row (a spread near 0 with a large error is a constant
shift of the whole row: the distance moved by a constant, as if GEN_INDEX counted rows across
the batch).
Reading: batch 2 fails here too -> cuDNN's (a bare graph without attnfuzz); batch 2 passes
here -> attnfuzz's C API description differs from this one (compare them node by node).
Needs the nvidia-cudnn-frontend wheel and torch with CUDA. Exit 0 always: it reports.
"""
import sys

import torch

import fe_graph  # this folder's shared pygraph runner

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
dev = "cuda"
H, D = 3, 16


def distance(sq, skv, form):  # [1, 1, sq, skv] float64: the ALiBi distance of each (i, j)
    i = torch.arange(sq, device=dev).view(sq, 1)
    j = torch.arange(skv, device=dev).view(1, skv)
    dist = (j - (i + (skv - sq))).double()
    return (dist if form == "signed" else -dist.abs()).view(1, 1, sq, skv)


def reference(q, k, v, scale, bias):
    s = (q.double() @ k.double().transpose(-1, -2)) * scale + bias
    return torch.softmax(s, -1) @ v.double(), torch.logsumexp(s, -1)


def run(cudnn, handle, q, k, v, scale, slopes, sq, skv, form, how):
    b = q.shape[0]
    o = torch.empty_like(q)
    stats = torch.empty(b, H, sq, 1, device=dev, dtype=torch.float32)
    g = cudnn.pygraph(io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=handle)
    pack = {}
    tq, tk, tv = (fe_graph.bind(g, pack, x) for x in (q, k, v))
    kw = dict(name="fwd", q=tq, k=tk, v=tv, is_inference=False, attn_scale=scale)
    if how == "pointwise":
        ts_slopes = fe_graph.bind(g, pack, slopes)  # [nb, H, 1, 1] FLOAT
        i32 = cudnn.data_type.INT32
        shift = None  # s_kv - s_q as an INT32 pass-by-value scalar, made here: the callback only links nodes
        if skv != sq:
            shift = g.tensor(name="shift", dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=i32, is_pass_by_value=True)
            pack[shift] = torch.full((1, 1, 1, 1), skv - sq, dtype=torch.int32)

        def alibi(graph, score):
            row = graph.gen_index(score, axis=2, compute_data_type=i32)
            row.set_data_type(i32)
            col = graph.gen_index(score, axis=3, compute_data_type=i32)
            col.set_data_type(i32)
            dist = graph.sub(col, row, compute_data_type=i32)
            dist.set_data_type(i32)
            if shift is not None:
                dist = graph.sub(dist, shift, compute_data_type=i32)
                dist.set_data_type(i32)
            if form == "abs":
                dist = graph.abs(dist, compute_data_type=i32)
                dist.set_data_type(i32)
                dist = graph.neg(dist, compute_data_type=i32)
                dist.set_data_type(i32)
            add = graph.mul(dist, ts_slopes, compute_data_type=cudnn.data_type.FLOAT)
            return graph.add(score, add, compute_data_type=cudnn.data_type.FLOAT)

        kw["score_mod"] = alibi
    else:  # the control: the same values as a materialised [b, H, sq, skv] bias
        bias = (slopes.double().expand(b, H, 1, 1) * distance(sq, skv, form)).half().contiguous()
        kw["bias"] = fe_graph.bind(g, pack, bias)
    return fe_graph.sdpa_forward(cudnn, g, pack, handle, kw, o, stats)


def main():
    import cudnn

    handle = cudnn.create_handle()
    print("cudnn backend %s, seed %d, fp16 h %d d %d, no mask" % (cudnn.backend_version(), seed, H, D))
    for sq, skv in ((8, 24), (24, 24)):
        for batch in (1, 2):
            torch.manual_seed(seed)
            q = torch.randn(batch, H, sq, D, device=dev).half()
            k, v = (torch.randn(batch, H, skv, D, device=dev).half() for _ in range(2))
            scale = D ** -0.5
            for nb in sorted({1, batch}):
                slopes = (torch.rand(nb, H, 1, 1, device=dev) + 0.05).float()
                for form in ("signed", "abs"):
                    ro, rl = reference(q, k, v, scale, slopes.double().expand(batch, H, 1, 1) *
                                       distance(sq, skv, form))
                    for how in ("pointwise", "bias"):
                        tag = "s %2dx%2d batch %d slopes nb %d %-6s %-9s" % (sq, skv, batch, nb, form, how)
                        try:
                            o, lse = run(cudnn, handle, q, k, v, scale, slopes, sq, skv, form, how)
                        except Exception as e:  # a refusal is a result too
                            print("%s refused: %s" % (tag, str(e).splitlines()[0][:200]))
                            continue
                        oe = ((o - ro).abs().max() / ro.abs().max()).item()
                        parts = []
                        for bi in range(batch):
                            diff = lse[bi] - rl[bi]  # (H, sq)
                            spread = (diff.max(-1).values - diff.min(-1).values).abs().max().item()
                            parts.append("b%d %.2e (row spread %.1e)" % (bi, diff.abs().max().item(), spread))
                        print("%s O err/max %.2e; |Stats - LSE| %s" % (tag, oe, "; ".join(parts)))


main()
