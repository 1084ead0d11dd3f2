"""cudnn_bias_row_bwd.py [SEED] — a bare check (no attnfuzz) of cuDNN's SDPA backward with an
additive bias that every query row shares (one row of s_kv values per (b, h): TransformerEngine's
"bh1s" / "111s" forms), written while triaging docs/cudnn-findings.md, "Candidates of 2026-12-05".

Three ways to hand the same bias to cuDNN, each forward + backward, each judged against a float64
autograd reference of the same bf16 inputs:
  fe-extent1  cudnn-frontend's pygraph, the bias declared [b, h, 1, s_kv] (packed strides), the
              form attnfuzz's cudnn backend gives by default;
  fe-stride0  the same buffer declared [b, h, s_q, s_kv] with the query stride 0;
  fe-full     the bias materialised as [b, h, s_q, s_kv] (a control: no broadcast at all);
  torch       torch's scaled_dot_product_attention on its cuDNN backend with the [b, h, 1, s_kv]
              mask (torch expands it, stride 0).
Prints, per way, the largest error of O, dQ, dK, dV over the largest |reference| of that tensor;
bf16 rounding is about 4e-3 of it. Needs the nvidia-cudnn-frontend wheel (ci/wheels/fetch.sh,
its cudnn-fe folder) and torch with CUDA. Exit 0 always: it reports, the reader judges.
"""
import sys

import torch

import fe_graph  # this folder's shared pygraph runner

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.manual_seed(seed)
dev = "cuda"
b, h, sq, skv, d = 2, 3, 64, 96, 64
scale = d ** -0.5
q = torch.randn(b, h, sq, d, device=dev).bfloat16()
k = torch.randn(b, h, skv, d, device=dev).bfloat16()
v = torch.randn(b, h, skv, d, device=dev).bfloat16()
do = torch.randn(b, h, sq, d, device=dev).bfloat16()
row = torch.randn(b, h, 1, skv, device=dev).bfloat16()  # one bias row per (b, h)


def reference():
    x = [t.double().requires_grad_(True) for t in (q, k, v)]
    s = (x[0] @ x[1].transpose(-1, -2)) * scale + row.double()
    o = torch.softmax(s, -1) @ x[2]
    o.backward(do.double())
    return o.detach(), x[0].grad, x[1].grad, x[2].grad


def report(name, got, ref):
    parts = []
    for label, g, r in zip(("O", "dQ", "dK", "dV"), got, ref):
        err = (g.double() - r).abs().max().item()
        parts.append("%s %.2e" % (label, err / r.abs().max().item()))
    print("%-11s %s" % (name, "  ".join(parts)))


def run_fe(form):
    import cudnn

    handle = cudnn.create_handle()
    bias = row.expand(b, h, sq, skv).contiguous() if form == "full" else row
    o = torch.empty_like(q)
    stats = torch.empty(b, h, sq, 1, device=dev, dtype=torch.float32)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def graph_of():
        return cudnn.pygraph(io_data_type=cudnn.data_type.BFLOAT16, intermediate_data_type=cudnn.data_type.FLOAT,
                             compute_data_type=cudnn.data_type.FLOAT, handle=handle)

    def bias_tensor(g):
        if form == "stride0":
            return g.tensor(name="bias", dim=[b, h, sq, skv], stride=[h * skv, skv, 0, 1],
                            data_type=cudnn.data_type.BFLOAT16)
        return g.tensor_like(bias)

    g = graph_of()
    tq, tk, tv, tb = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v), bias_tensor(g)
    to, ts = g.sdpa(name="fwd", q=tq, k=tk, v=tv, is_inference=False, attn_scale=scale, bias=tb)
    to.set_output(True).set_dim(list(o.shape)).set_stride(list(o.stride()))
    ts.set_output(True).set_data_type(cudnn.data_type.FLOAT).set_dim(list(stats.shape)).set_stride(
        list(stats.stride()))
    fe_graph.execute(cudnn, g, {tq: q, tk: k, tv: v, tb: bias, to: o, ts: stats}, handle)

    g = graph_of()
    tq, tk, tv, tb = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v), bias_tensor(g)
    to, tdo, ts = g.tensor_like(o), g.tensor_like(do), g.tensor_like(stats)
    tdq, tdk, tdv = g.sdpa_backward(name="bwd", q=tq, k=tk, v=tv, o=to, dO=tdo, stats=ts, attn_scale=scale,
                                    bias=tb)
    for t, x in ((tdq, dq), (tdk, dk), (tdv, dv)):
        t.set_output(True).set_dim(list(x.shape)).set_stride(list(x.stride()))
    fe_graph.execute(cudnn, g, {tq: q, tk: k, tv: v, tb: bias, to: o, tdo: do, ts: stats, tdq: dq, tdk: dk, tdv: dv},
                     handle)
    return o, dq, dk, dv


def run_torch():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    x = [t.clone().requires_grad_(True) for t in (q, k, v)]
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        o = torch.nn.functional.scaled_dot_product_attention(x[0], x[1], x[2], attn_mask=row, scale=scale)
    o.backward(do)
    return o.detach(), x[0].grad, x[1].grad, x[2].grad


ref = reference()
print("seed %d, bf16 b%d h%d s_q %d s_kv %d d %d, bias one row per (b, h); error / max |reference|" %
      (seed, b, h, sq, skv, d))
for name, fn in (("fe-extent1", lambda: run_fe("extent1")), ("fe-stride0", lambda: run_fe("stride0")),
                 ("fe-full", lambda: run_fe("full")), ("torch", run_torch)):
    try:
        report(name, fn(), ref)
    except Exception as e:  # a way cuDNN or torch refuses is a result too
        print("%-11s refused: %s" % (name, str(e).splitlines()[0][:200] if str(e) else type(e).__name__))
