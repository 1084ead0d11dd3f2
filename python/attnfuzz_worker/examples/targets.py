"""The worker targets shipped here and whether each can start on this machine:

    python3 -m attnfuzz_worker.examples.targets          one line per target
    python3 -m attnfuzz_worker.examples.targets --check NAME...   exit 1 naming a missing module

The targets are the worker config files of python/targets/NAME.conf (their commands are
read from there, so this list and `attnfuzz backends --worker-configs python/targets`
name the same workers). A target can start when the modules it needs import; the line
gives their versions, or the first module that does not import (and why). This checks
imports only, in this interpreter; `attnfuzz backends` starts each worker and asks it."""
import argparse
import importlib
import os
import sys

# python/targets/, beside this package
CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "targets")

# name -> the modules its worker imports (a target not listed needs only the package)
NEEDS = {
    "refpy": (),
    "torch-sdpa": ("torch",),
    "flex-attention": ("torch", "torch.nn.attention.flex_attention"),
    "jax-dpa": ("jax", "numpy", "torch"),
    "triton-mxfp8-ordinary": ("torch", "triton"),
    "triton-mxfp8-own-block": ("torch", "triton"),
    "sage": ("torch", "triton", "sageattention"),
    "flashinfer": ("torch", "flashinfer"),
    "fa4": ("torch", "cutlass", "quack", "tvm_ffi", "flash_attn.cute"),
    "cudnn-fe": ("torch", "cudnn"),
}


def read_config(path):
    """{key: value} of a worker config file (`key = value`, `#` comments)."""
    fields = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if "=" in line:
                key, value = line.split("=", 1)
                fields[key.strip()] = value.strip()
    return fields


def shipped_targets():
    """{name: (config path, command)} of python/targets/*.conf."""
    targets = {}
    for entry in sorted(os.listdir(CONFIG_DIR)) if os.path.isdir(CONFIG_DIR) else []:
        if entry.endswith(".conf"):
            path = os.path.join(CONFIG_DIR, entry)
            fields = read_config(path)
            targets[fields.get("name", entry[:-5])] = (path, fields.get("command", ""))
    return targets


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
    targets = shipped_targets()
    names = args.check or list(targets)
    missing = 0
    for name in names:
        if name not in targets:
            print("%s: unknown target (%s)" % (name, ", ".join(targets) or "no config in " + CONFIG_DIR))
            missing += 1
            continue
        path, command = targets[name]
        versions, why = probe(NEEDS.get(name, ()))
        if why:
            missing += 1
            print("%-24s cannot start: no module %s" % (name, why))
        else:
            vs = " ".join("%s %s" % kv for kv in sorted(versions.items()))
            print("%-24s can start   %s  [%s]  (%s)" % (name, command, vs, os.path.relpath(path)))
    return 1 if (args.check and missing) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
