#!/usr/bin/env python3
"""slim_flashinfer_wheel.py IN.whl OUT.whl — a copy of the flashinfer-python wheel without
the sources that attention prefill and decode never compile, so that it fits the GPU
machine's carry limit (64 MiB with the tree; the 0.7.2.post1 wheel is 62 MB).

Kept: every Python file (`import flashinfer` imports most of them), the package's own
headers (data/include), the top-level JIT sources and templates of data/csrc (single and
batch prefill, decode, their bindings), and the include folders the JIT puts on nvcc's
path (flashinfer/jit/env.py: CUTLASS_INCLUDE_DIRS, SPDLOG_INCLUDE_DIR, CCCL_INCLUDE_DIRS).
Dropped: data/csrc's subfolders (MoE, GDN, KDA, vendored FMHA kernels, ...) and the rest
of the vendored cutlass, cccl and spdlog trees (examples, python, tests, docs).
The RECORD is rewritten for the files kept (sha256, size), so pip installs the result as
an ordinary wheel. Nothing of the wheel is copied into this repository."""
import base64
import hashlib
import sys
import zipfile

DATA = "flashinfer/data/"
KEEP_DATA = ("include/", "cutlass/include/", "cutlass/tools/util/include/", "spdlog/include/",
             "cccl/cub/", "cccl/libcudacxx/include/", "cccl/thrust/")


def keep(name):
    """Whether the wheel member NAME goes into the slim wheel."""
    if not name.startswith(DATA):
        return True
    rest = name[len(DATA):]
    if rest.startswith("csrc/"):
        return "/" not in rest[len("csrc/"):]  # top-level JIT sources only
    if "/" not in rest:
        return True  # data/*.py
    return rest.startswith(KEEP_DATA)


def record_line(name, payload):
    digest = base64.urlsafe_b64encode(hashlib.sha256(payload).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(payload))


def main(argv):
    if len(argv) != 2:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    src, dst = argv
    kept = dropped = 0
    record_name = None
    lines = []
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zout:
        for info in zin.infolist():
            if info.filename.endswith(".dist-info/RECORD"):
                record_name = info.filename
                continue
            if info.is_dir() or not keep(info.filename):
                dropped += not info.is_dir()
                continue
            payload = zin.read(info)
            zout.writestr(info, payload, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
            lines.append(record_line(info.filename, payload))
            kept += 1
        if record_name is None:
            print("slim_flashinfer_wheel: %s has no RECORD" % src, file=sys.stderr)
            return 2
        lines.append("%s,," % record_name)
        zout.writestr(record_name, "\n".join(lines) + "\n")
    print("slim_flashinfer_wheel: %d files kept, %d dropped -> %s" % (kept, dropped, dst))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
