"""cudnn_fe_thd_gqa_lse.py [SEED] — a bare check (no attnfuzz) of the LSE cudnn-frontend's
sdpa_torch returns for packed (thd) GQA inputs, written while triaging the cudnn-fe campaign
bucket aa9946f398ee (docs/targets.md: fp16 thd GQA 2:1, one query and one key, forward: the LSE
of the group's second head is 0 where the reference has -0.387; the class of cudnn-frontend
#1083 and of attnfuzz's C-API triage B of 2026-12-12).

Q (T_q, H_q, D), K, V (T_kv, H_kv, D) with cu_seqlens, fp16, no mask; for each shape: the
largest |LSE - reference| per query head (natural log; fp32 about 1e-6), and how many (token,
head) LSE values are exactly 0 where the reference is not. A GQA case whose second head fails
while the MHA control passes shows the defect. The LSE's layout is read from its shape ((H, T)
or (T, H), a trailing 1 dropped). Needs the nvidia-cudnn-frontend wheel and torch with CUDA.
Exit 0 always: it reports.
"""
import sys

import torch

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
dev = "cuda"
SHAPES = [  # (query lengths, key lengths, H_q, H_kv, D)
    ([1], [1], 2, 1, 8),
    ([1], [1], 2, 2, 8),  # MHA control
    ([1, 1], [5, 33], 2, 1, 64),
    ([3, 1], [7, 9], 4, 1, 64),
]


def reference(q, k, v, cq, ck, hq, hkv, scale):
    lse = torch.empty(q.shape[0], hq, dtype=torch.float64, device=dev)
    for b in range(len(cq) - 1):
        qs, ks = q[cq[b]:cq[b + 1]].double(), k[ck[b]:ck[b + 1]].double()
        for h in range(hq):
            s = (qs[:, h] @ ks[:, h // (hq // hkv)].T) * scale
            lse[cq[b]:cq[b + 1], h] = torch.logsumexp(s, -1)
    return lse


def main():
    import cudnn

    print("cudnn backend %s, seed %d" % (cudnn.backend_version(), seed))
    for lq, lkv, hq, hkv, d in SHAPES:
        torch.manual_seed(seed)
        cq, ck = [0], [0]
        for n in lq:
            cq.append(cq[-1] + n)
        for n in lkv:
            ck.append(ck[-1] + n)
        q = torch.randn(cq[-1], hq, d, device=dev).half()
        k = torch.randn(ck[-1], hkv, d, device=dev).half()
        v = torch.randn(ck[-1], hkv, d, device=dev).half()
        scale = d ** -0.5
        i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
        try:
            _, lse = cudnn.sdpa_torch(q, k, v, cu_seqlens_q=i32(cq), cu_seqlens_kv=i32(ck), max_seqlen_q=max(lq),
                                      max_seqlen_kv=max(lkv), scale=scale, return_lse=True, is_causal=False)
            torch.cuda.synchronize()
        except Exception as e:  # a refusal is a result too
            print("lq %s lkv %s h %d:%d d %d: refused: %s" % (lq, lkv, hq, hkv, d, str(e).splitlines()[0][:200]))
            continue
        got = lse.detach().double()
        if got.dim() == 3 and got.shape[-1] == 1:
            got = got[..., 0]
        if got.shape == (hq, cq[-1]):
            got = got.T
        ref = reference(q, k, v, cq, ck, hq, hkv, scale)
        if got.shape != ref.shape:
            print("lq %s lkv %s h %d:%d d %d: LSE shape %s, expected (%d, %d)" % (lq, lkv, hq, hkv, d,
                                                                                 tuple(lse.shape), cq[-1], hq))
            continue
        per_head = ", ".join("h%d %.2e" % (h, (got[:, h] - ref[:, h]).abs().max().item()) for h in range(hq))
        zeros = ((got == 0) & (ref != 0)).sum().item()
        print("lq %s lkv %s h %d:%d d %d: |LSE - ref| %s; zero where ref is not: %d of %d" %
              (lq, lkv, hq, hkv, d, per_head, zeros, got.numel()))


main()
