"""SageAttention 1.0.6 (pure Triton, INT8 Q and K) as a worker target:

    --worker-cmd "python3 -m attnfuzz_worker.examples.sage_attn"   engines: dense varlen

What it serves and declines, and why: sage_map.py (pure Python, tested on CPU). O is the
kernel's; SageAttention returns no LSE, so the LSE written is the adapter's own, from the
same fp16/bf16 inputs in float32 under the case's mask (the reply's engine says so:
"dense+lse32"); a finding on O is the kernel's, one on LSE would be the adapter's.

SageAttention 1.0.6 writes K in place (`k -= km`, smooth_k). The kernel gets the adapter's
own fp16/bf16 copy of K (built from the package's float32 copy), never the request's
buffer, so the visibility probe's perturbed inputs stay as attnfuzz wrote them; the input
mutation check (hashing the request's buffers before and after a run) therefore sees
nothing here, and reports this write only for a worker that hands the kernel the request's
own tensors. The leak this target is known for (a causal row moved by keys it must not
see) comes from that same smoothing (the mean over all keys, future ones included) and the
per-64-key INT8 scales; the visibility probe finds it."""
import argparse
import math
import sys

from attnfuzz_worker.examples import sage_map


def _lse32(torch, q, k, problem):
    """(B, Hq, Sq) float32 natural-log LSE of scale * q k^T under the case's mask (the
    adapter's, not the kernel's), -inf for a row that sees no key."""
    kk = k.repeat_interleave(problem.group, dim=1).float()
    s = torch.matmul(q.float(), kk.transpose(-1, -2)) * problem.scale
    B, Sq, Skv = problem.batch, problem.seqlen_q, problem.seqlen_kv
    visible = torch.zeros((B, 1, Sq, Skv), dtype=torch.bool)
    for b in range(B):
        for i in range(problem.seqlens_q[b]):
            r = problem.visible_range(b, i)
            if r is not None:
                visible[b, 0, i, r[0]:r[1] + 1] = True
    s = s.masked_fill(~visible.to(s.device), -math.inf)
    return torch.logsumexp(s, dim=-1)


def kernel(q, k, v, problem, do=None):
    from attnfuzz_worker import Decline

    call, reason = sage_map.plan(problem, problem.engine)
    if reason:
        raise Decline(reason)
    import torch
    from sageattention import sageattn, sageattn_varlen

    problem.engine = call["engine"] + "+lse32"
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[problem.dtype]
    # the kernel's inputs: fresh tensors of the case's dtype (sage writes K in place: watched)
    qd, kd, vd = (x.to(dt).contiguous() for x in (q, k, v))
    lse = _lse32(torch, qd, kd, problem)  # before the call: kd is about to be smoothed in place
    if call["engine"] == "dense":
        problem.watch(q=qd, k=kd, v=vd)  # a write into them is an input_mutation finding (K: smooth_k)
        with problem.kernel_call():
            o = sageattn(qd, kd, vd, tensor_layout="HND", is_causal=call["is_causal"], sm_scale=call["sm_scale"])
        return o.float(), lse
    dev = q.device
    # packed (T, H, D): the rows < each sequence's length, in order
    pack = lambda x, lens: torch.cat([x[b, :, :lens[b]].transpose(0, 1) for b in range(problem.batch)], dim=0)
    qp, kp, vp = pack(qd, problem.seqlens_q).contiguous(), pack(kd, problem.seqlens_kv).contiguous(), \
        pack(vd, problem.seqlens_kv).contiguous()
    cu_q = torch.tensor(call["cu_seqlens_q"], dtype=torch.int32, device=dev)
    cu_k = torch.tensor(call["cu_seqlens_k"], dtype=torch.int32, device=dev)
    problem.watch(q=qp, k=kp, v=vp)
    with problem.kernel_call():
        op = sageattn_varlen(qp, kp, vp, cu_q, cu_k, call["max_seqlen_q"], call["max_seqlen_k"],
                             is_causal=call["is_causal"], sm_scale=call["sm_scale"])
    o = torch.zeros((problem.batch, problem.heads_q, problem.seqlen_q, problem.head_dim_v), dtype=torch.float32,
                    device=dev)
    for b in range(problem.batch):
        a, e = call["cu_seqlens_q"][b], call["cu_seqlens_q"][b + 1]
        o[b, :, :e - a] = op[a:e].transpose(0, 1).float()
    return o, lse


def main(argv):
    ap = argparse.ArgumentParser(prog="sage_attn")
    ap.parse_args(argv)
    from attnfuzz_worker import serve
    from attnfuzz_worker.worker import package_version

    # a supports query carries no engine: it answers for the default engine of the case
    serve(kernel, name="sage", description="SageAttention 1.0.6 (Triton INT8 QK, fp16 PV), dense and varlen",
          device="cuda", dtypes=("fp16", "bf16"), supports=lambda p: sage_map.plan(p, "")[1],
          engines=lambda p: list(sage_map.ENGINES), deterministic=True,
          versions={"sageattention": package_version("sageattention"), "triton": package_version("triton")},
          requires=("sageattention",), marks_kernel=True)


if __name__ == "__main__":
    main(sys.argv[1:])
