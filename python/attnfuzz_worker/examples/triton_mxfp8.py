"""Two Triton MXFP8 attention kernels written here (issue 13), the MXFP8 seed's pair:

    --worker-cmd "python3 -m attnfuzz_worker.examples.triton_mxfp8 --recipe ordinary [--device cpu]"
    --worker-cmd "python3 -m attnfuzz_worker.examples.triton_mxfp8 --recipe own-block [--device cpu]"

Both take the case's logical Q, K, V (the harness's MXFP8 inputs, decoded by the package),
quantise them again as a training recipe would and run mxfp8_kernels.py's kernel, which
decodes the E4M3 payload and E8M0 scales in the kernel and computes in bf16.

- ordinary: V scales shared by 32 consecutive tokens. A query's own block holds future
  (masked) tokens, and their magnitude sets the shared scale, so a masked token moves the
  visible ones' values: the recipe leaks future tokens (a `leak` from the visibility probe).
- own-block: the 32-token blocks a query sees completely use MXFP8 with 32-token V scales;
  the rest of what it sees (its own block, a window's partial edge block) uses a copy of V
  scaled per token (one E8M0 scale per token and 32 channels); the two partials merge
  through their log-sum-exps. No scale mixes a hidden token into a visible one.

Q and K scales run along d (one per token and 32 channels) in both recipes: they cannot
mix tokens. Serves mxfp8 forward, every mask and alignment, windows, GQA, padding, ragged
and paged inputs (gathered by the package), head dims 16..256 powers of two. Declines:
other dtypes, backward (not written: the leak is a forward property), other head dims.
Conventions: LSE natural log, a fully masked row O = 0, LSE = -inf (the kernel writes them).
--device cpu runs Triton's interpreter (TRITON_INTERPRET=1, set before triton imports)."""
import argparse
import os
import sys

RECIPES = ("ordinary", "own-block")


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="triton_mxfp8")
    ap.add_argument("--recipe", choices=RECIPES, required=True)
    ap.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    return ap.parse_args(argv)


def supports(problem):
    if problem.dtype != "mxfp8":
        return "triton-mxfp8 serves mxfp8 only (not %s)" % problem.dtype
    if problem.backward:
        return "triton-mxfp8: backward is not written (forward only; the leak is a forward property)"
    for name in ("head_dim_qk", "head_dim_v"):
        d = getattr(problem, name)
        if d < 16 or d > 256 or d & (d - 1):
            return "triton-mxfp8: %s = %d (the kernel takes powers of two 16..256)" % (name, d)
    return None


def make_kernel(recipe):
    from attnfuzz_worker import Decline

    def kernel(q, k, v, problem, do=None):
        reason = supports(problem)
        if reason:
            raise Decline(reason)
        # torch and triton are imported at the first run, not at the start: attnfuzz's
        # availability probe (hello, supports) then starts this worker in well under a second
        from attnfuzz_worker.examples import mxfp8_kernels as mk
        qp, qs = mk.mx_quantise(q, 1, mk.MX_BLOCK)  # per token, 32 channels
        kp, ks = mk.mx_quantise(k, 1, mk.MX_BLOCK)
        vp, vs = mk.mx_quantise(v, mk.MX_BLOCK, 1)  # 32 tokens, per channel: the ordinary recipe
        if recipe == "ordinary":
            return mk.attention(qp, qs, kp, ks, vp, vs, (mk.MX_BLOCK, 1), problem, 0)
        o1, l1 = mk.attention(qp, qs, kp, ks, vp, vs, (mk.MX_BLOCK, 1), problem, 1)  # complete blocks
        tp, ts = mk.mx_quantise(v, 1, mk.MX_BLOCK, rule="ceil")  # the copy of V scaled per token
        o2, l2 = mk.attention(qp, qs, kp, ks, tp, ts, (1, mk.MX_BLOCK), problem, 2)  # the rest
        return mk.merge_partials(o1, l1, o2, l2)

    return kernel


def main(argv):
    args = parse_args(argv)
    device = args.device
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # must precede the first import of triton (the first run)

    from attnfuzz_worker import serve
    from attnfuzz_worker.worker import package_version

    mode = "interpreter" if device == "cpu" else "compiled"
    serve(make_kernel(args.recipe), name="triton-mxfp8-" + args.recipe,
          description="Triton MXFP8 attention, %s recipe, decoded to bf16 in the kernel (%s)" % (args.recipe, mode),
          device=device, dtypes=("mxfp8",), supports=supports, deterministic=True,
          versions={"triton": package_version("triton"), "triton_mode": mode}, requires=("torch", "triton"))


if __name__ == "__main__":
    main(sys.argv[1:])
