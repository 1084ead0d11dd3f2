"""The worker targets shipped here and whether each can start on this machine:

    python3 -m attnfuzz_worker.examples.targets          one line per target
    python3 -m attnfuzz_worker.examples.targets --check NAME...   exit 1 naming a missing module

A target can start when the modules it needs import; the line gives their versions, or
the first module that does not import (and why)."""
import argparse
import importlib
import sys

# name -> (module, the modules it needs, the worker command's arguments)
TARGETS = {
    "torch-sdpa": ("torch_sdpa", ("torch",), ""),
    "flex-attention": ("flex_attention", ("torch", "torch.nn.attention.flex_attention"), "--device cpu|cuda"),
    "jax-dpa": ("jax_dpa", ("jax", "numpy", "torch"), "--device cpu|cuda [--raw]"),
    "triton-mxfp8-ordinary": ("triton_mxfp8", ("torch", "triton"), "--recipe ordinary --device cpu|cuda"),
    "triton-mxfp8-own-block": ("triton_mxfp8", ("torch", "triton"), "--recipe own-block --device cpu|cuda"),
}


def probe(needs):
    """({module: version}, None) or (partial versions, 'module: why') for the first failure."""
    versions = {}
    for name in needs:
        try:
            mod = importlib.import_module(name)
        except Exception as e:  # ImportError, or a library failing at import
            return versions, "%s: %s" % (name, " ".join(str(e).split())[:120])
        if "." not in name:
            versions[name] = getattr(mod, "__version__", "?")
    return versions, None


def main(argv):
    ap = argparse.ArgumentParser(prog="attnfuzz_worker.examples.targets")
    ap.add_argument("--check", nargs="+", metavar="NAME", help="exit 1 unless these targets can start")
    args = ap.parse_args(argv)
    names = args.check or list(TARGETS)
    missing = 0
    for name in names:
        if name not in TARGETS:
            print("%s: unknown target (%s)" % (name, ", ".join(TARGETS)))
            missing += 1
            continue
        module, needs, extra = TARGETS[name]
        versions, why = probe(needs)
        if why:
            missing += 1
            print("%-24s cannot start: no module %s" % (name, why))
        else:
            vs = " ".join("%s %s" % kv for kv in sorted(versions.items()))
            print("%-24s can start   %s -m attnfuzz_worker.examples.%s %s  [%s]" % (name, "python3", module, extra, vs))
    return 1 if (args.check and missing) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
