"""cudnn_kernel_cache_padded.py [SEED] — a bare check (no attnfuzz) of candidate K1
(docs/cudnn-findings.md): cuDNN's SDPA forward built as a dynamic-shape graph whose plan takes
its kernel from a kernel cache that a graph of another maximum length filled.

What attnfuzz saw (cuDNN 9.19, H100): with ATTNFUZZ_CUDNN_KERNEL_CACHE=1, a case run on the
padded graph of s_max 1024 passes, and the same logical case in a larger allocation (the
capacity probe: s_max 1085 -> the padded graph of the next bucket, garbage in every token past
the sequence lengths) gives gradients that move with the garbage; without the kernel cache, or
with each case on its own graph, it passes.

This script: fp16, bhsd, b 2, h 2, d 128, actual lengths s_q 1021 / s_kv 872 in both batch
entries (seq_len tensors + padding mask), no causal mask, forward with Stats.
  A: s_max 1024, dynamic shape, kernel cache kc (fills it)
  B: s_max 1152, dynamic shape, the same kernel cache kc, garbage (values of size 100) in every
     token past the lengths
  C: as B with a fresh kernel cache (the control: the same graph, its own compiled kernel)
  D: as B without dynamic shape and without a cache (the default static graph)
Each run's O and Stats over the valid rows against a float64 reference of the valid tokens:
the largest O error over max |O| (fp16 rounding is about 5e-4) and the largest |Stats - LSE|.
Reading: B wrong while C and D are right -> the cached kernel does not fit B's graph (cuDNN's
kernel cache binds a kernel it should not); all right -> the forward is fine and attnfuzz's
finding comes from elsewhere (its backward reads this forward's O and Stats: compare further).
Needs the nvidia-cudnn-frontend wheel (cuDNN 9.19 inside) and torch with CUDA. Exit 0 always:
it reports.
"""
import sys

import torch

import fe_graph  # this folder's shared pygraph runner

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
dev = "cuda"
B, H, D = 2, 2, 128
LQ, LKV = 1021, 872


def make_inputs(s_max, garbage):
    """q, k, v [B, H, s_max, D] fp16 whose first LQ / LKV tokens are the same for every
    s_max (drawn from the seed), the rest 0 or garbage."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    valid = [torch.randn(B, H, n, D, generator=g) for n in (LQ, LKV, LKV)]
    out = []
    for x, n in zip(valid, (LQ, LKV, LKV)):
        full = torch.full((B, H, s_max, D), 100.0 if garbage else 0.0)
        full[:, :, :n] = x
        out.append(full.to(dev, torch.float16))
    return out


def reference(q, k, v, scale):
    qd, kd, vd = q[:, :, :LQ].double(), k[:, :, :LKV].double(), v[:, :, :LKV].double()
    s = (qd @ kd.transpose(-1, -2)) * scale
    return torch.softmax(s, -1) @ vd, torch.logsumexp(s, -1)


def run(cudnn, handle, s_max, garbage, dynamic, kc):
    q, k, v = make_inputs(s_max, garbage)
    scale = D ** -0.5
    o = torch.empty_like(q)
    stats = torch.empty(B, H, s_max, 1, device=dev, dtype=torch.float32)
    lens_q = torch.full((B, 1, 1, 1), LQ, device=dev, dtype=torch.int32)
    lens_kv = torch.full((B, 1, 1, 1), LKV, device=dev, dtype=torch.int32)
    kw = dict(io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
              compute_data_type=cudnn.data_type.FLOAT, handle=handle)
    if dynamic:
        kw["is_dynamic_shape_enabled"] = True
    if kc is not None:
        kw["kernel_cache"] = kc
    g = cudnn.pygraph(**kw)
    pack = {}
    tq, tk, tv, tlq, tlkv = (fe_graph.bind(g, pack, x) for x in (q, k, v, lens_q, lens_kv))
    sdpa = dict(name="fwd", q=tq, k=tk, v=tv, is_inference=False, attn_scale=scale, use_padding_mask=True,
                seq_len_q=tlq, seq_len_kv=tlkv)
    got_o, got_lse = fe_graph.sdpa_forward(cudnn, g, pack, handle, sdpa, o, stats)
    ref_o, ref_lse = reference(q, k, v, scale)
    o_err = (got_o[:, :, :LQ] - ref_o).abs().max().item() / ref_o.abs().max().item()
    lse_err = (got_lse[:, :, :LQ] - ref_lse).abs().max().item()
    return o_err, lse_err


def main():
    import cudnn
    handle = cudnn.create_handle()
    print("cudnn backend %d, seed %d, fp16 b%d h%d d%d, lengths %d / %d, bhsd, padding mask" % (
        cudnn.backend_version(), seed, B, H, D, LQ, LKV))
    kc = cudnn.create_kernel_cache()
    runs = [("A s_max 1024, dynamic, cache kc (fills it)", 1024, False, True, kc),
            ("B s_max 1152, dynamic, cache kc, garbage past the lengths", 1152, True, True, kc),
            ("C s_max 1152, dynamic, a fresh cache, garbage", 1152, True, True, cudnn.create_kernel_cache()),
            ("D s_max 1152, static, no cache, garbage", 1152, True, False, None),
            ("E s_max 1152, dynamic, cache kc, zeros past the lengths", 1152, False, True, kc)]
    for name, s_max, garbage, dynamic, cache in runs:
        try:
            o_err, lse_err = run(cudnn, handle, s_max, garbage, dynamic, cache)
            print("%-62s O err/max %.2e; |Stats - LSE| max %.2e" % (name, o_err, lse_err))
        except Exception as e:  # a refusal is a result here
            print("%-62s not run: %s" % (name, str(e).replace("\n", " ")[:300]))


if __name__ == "__main__":
    main()
