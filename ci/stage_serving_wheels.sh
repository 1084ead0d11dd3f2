#!/usr/bin/env bash
# stage_serving_wheels.sh [DIR] — the wheels the serving targets need on the offline GPU
# machine (python 3.12, manylinux x86_64), downloaded here with pip into DIR (default
# .whl/serving, ignored by git), to carry with the tree (docs/targets.md, "Serving targets
# on the GPU machine"). flashinfer-python is slimmed by ci/slim_flashinfer_wheel.py (62 MB ->
# 28 MB: the sources prefill and decode never compile are dropped) to fit the carry limit.
# Not staged (the GPU machine has them): torch, triton, numpy, einops, cuda-bindings, and
# torch's own dependencies (filelock, jinja2, markupsafe, typing-extensions).
set -eu
DIR=${1:-.whl/serving}
mkdir -p "$DIR"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d "$TMP" \
    flashinfer-python==0.7.2.post1 sageattention==1.0.6 "apache-tvm-ffi>=0.1.11,<0.2" ninja nvidia-ml-py tabulate \
    tqdm requests urllib3 idna certifi charset-normalizer click packaging
python3 "$(dirname "$0")/slim_flashinfer_wheel.py" "$TMP"/flashinfer_python-0.7.2.post1-py3-none-any.whl \
    "$DIR/flashinfer_python-0.7.2.post1-py3-none-any.whl"
rm "$TMP"/flashinfer_python-*.whl
mv "$TMP"/*.whl "$DIR/"
du -sh "$DIR"
