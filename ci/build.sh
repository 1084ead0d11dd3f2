#!/usr/bin/env bash
# ci/build.sh [DIR [cmake options...]] — configure and build (default: build/, CUDA parts
# when nvcc is found). The binary is DIR/attnfuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$dir" "$@" >/dev/null
cmake --build "$dir" -j"$jobs"
