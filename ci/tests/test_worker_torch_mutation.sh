#!/usr/bin/env bash
# test_worker_torch_mutation.sh ATTNFUZZ — the worker side of the input-mutation check
# (docs/worker-protocol.md, "inputs_written"; python/attnfuzz_worker/input_check.py) in the
# torch mapping, where the kernel gets dense copies and only the worker can see a write:
# torch_writes_k.py (correct attention in float32) is clean as "none", and an
# input_mutation of K, with coordinates, when it smooths K in place ("arg": the package's
# argument; "watched": the adapter's fp16 copy listed with problem.watch). Needs torch
# importable by $ATTNFUZZ_PYTHON (default python3), else exit 77 (skipped). TORCH_DEVICE
# (default cpu) picks the worker's device.
set -u
AF=${1:?usage: test_worker_torch_mutation.sh path/to/attnfuzz}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${ATTNFUZZ_PYTHON:-python3}
DEV=${TORCH_DEVICE:-cpu}
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c "import torch" 2>/dev/null || { echo "SKIP test_worker_torch_mutation: torch does not import with $PY"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
printf 'dtype = fp16\nheads_q = 4\nheads_kv = 2\nseqlen = 12\nhead_dim = 8\nmask = causal\nbackward = yes\nseed = 3\n' >"$T/bwd.case"
printf 'dtype = bf16\nbatch = 2\nseqlen = 10\nseqlens_q = 10,6\nseqlens_kv = 10,6\nhead_dim = 16\nmask = padding\nseed = 4\n' >"$T/pad.case"
for mode in none arg watched; do
  "$AF" run "$T/bwd.case" "$T/pad.case" --backend worker:t --no-probes \
      --worker-cmd "$PY $ROOT/harness/backends/worker/tests/torch_writes_k.py $mode $DEV" >"$T/$mode.out" 2>"$T/$mode.err"
  rc=$?
  case $mode in
    none) want='^[^ ]*bwd.case \[worker:t\]: pass' ; wantrc=0 ;;
    arg) want='bwd.case \[worker:t\]: FINDING input_mutation K b0 h[01] r0 c[0-9]+ .*the worker.s kernel argument' ; wantrc=1 ;;
    watched) want='bwd.case \[worker:t\]: FINDING input_mutation K b0 h[01] r0 c[0-9]+ .*the worker.s kernel argument' ; wantrc=1 ;;
  esac
  if [ "$rc" = "$wantrc" ] && grep -Eq "$want" "$T/$mode.out"; then
    echo "ok   $mode: exit $rc, $(grep -c 'input_mutation' "$T/$mode.out") input_mutation line(s)"
  else
    echo "FAIL $mode: exit $rc (want $wantrc), no /$want/ in:"; cat "$T/$mode.out"; tail -5 "$T/$mode.err"; fail=1
  fi
done
[ $fail -eq 0 ] && echo "test_worker_torch_mutation: all checks passed"
exit $fail
