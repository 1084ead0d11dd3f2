"""cudnn_gqa_dk_partials.py [SEED] — a bare check (no attnfuzz) of how cuDNN's SDPA backward sums
a GQA group's dK: in fp32 then rounded once, or per query head rounded to the dtype first. Written
while triaging the cudnn-fe campaign bucket 2046ce69df24 (docs/targets.md: fp16 GQA 2:1, s_q 1,
s_kv 250, d_qk 72, d_v 8; one dK element in fp16's subnormal range off by 1.007x its allowance,
one subnormal step).

The same inputs through cudnn-frontend's pygraph twice: GQA (h_q 2, h_kv 1) and MHA with K and V
repeated (h_kv 2), forward + backward in fp16. From the MHA run's per-head dK (fp16, rounded once
each), two predictions of the GQA dK: fp16(fp32 sum of the two fp16 partials) (partials rounded
first) against the float64 reference's dK rounded once. Prints how many GQA dK elements equal each
prediction bit for bit, and the largest GQA dK error in units of the fp16 subnormal step 2^-24 on
elements below 2^-14. Needs the nvidia-cudnn-frontend wheel and torch with CUDA. Exit 0 always.
"""
import sys

import torch

import fe_graph  # this folder's shared pygraph runner

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
dev = "cuda"
B, HQ, SQ, SKV, DQK, DV = 1, 2, 1, 250, 72, 8


def run(cudnn, handle, q, k, v, do, scale):
    o = torch.empty(B, HQ, SQ, DV, device=dev, dtype=torch.float16)
    stats = torch.empty(B, HQ, SQ, 1, device=dev, dtype=torch.float32)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def graph():
        return cudnn.pygraph(io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                             compute_data_type=cudnn.data_type.FLOAT, handle=handle)

    g = graph()
    tq, tk, tv = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    to, ts = g.sdpa(name="fwd", q=tq, k=tk, v=tv, is_inference=False, attn_scale=scale)
    to.set_output(True).set_dim(list(o.shape)).set_stride(list(o.stride()))
    ts.set_output(True).set_data_type(cudnn.data_type.FLOAT).set_dim(list(stats.shape)).set_stride(
        list(stats.stride()))
    fe_graph.execute(cudnn, g, {tq: q, tk: k, tv: v, to: o, ts: stats}, handle)
    g = graph()
    tq, tk, tv = g.tensor_like(q), g.tensor_like(k), g.tensor_like(v)
    to, tdo, ts = g.tensor_like(o), g.tensor_like(do), g.tensor_like(stats)
    tdq, tdk, tdv = g.sdpa_backward(name="bwd", q=tq, k=tk, v=tv, o=to, dO=tdo, stats=ts, attn_scale=scale)
    for t, x in ((tdq, dq), (tdk, dk), (tdv, dv)):
        t.set_output(True).set_dim(list(x.shape)).set_stride(list(x.stride()))
    fe_graph.execute(cudnn, g, {tq: q, tk: k, tv: v, to: o, tdo: do, ts: stats, tdq: dq, tdk: dk, tdv: dv},
                     handle)
    return dk


def main():
    import cudnn

    handle = cudnn.create_handle()
    torch.manual_seed(seed)
    q = torch.randn(B, HQ, SQ, DQK, device=dev).half()
    k = torch.randn(B, 1, SKV, DQK, device=dev).half()
    v = torch.randn(B, 1, SKV, DV, device=dev).half()
    do = torch.randn(B, HQ, SQ, DV, device=dev).half()
    scale = DQK ** -0.5
    dk_gqa = run(cudnn, handle, q, k, v, do, scale)  # (B, 1, SKV, DQK)
    km, vm = k.expand(B, HQ, SKV, DQK).contiguous(), v.expand(B, HQ, SKV, DV).contiguous()
    dk_mha = run(cudnn, handle, q, km, vm, do, scale)  # (B, HQ, SKV, DQK): per-head partials
    x = [t.double().requires_grad_(True) for t in (q, km, vm)]
    p = torch.softmax((x[0] @ x[1].transpose(-1, -2)) * scale, -1)
    (p @ x[2]).backward(do.double())
    ref = x[1].grad.sum(1, keepdim=True)  # the group's exact dK
    partials = dk_mha.float().sum(1, keepdim=True).half()
    once = ref.half()
    n = dk_gqa.numel()
    print("cudnn backend %s, seed %d, fp16 GQA %d:1 s_q %d s_kv %d d_qk %d d_v %d" %
          (cudnn.backend_version(), seed, HQ, SQ, SKV, DQK, DV))
    print("GQA dK equal to fp16(sum of fp16 per-head partials): %d of %d; to fp16(exact): %d of %d" %
          ((dk_gqa == partials).sum().item(), n, (dk_gqa == once).sum().item(), n))
    small = ref.abs() < 2.0 ** -14
    err = ((dk_gqa.double() - ref).abs() / 2.0 ** -24)[small]
    print("elements below 2^-14: %d; largest GQA dK error there %.3f subnormal steps (correct rounding: 0.5)" %
          (small.sum().item(), err.max().item() if err.numel() else 0.0))


main()
