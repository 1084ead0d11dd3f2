#!/usr/bin/env python3
"""flashinfer_menu.py --cache DIR [--menu small|full] [--deadline S] — compile FlashInfer's
module menu once, on the GPU machine, into a folder that is copied back and reused.

FlashInfer 0.7.2.post1 compiles every kernel module with nvcc (through ninja) at its first
use, minutes each. The worker target (python/attnfuzz_worker/examples/flashinfer_attn.py)
never compiles: it runs with FLASHINFER_DISABLE_JIT=1 and serves only the modules listed in
DIR/menu.json. For each menu entry (flashinfer_map.MENUS: backend, module kind, dtype, head
dim, window, soft cap) this script runs the worker's own call on a tiny problem with JIT
allowed, which makes FlashInfer compile exactly the modules that call needs, and then:
  - copies each new module (.so) to DIR/aot/NAME/NAME.so,
  - links it into the installed package's AOT folder (flashinfer/data/aot/NAME, where
    FlashInfer looks first, JIT disabled or not),
  - records the entry in DIR/menu.json: key, modules, compile seconds, .so bytes, and the
    tiny problem's largest |O - float64 reference| (a smoke test, not a verdict).
An entry whose modules are already in DIR/aot is linked, not compiled ("cached"): carry DIR
to a fresh GPU machine with the same FlashInfer installed and run this again. FlashInfer's
own JIT workspace is DIR/.cache/flashinfer (FLASHINFER_WORKSPACE_BASE=DIR). --deadline
stops before an entry once that many seconds of compiling have passed (the rest are
"skipped"); the exit status is 0 when every entry compiled or was cached, 1 otherwise."""
import argparse
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from attnfuzz_worker import Problem  # noqa: E402
from attnfuzz_worker.examples import flashinfer_attn as fa  # noqa: E402
from attnfuzz_worker.examples import flashinfer_map as fm  # noqa: E402


def tiny_problem(kind, dtype, head_dim, window):
    """A small case that needs the module of one menu entry."""
    decode = kind == "decode"
    batch = 1 if kind == "single" else 2
    lq = [1] * batch if decode else [7, 5][:batch]
    lkv = [37, 20][:batch]
    fields = {"dtype": dtype, "batch": batch, "heads_q": 4, "heads_kv": 2, "seqlen_q": max(lq), "seqlen_kv": max(lkv),
              "head_dim_qk": head_dim, "head_dim_v": head_dim, "seqlens_q": lq, "seqlens_kv": lkv,
              "mask": "causal", "align": "bottom_right", "window_left": 8 if window else -1, "window_right": -1,
              "scale": head_dim ** -0.5, "backward": False, "padded": True, "ragged": False, "paged": False,
              "layout": "bshd", "packing": "separate", "cp_size": 1, "features": [], "case": ""}
    return Problem(fields)


def reference(torch, q, k, v, problem):
    """float64 O of the problem's mask (rows past a length: 0)."""
    o = torch.zeros((problem.batch, problem.heads_q, problem.seqlen_q, problem.head_dim_v), dtype=torch.float64)
    for b in range(problem.batch):
        for h in range(problem.heads_q):
            for i in range(problem.seqlens_q[b]):
                r = problem.visible_range(b, i)
                if r is None:
                    continue
                kk = k[b, h // problem.group, r[0]:r[1] + 1].double()
                s = (kk @ q[b, h, i].double()) * problem.scale
                o[b, h, i] = torch.softmax(s, 0) @ v[b, h // problem.group, r[0]:r[1] + 1].double()
    return o


def built_modules(jit_dir):
    """{module name} with a built .so under FlashInfer's JIT folder."""
    if not os.path.isdir(jit_dir):
        return set()
    return {n for n in os.listdir(jit_dir) if os.path.isfile(os.path.join(jit_dir, n, n + ".so"))}


def link_module(cache, aot_dir, name):
    """DIR/aot/NAME into the package's AOT folder (a symlink, replaced if stale)."""
    target = os.path.join(cache, "aot", name)
    dest = os.path.join(aot_dir, name)
    os.makedirs(aot_dir, exist_ok=True)
    if os.path.islink(dest) or os.path.exists(dest):
        if os.path.realpath(dest) == os.path.realpath(target):
            return
        if os.path.islink(dest):
            os.unlink(dest)
        else:
            shutil.rmtree(dest)
    os.symlink(target, dest)


def run_entry(torch, entry, jit_dir):
    """Compile (by running) one entry; returns (modules built, seconds, max |O - ref|)."""
    backend, kind, dtype, d, window, softcap = entry
    problem = tiny_problem(kind, dtype, d, window)
    engines = ["%s-ragged" % backend, "%s-paged" % backend] if kind == "batch" else ["%s-%s" % (backend, kind)]
    gen = torch.Generator().manual_seed(1)
    shape = lambda h, s: (problem.batch, h, s, d)
    q = torch.randn(shape(4, problem.seqlen_q), generator=gen).cuda()
    k = torch.randn(shape(2, problem.seqlen_kv), generator=gen).cuda()
    v = torch.randn(shape(2, problem.seqlen_kv), generator=gen).cuda()
    ref = reference(torch, q.cpu(), k.cpu(), v.cpu(), problem)
    before = built_modules(jit_dir)
    t0 = time.time()
    err = 0.0
    for engine in engines:
        call, reason = fm.plan(problem, engine)
        if reason:
            raise RuntimeError("menu entry %s: %s" % (entry, reason))
        o, _ = fa.run_call(call, q, k, v, problem)
        torch.cuda.synchronize()
        err = max(err, float((o.double().cpu() - ref).abs().max()))
    return sorted(built_modules(jit_dir) - before), time.time() - t0, err


def compile_entry(torch, entry, cache, jit_dir, aot_dir, rec):
    """Compile one entry into cache/aot and link it; fills rec (status compiled or failed);
    returns the seconds it took."""
    try:
        modules, seconds, err = run_entry(torch, entry, jit_dir)
    except Exception as e:  # one line; the entry is not in the menu
        rec.update(status="failed", error=" ".join(str(e).split())[:300])
        return 0.0
    if not modules:  # the JIT folder held them already: which ones is unknown
        rec.update(status="failed", error="no new module was built (FlashInfer's JIT folder already held it): "
                   "remove DIR/.cache or use a new DIR")
        return seconds
    size = 0
    for n in modules:
        os.makedirs(os.path.join(cache, "aot", n), exist_ok=True)
        so = os.path.join(cache, "aot", n, n + ".so")
        shutil.copy2(os.path.join(jit_dir, n, n + ".so"), so)
        size += os.path.getsize(so)
        link_module(cache, aot_dir, n)
    rec.update(status="compiled", modules=modules, compile_s=round(seconds, 1), so_bytes=size, max_abs_err=err)
    return seconds


def main(argv):
    ap = argparse.ArgumentParser(prog="flashinfer_menu.py", description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, help="the folder to compile into and reuse")
    ap.add_argument("--menu", choices=sorted(fm.MENUS), default="small")
    ap.add_argument("--deadline", type=float, default=0.0, help="seconds of compiling before skipping (0: none)")
    args = ap.parse_args(argv)
    cache = os.path.abspath(args.cache)
    os.makedirs(os.path.join(cache, "aot"), exist_ok=True)
    os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", "9.0a")
    fa.setup_environment(cache, allow_compile=True)
    import torch
    from flashinfer.jit import env as jit_env

    jit_dir = str(jit_env.FLASHINFER_JIT_DIR)
    aot_dir = str(jit_env.FLASHINFER_AOT_DIR)
    path = os.path.join(cache, fm.MENU_FILE)
    old = {}
    if os.path.exists(path):
        with open(path) as f:
            old = {m["key"]: m for m in json.load(f).get("modules", [])}
    out, compiling, failed = [], 0.0, 0
    for entry in fm.MENUS[args.menu]:
        backend, kind, dtype, d, window, softcap = entry
        key = fm.module_key(backend, kind, dtype, d, d, window, softcap)
        rec = {"key": key, "backend": backend, "kind": kind, "dtype": dtype, "head_dim": d, "window": window,
               "softcap": softcap}
        prev = old.get(key)
        if prev and prev.get("modules") and all(
                os.path.isfile(os.path.join(cache, "aot", n, n + ".so")) for n in prev["modules"]):
            for n in prev["modules"]:
                link_module(cache, aot_dir, n)
            rec.update(prev, status="cached")
        elif args.deadline and compiling >= args.deadline:
            rec["status"] = "skipped (deadline %.0f s)" % args.deadline
            failed += 1
        else:
            seconds = compile_entry(torch, entry, cache, jit_dir, aot_dir, rec)
            compiling += seconds
            failed += rec["status"] != "compiled"
        out.append(rec)
        print("%-36s %-10s %7s s %8.1f MB  err %s  %s" % (
            key, rec["status"], rec.get("compile_s", "-"), rec.get("so_bytes", 0) / 1e6, rec.get("max_abs_err", "-"),
            " ".join(rec.get("modules", [])) or rec.get("error", "")), flush=True)
    import flashinfer

    doc = {"flashinfer": getattr(flashinfer, "__version__", "?"), "arch": os.environ["FLASHINFER_CUDA_ARCH_LIST"],
           "menu": args.menu, "modules": out}
    tmp = path + ".tmp.%d" % os.getpid()
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)
    total = sum(os.path.getsize(os.path.join(r, n)) for r, _, ns in os.walk(cache) for n in ns
                if not os.path.islink(os.path.join(r, n)))
    aot = sum(m.get("so_bytes", 0) for m in out)
    print("menu %s: %d entries, %d compiled or cached, %.0f s compiling; cache %s: %.1f MB (aot %.1f MB)" % (
        args.menu, len(out), len(out) - failed, compiling, cache, total / 1e6, aot / 1e6))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
