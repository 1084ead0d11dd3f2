"""Bare torch, no attnfuzz: does SDPA's cuDNN backend honour a boolean attn_mask when a
hidden key's score is large? attnfuzz's visibility probe (judge/probes/visibility.c)
gives hidden K/V elements values up to half the dtype's largest, so a hidden score can
exceed what a finite additive mask value (-65504 in fp16) cancels.

For each shape and row i (up to 4 rows), the keys row i does not see get K = mag *
sign(q_i) (their score: scale * mag * sum_d |q_id|) and V = -mag. A backend that
honours the mask gives row i the same O to the bit. Printed per backend, mask form and
mag: the largest |O_i - O'_i| over the rows tried and the hidden score it took.
Run: python3 torch_cudnn_mask.py"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "math": SDPBackend.MATH}


def visible(sq, skv, kind):
    i = torch.arange(sq).view(sq, 1)
    j = torch.arange(skv).view(1, skv)
    if kind == "window(-1,0)":  # top-left: row i sees keys <= i
        return j <= i
    if kind == "causal-bottom-right":
        return j <= i + (skv - sq)
    raise ValueError(kind)


def sdpa(backend, q, k, v, mask):
    with sdpa_kernel(BACKENDS[backend]):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def main():
    print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name())
    torch.manual_seed(0)
    shapes = [(1, 1, 2, 8, "window(-1,0)"), (1, 7, 7, 40, "window(-1,0)"), (1, 8, 15, 8, "causal-bottom-right"),
              (2, 64, 64, 64, "window(-1,0)"), (8, 128, 128, 128, "window(-1,0)")]
    for dtype in (torch.float16, torch.bfloat16):
        for h, sq, skv, d, kind in shapes:
            q = torch.randn(1, h, sq, d, device="cuda", dtype=dtype)
            k = torch.randn(1, h, skv, d, device="cuda", dtype=dtype)
            v = torch.randn(1, h, skv, d, device="cuda", dtype=dtype)
            vis = visible(sq, skv, kind).cuda()
            rows = [i for i in range(sq) if (~vis[i]).any()][:4]
            masks = {"bool": vis.view(1, 1, sq, skv),
                     "float(-inf)": torch.zeros(1, 1, sq, skv, device="cuda", dtype=dtype).masked_fill(~vis, float("-inf"))}
            for mag in (50.0, 1000.0, 30000.0):
                for mname, mask in masks.items():
                    for bname in BACKENDS:
                        worst, worst_score, status = 0.0, 0.0, "ran"
                        try:
                            o = sdpa(bname, q, k, v, mask)
                            for i in rows:
                                hid = ~vis[i]
                                k2, v2 = k.clone(), v.clone()
                                k2[:, :, hid] = (mag * torch.sign(q[:, :, i:i + 1])).to(dtype)
                                v2[:, :, hid] = -mag
                                o2 = sdpa(bname, q, k2, v2, mask)
                                diff = (o[:, :, i] - o2[:, :, i]).abs().max().item()
                                score = (mag * q[:, :, i].float().abs().sum(-1) / d ** 0.5).max().item()
                                if diff > worst or worst == 0:
                                    worst, worst_score = diff, score
                        except RuntimeError as e:
                            status = "declined: " + str(e).splitlines()[0][:80]
                        print("%-14s h%d sq%d skv%d d%d %-19s mag %-7g %-11s %-9s max|O_i-O'_i| %-10.4g hidden score %.4g %s"
                              % (str(dtype)[6:], h, sq, skv, d, kind, mag, mname, bname, worst, worst_score,
                                 "" if status == "ran" else status))


if __name__ == "__main__":
    main()
