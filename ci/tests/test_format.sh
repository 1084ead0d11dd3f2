#!/usr/bin/env bash
# test_format.sh — every C/CUDA source follows .clang-format (clang-format 14, Debian).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang-format >/dev/null || { echo "test_format: clang-format missing (ci/setup.sh installs it)" >&2; exit 1; }
mapfile -t files < <(git ls-files 'harness/*.c' 'harness/*.h' 'harness/*.cu' 'oracle/*.c' 'oracle/*.h' 'oracle/*.cu' 'oracle/*.cuh' \
  'triage/*.c' 'triage/*.h' 'kernels/*.c' 'kernels/*.h' 'kernels/*.cu' 'kernels/*.cuh')
clang-format --dry-run -Werror "${files[@]}" 2> /tmp/test_format.$$ || { head -20 /tmp/test_format.$$; rm -f /tmp/test_format.$$; echo "test_format: run clang-format -i on the files above" >&2; exit 1; }
rm -f /tmp/test_format.$$
echo "test_format: ${#files[@]} files formatted"
