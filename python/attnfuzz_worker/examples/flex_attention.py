"""PyTorch FlexAttention (torch.nn.attention.flex_attention) as a worker target:

    --worker-cmd "python3 -m attnfuzz_worker.examples.flex_attention [--device cpu]"   engines: compiled eager

The mask is a block mask built from plugin.h's rule as a mask_mod over the per-sequence
lengths (causal top-left and bottom-right, windows left and right, padding); GQA through
enable_gqa; the LSE comes back from flex_attention itself (return_lse / AuxRequest) and is
written as it comes. `compiled` (the default engine on CUDA) runs torch.compile(flex_attention)
(Triton kernels on CUDA, inductor's C++ backend on CPU, which in torch 2.15 serves neither
the LSE nor backward: it declines, quoting inductor); `eager` (the default on CPU) runs
the unfused reference path. Serves fp16 and bf16, forward and backward, every mask, GQA, padding,
the case's score_mod (squared, trig, trig2: each name maps to a score_mod function defined
below, the forms of torch test/inductor/test_flex_attention.py; a case never sends code),
ragged and paged inputs (gathered into dense tensors by the package). Declines: fp8 and
mxfp8; what FlexAttention itself refuses (NotImplementedError: on CPU, backward); a shape inductor cannot compile (on the H200 at d = 512: shared memory 262144 >
232448 bytes) is the target's failure to serve: a decline quoting the compiler, not an
attnfuzz error. Conventions: none translated (natural-log LSE; a fully masked row as
FlexAttention writes it)."""
import argparse
import sys
import warnings

warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")

ENGINES = ("compiled", "eager")
_COMPILED = {}  # the compiled callable, built once per worker process


def _flex():
    import torch
    from torch.nn.attention import flex_attention as fa

    return torch, fa


def mask_mod_of(problem, device):
    """plugin.h's visibility rule as a FlexAttention mask_mod (tensor ops only)."""
    torch = _flex()[0]
    lens_q = torch.tensor(problem.seqlens_q, dtype=torch.int64, device=device)
    lens_kv = torch.tensor(problem.seqlens_kv, dtype=torch.int64, device=device)
    causal, br = problem.causal, problem.align == "bottom_right"
    wl, wr = problem.window_left, problem.window_right

    def mask_mod(b, h, q_idx, kv_idx):
        diag = q_idx + (lens_kv[b] - lens_q[b]) if br else q_idx
        ok = (kv_idx < lens_kv[b]) & (q_idx < lens_q[b])
        if causal:
            ok = ok & (kv_idx <= diag)
        if wl >= 0:
            ok = ok & (kv_idx >= diag - wl)
        if wr >= 0:
            ok = ok & (kv_idx <= diag + wr)
        return ok

    return mask_mod


def _score_squared(score, b, h, q_idx, kv_idx):
    return score * score


def _score_trig(score, b, h, q_idx, kv_idx):
    import torch

    return torch.sin(torch.cos(score)) + torch.tan(b.to(torch.float32))


def _score_trig2(score, b, h, q_idx, kv_idx):
    import torch

    return torch.cos(score) * torch.sin(score) + torch.tan(b.to(torch.float32))


# the case's score_mod by name -> this worker's own function (oracle/feature_spec.h); score is
# FlexAttention's already scaled q.k, b the batch index. tan(b) in fp32, as the spec and as
# torch's own tests (torch.tan of the int index): in the eager path the score comes in the
# input dtype (fp16 on CPU, torch 2.15), and a tan(b) rounded to fp16 moved the LSE by 2.09e-4
# at b = 1 (tan(1) = 1.5574077, fp16 1.5576172)
SCORE_MODS = {"squared": _score_squared, "trig": _score_trig, "trig2": _score_trig2}


def _call(fa, engine, q, k, v, block_mask, problem):
    """flex_attention -> (O, LSE) through whichever LSE interface this torch has."""
    fn = fa.flex_attention
    if engine == "compiled":
        import torch

        if "fn" not in _COMPILED:
            # every fuzzed shape is a new specialisation (dynamic=False): without a higher
            # limit dynamo stops compiling after 8 and fullgraph=True turns that into
            # FailOnRecompileLimitHit on every later case (seen on the H200)
            for knob in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                         "accumulated_cache_size_limit"):
                if hasattr(torch._dynamo.config, knob):
                    setattr(torch._dynamo.config, knob, 1 << 20)
        fn = _COMPILED.setdefault("fn", torch.compile(fa.flex_attention, dynamic=False, fullgraph=True))
    gqa = problem.heads_q != problem.heads_kv
    score_mod = SCORE_MODS.get(problem.score_mod)  # None: plain scores (supports() checked the name)
    if hasattr(fa, "AuxRequest"):
        o, aux = fn(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=problem.scale, enable_gqa=gqa,
                    return_aux=fa.AuxRequest(lse=True))
        return o, aux.lse
    return fn(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=problem.scale, enable_gqa=gqa,
              return_lse=True)


def _cannot_compile(e):
    text = str(e)
    return type(e).__name__ in ("OutOfResources", "InductorError", "BackendCompilerFailed") or \
        "out of resource" in text.lower() or "shared memory" in text.lower()


def kernel(q, k, v, problem, do=None):
    from attnfuzz_worker import Decline

    torch, fa = _flex()
    engine = problem.engine = problem.engine or ("compiled" if q.device.type == "cuda" else "eager")
    if engine not in ENGINES:
        raise Decline("flex_attention: unknown engine %r (%s)" % (engine, ", ".join(ENGINES)))
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[problem.dtype]
    qd, kd, vd = (x.to(dt).requires_grad_(problem.backward) for x in (q, k, v))
    dev = q.device
    block_mask = fa.create_block_mask(mask_mod_of(problem, dev), problem.batch, None, problem.seqlen_q,
                                      problem.seqlen_kv, device=dev)
    try:
        try:
            o, lse = _call(fa, engine, qd, kd, vd, block_mask, problem)
            if problem.backward:
                o.backward(do.to(dt))
        except NotImplementedError as e:  # FlexAttention's own refusal (CPU: no backward)
            raise Decline("flex_attention[%s] refuses: %s" % (engine, " ".join(str(e).split())[:300]))
        except Exception as e:  # the same refusal seen through dynamo (fullgraph): its cause
            cause = e.__cause__ or e.__context__
            if "NotImplementedError" in type(cause).__name__:
                raise Decline("flex_attention[%s] refuses: %s" % (engine, " ".join(str(cause).split())[:300]))
            raise
    except Decline:
        raise
    except Exception as e:  # a shape inductor cannot build is the target's, not attnfuzz's
        if engine == "compiled" and _cannot_compile(e):
            raise Decline("flex_attention[compiled] cannot compile this problem: %s" % " ".join(str(e).split())[:300])
        raise
    lse = lse.detach().float()
    if not problem.backward:
        return o.detach(), lse
    return o.detach(), lse, qd.grad, kd.grad, vd.grad


def supports(problem):
    if problem.dtype not in ("fp16", "bf16"):
        return "flex_attention serves fp16 and bf16 (not %s)" % problem.dtype
    if problem.score_mod != "none" and problem.score_mod not in SCORE_MODS:
        return "flex_attention: score_mod %r is not one it maps (%s)" % (problem.score_mod, ", ".join(SCORE_MODS))
    return None


# the hello's features: every layout property (CASE_FEATURES) and the score_mod, which only a
# worker that lists it is sent (docs/worker-protocol.md)
def features():
    from attnfuzz_worker.worker import CASE_FEATURES

    return tuple(CASE_FEATURES) + ("score_mod",)


def main(argv):
    ap = argparse.ArgumentParser(prog="flex_attention")
    ap.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    args = ap.parse_args(argv)
    from attnfuzz_worker import serve

    device = args.device
    if device == "auto":  # torch is otherwise imported at the first run, not at the start
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    serve(kernel, name="flex-attention", description="torch FlexAttention (block masks, LSE), compiled or eager",
          device=device, dtypes=("fp16", "bf16"), supports=supports, engines=lambda p: list(ENGINES),
          features=features(),
          deterministic=False, requires=("torch",))


if __name__ == "__main__":
    main(sys.argv[1:])
