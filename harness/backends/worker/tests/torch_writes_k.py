"""A torch worker for test_worker_torch_mutation.sh: attention in float32 on the problem's
mask (forward and backward through autograd), correct, then, by argv[1]:
  none     nothing more (the control: no input_mutation)
  arg      k -= k.mean over the sequence, in place on the kernel's argument K (the torch
           mapping's dense copy: only the worker sees it; SageAttention 1.0.6's smooth_k)
  watched  the adapter converts K to fp16 and passes the copy to problem.watch(k=...);
           the "kernel" then smooths that copy in place
argv[2]: the device (cpu | cuda; default cpu)."""
import sys

from attnfuzz_worker import serve

MODE = sys.argv[1]
DEVICE = sys.argv[2] if len(sys.argv) > 2 else "cpu"


def attention(q, k, v, problem, do=None):
    import torch

    B, Hq, Sq, _ = q.shape
    group = problem.heads_q // problem.heads_kv
    mask = torch.zeros(B, 1, Sq, k.shape[2], dtype=torch.bool, device=q.device)
    for b in range(B):
        for i in range(problem.seqlens_q[b]):
            for j in range(problem.seqlens_kv[b]):
                mask[b, 0, i, j] = problem.visible(b, i, j)
    with torch.enable_grad():
        qq, kk, vv = (x.detach().clone().requires_grad_(do is not None) for x in (q, k, v))
        kr, vr = kk.repeat_interleave(group, dim=1), vv.repeat_interleave(group, dim=1)
        s = (qq @ kr.transpose(-1, -2)) * float(problem.scale)
        s = s.masked_fill(~mask, float("-inf"))
        lse = torch.logsumexp(s, dim=-1)
        p = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0)
        o = p @ vr
        grads = (None, None, None)
        if do is not None:
            grads = torch.autograd.grad(o, (qq, kk, vv), do)
    return o.detach(), lse.detach(), *(g.detach() if g is not None else None for g in grads)


def smooth_in_place(k, problem):
    for b in range(k.shape[0]):
        n = problem.seqlens_kv[b]
        if n:
            k[b, :, :n] -= k[b, :, :n].mean(dim=1, keepdim=True)


def kernel(q, k, v, problem, do=None):
    out = attention(q, k, v, problem, do=do)
    if MODE == "arg":
        smooth_in_place(k, problem)
    if MODE == "watched":
        import torch

        k16 = k.to(torch.float16)  # the adapter's own copy, which the kernel gets
        problem.watch(k=k16)
        smooth_in_place(k16, problem)
    o, lse, dq, dk, dv = out
    return (o, lse, dq, dk, dv) if do is not None else (o, lse)


if __name__ == "__main__":
    serve(kernel, name="torch-writes-k-" + MODE, device=DEVICE, mode="torch", dtypes=("fp16", "bf16"),
          features=("backward", "gqa", "causal", "window", "bottom_right", "padded", "ragged", "paged"))
