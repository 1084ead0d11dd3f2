"""Bare torch, no attnfuzz: does SDPA's cuDNN backend honour a boolean attn_mask?
For each shape, a bool mask (True = the row sees the key) hides some keys; the hidden
keys' K and V are then multiplied by 50. A backend that honours the mask gives the same
O before and after (to the bit: the hidden keys carry weight exactly 0). Printed per
shape and mask form: max |O - O'| (perturbation), max |O - O_math| (against torch math
on the same mask), max |O - O_nomask| (against the same backend with no mask), and
whether the backend ran. Run: python3 torch_cudnn_mask.py"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def visible(sq, skv, kind):
    i = torch.arange(sq).view(sq, 1)
    j = torch.arange(skv).view(1, skv)
    if kind == "window(-1,0)":  # top-left: row i sees keys <= i
        return j <= i
    if kind == "causal-bottom-right":
        return j <= i + (skv - sq)
    if kind == "prefix1":  # every row sees key 0 only
        return j == 0
    raise ValueError(kind)


def sdpa(backend, q, k, v, mask):
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def main():
    print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name())
    torch.manual_seed(0)
    shapes = [(1, 1, 1, 2, 8, "window(-1,0)"), (1, 1, 7, 7, 40, "window(-1,0)"), (1, 1, 8, 15, 8, "causal-bottom-right"),
              (1, 2, 6, 5, 8, "window(-1,0)"), (2, 4, 64, 64, 64, "window(-1,0)"), (1, 1, 4, 16, 64, "prefix1"),
              (1, 8, 128, 128, 128, "window(-1,0)")]
    for dtype in (torch.float16, torch.bfloat16):
        for b, h, sq, skv, d, kind in shapes:
            q = torch.randn(b, h, sq, d, device="cuda", dtype=dtype)
            k = torch.randn(b, h, skv, d, device="cuda", dtype=dtype)
            v = torch.randn(b, h, skv, d, device="cuda", dtype=dtype)
            vis = visible(sq, skv, kind).cuda()
            hidden = ~vis.any(0)  # keys no row sees
            k2, v2 = k.clone(), v.clone()
            k2[:, :, hidden] *= 50
            v2[:, :, hidden] *= 50
            partly = (~vis).any()  # some (row, key) pairs are hidden even if every key is seen by some row
            forms = {"bool (1,1,Sq,Skv)": vis.view(1, 1, sq, skv),
                     "bool (B,H,Sq,Skv)": vis.view(1, 1, sq, skv).expand(b, h, sq, skv).contiguous(),
                     "float -inf (1,1,Sq,Skv)": torch.zeros(1, 1, sq, skv, device="cuda", dtype=dtype)
                     .masked_fill(~vis, float("-inf"))}
            for fname, mask in forms.items():
                try:
                    o = sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, mask)
                    o2 = sdpa(SDPBackend.CUDNN_ATTENTION, q, k2, v2, mask)
                    on = sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, None)
                except RuntimeError as e:
                    print("%s b%d h%d sq%d skv%d d%d %s %s: cudnn declined: %s" %
                          (dtype, b, h, sq, skv, d, kind, fname, str(e).splitlines()[0][:120]))
                    continue
                om = sdpa(SDPBackend.MATH, q.float(), k.float(), v.float(),
                          mask if mask.dtype == torch.bool else mask.float()).to(dtype)
                pert = (o - o2).abs().max().item() if hidden.any() else float("nan")
                print("%s b%d h%d sq%d skv%d d%d %s %s: |O-O'(hidden keys x50)| %.4g  |O-O_math| %.4g  "
                      "|O-O_nomask| %.4g  (hidden keys %d, hidden pairs %s)" %
                      (dtype, b, h, sq, skv, d, kind, fname, pert, (o - om).abs().max().item(),
                       (o - on).abs().max().item(), int(hidden.sum()), bool(partly)))


if __name__ == "__main__":
    main()
