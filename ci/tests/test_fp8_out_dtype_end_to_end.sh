#!/usr/bin/env bash
# test_fp8_out_dtype_end_to_end.sh ATTNFUZZ — out_dtype (fp8 inputs, fp16 / bf16 O with no
# output scale; docs/fp8.md) end to end:
#   1. the out_dtype seed passes on the cpu backend and on flash_fp8, and
#      flash_fp8_bug:o_as_fp8 (out_dtype ignored: O written as E4M3 bytes) is caught on it;
#   2. a short campaign from the fp8_e4m3 seed alone (no out_dtype) finds
#      flash_fp8_bug:o_as_fp8: the fuzzer draws out_dtype itself, every minimised finding
#      keeps it and the first still fails (repro exits 1);
#   3. the minimiser drops it when the finding survives without it (flash_fp8_bug:
#      row_scale, an O row x 1.5 whatever O's storage);
#   4. a worker declines it with a reason.
set -u
bin=${1:?usage: test_fp8_out_dtype_end_to_end.sh path/to/attnfuzz}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TIME=${TIME:-12}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seed=corpora/seed/fp8-e4m3-out-bf16.case
check() { # check NAME FILE REGEX: FILE must match REGEX
  if grep -Eq -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: no /$3/ in:"; tail -5 "$2"; fail=1; fi
}

# 1. the seed
"$bin" run "$seed" --backend cpu > "$tmp/cpu.out" 2>&1
check "cpu passes the out_dtype seed" "$tmp/cpu.out" "\[cpu\]: pass"
"$bin" run "$seed" --backend flash_fp8 > "$tmp/flash.out" 2>&1
check "flash_fp8 passes the out_dtype seed" "$tmp/flash.out" "\[flash_fp8\]: pass"
"$bin" run "$seed" --backend flash_fp8_bug:o_as_fp8 > "$tmp/bug.out" 2>&1
rc=$?
check "flash_fp8_bug:o_as_fp8 is caught on the out_dtype seed" "$tmp/bug.out" "FINDING (unwritten|mismatch) O"
[ "$rc" = 1 ] || { echo "FAIL o_as_fp8 on the seed: exit $rc, expected 1"; fail=1; }
"$bin" run corpora/seed/fp8-e4m3-causal.case --backend flash_fp8_bug:o_as_fp8 > "$tmp/bug-same.out" 2>&1
check "flash_fp8_bug:o_as_fp8 passes an fp8 O (its bug is out_dtype's)" "$tmp/bug-same.out" ": pass"

# 2. a campaign from the plain fp8_e4m3 seed: the fuzzer must reach out_dtype
out="$tmp/camp"
"$bin" campaign --time "$TIME" --jobs 1 --seed 11 --backend flash_fp8_bug:o_as_fp8 --out "$out" \
  corpora/seed/fp8-e4m3-causal.case > "$tmp/camp.log" 2>&1
rc=$?
n=$(ls "$out/findings" 2>/dev/null | wc -l)
if [ "$rc" != 1 ] || [ "$n" -lt 1 ]; then
  echo "FAIL campaign on flash_fp8_bug:o_as_fp8: exit $rc, $n bucket(s)"; tail -3 "$tmp/camp.log"; fail=1
else
  kept=$(grep -lE '^out_dtype = (fp16|bf16)$' "$out"/findings/*/finding.case | wc -l)
  first=$(ls "$out/findings" | head -n 1)
  "$bin" repro "$out/findings/$first/finding.case" > "$tmp/repro.out" 2>&1
  rrc=$?
  if [ "$kept" != "$n" ] || [ "$rrc" != 1 ]; then
    echo "FAIL campaign: $kept of $n minimised findings keep out_dtype; repro exit $rrc"; fail=1
  else
    echo "ok   a ${TIME} s campaign from the fp8_e4m3 seed finds o_as_fp8: $n bucket(s), each minimised with" \
      "out_dtype, repro fails"
  fi
fi

# 3. the minimiser drops out_dtype when the bug does not need it
"$bin" minimize "$seed" -o "$tmp/row.min.case" --backend flash_fp8_bug:row_scale --max-runs 60 --quiet \
  > "$tmp/row.min" 2>&1
rc=$?
if [ "$rc" = 0 ] && [ -s "$tmp/row.min.case" ] && ! grep -q '^out_dtype' "$tmp/row.min.case"; then
  echo "ok   flash_fp8_bug:row_scale on the out_dtype seed minimises to an fp8 O (out_dtype dropped)"
else
  echo "FAIL minimise row_scale: exit $rc; $(grep '^out_dtype' "$tmp/row.min.case" 2>/dev/null)"; tail -3 "$tmp/row.min"
  fail=1
fi

# 4. a worker declines it
if command -v python3 > /dev/null; then
  export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
  "$bin" run "$seed" --backend worker:refpy --worker-cmd "python3 -m attnfuzz_worker.examples.reference_py" \
    > "$tmp/worker.out" 2>&1
  check "a worker declines out_dtype" "$tmp/worker.out" "declined.*out_dtype = bf16"
else
  echo "SKIP worker decline: no python3"
fi
[ "$fail" = 0 ] && echo "test_fp8_out_dtype_end_to_end: ok"
exit "$fail"
