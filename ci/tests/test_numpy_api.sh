#!/usr/bin/env bash
# test_numpy_api.sh ATTNFUZZ — the Python worker API for kernel authors:
#   1. python/tests/test_numpy_api.py under pytest, with ATTNFUZZ_BIN=ATTNFUZZ: mode="numpy"
#      hands float32 arrays of the exact stored values and writes arrays as it writes lists;
#      host modes refuse device="cuda"; attnfuzz_worker.testing.fuzz_kernel passes a correct
#      numpy kernel over three quickstart cases and raises AssertionError naming an existing
#      finding.case and a repro command that still fails for a planted bug (wrong scale,
#      causal mask ignored), also through the attnfuzz_kernel fixture; nothing may be skipped;
#   2. end to end: a worker served with device="cuda", mode="numpy" is refused at its start:
#      `attnfuzz run` exits 3 (unavailable) naming the device and the mode.
# The python is the first of $ATTNFUZZ_PYTHON, python3, /usr/bin/python3 that imports numpy
# and pytest (ci/setup.sh installs python3-numpy and python3-pytest); none: SKIP, exit 77.
set -u
AF=${1:?usage: test_numpy_api.sh path/to/attnfuzz}
case "$AF" in /*) ;; *) AF=$PWD/$AF ;; esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
py=""
for cand in ${ATTNFUZZ_PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$cand" >/dev/null && "$cand" -c 'import numpy, pytest' 2>/dev/null; then py=$(command -v "$cand"); break; fi
done
[ -n "$py" ] || { echo "SKIP test_numpy_api: no python with numpy and pytest (\$ATTNFUZZ_PYTHON, python3, /usr/bin/python3)"; exit 77; }
unset ATTNFUZZ_WORKER_CONFIGS ATTNFUZZ_DATA_DIR
export PYTHONPATH="$ROOT/python:$ROOT/python/tests${PYTHONPATH:+:$PYTHONPATH}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
echo "python: $py"

# 1. the Python tests, nothing skipped
if (cd "$T" && ATTNFUZZ_BIN=$AF "$py" -m pytest -q -rs -p no:cacheprovider "$ROOT/python/tests/test_numpy_api.py") \
    >"$T/pytest.out" 2>&1; then
    if grep -Eq '[0-9]+ skipped' "$T/pytest.out"; then echo "FAIL python/tests/test_numpy_api.py skipped tests:"; cat "$T/pytest.out"; fail=1
    else echo "ok   python/tests/test_numpy_api.py: $(tail -1 "$T/pytest.out")"; fi
else
    echo "FAIL python/tests/test_numpy_api.py:"; cat "$T/pytest.out"; fail=1
fi

# 2. device="cuda" with a host mode: refused at the worker's start
cat > "$T/gpu.py" <<'PY'
from attnfuzz_worker import serve
serve(lambda q, k, v, problem, do=None: None, name="gpu", device="cuda", mode="numpy")
PY
"$AF" run "$ROOT/corpora/quickstart/causal-gqa.case" --backend worker:gpu \
    --worker-cmd "$py $T/gpu.py" >"$T/gpu.out" 2>&1; rc=$?
if [ $rc -eq 3 ] && grep -q "unavailable: .*device='cuda' with mode='numpy'" "$T/gpu.out"; then
    echo "ok   device='cuda' with mode='numpy' is refused at the start (exit 3)"
else
    echo "FAIL device='cuda' with mode='numpy': exit $rc (want 3):"; cat "$T/gpu.out"; fail=1
fi
exit $fail
