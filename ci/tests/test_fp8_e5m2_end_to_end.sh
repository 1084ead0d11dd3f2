#!/usr/bin/env bash
# test_fp8_e5m2_end_to_end.sh ATTNFUZZ — the fp8_e5m2 dtype end to end (docs/fp8.md):
#   1. the E5M2 seed passes on the cpu backend and on flash_fp8 (a correct flash-style
#      fp8 kernel), and flash_fp8_bug:e5m2_sat_448 (E5M2 outputs saturated at E4M3's
#      448) is a mismatch on it;
#   2. a short campaign from the fp8_e4m3 seed alone finds flash_fp8_bug:e5m2_sat_448:
#      the fuzzer draws fp8_e5m2 itself, every minimised finding keeps it (the bug needs
#      it) and the first still fails (repro exits 1);
#   3. the minimiser drops it when the finding survives without it: flash_fp8_bug:
#      row_scale (an O row x 1.5, any fp8 kind) on the E5M2 seed minimises to fp8_e4m3;
#   4. who does not serve it declines with a reason: CP (cp = 2 over cpu) and a worker
#      whose hello does not list fp8_e5m2.
set -u
bin=${1:?usage: test_fp8_e5m2_end_to_end.sh path/to/attnfuzz}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TIME=${TIME:-12}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seed=corpora/seed/fp8-e5m2-causal-bwd.case
check() { # check NAME FILE REGEX: FILE must match REGEX
  if grep -Eq -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: no /$3/ in:"; tail -5 "$2"; fail=1; fi
}

# 1. the seed
"$bin" run "$seed" --backend cpu > "$tmp/cpu.out" 2>&1
check "cpu passes the E5M2 seed" "$tmp/cpu.out" "fp8-e5m2-causal-bwd.case \[cpu\]: pass"
"$bin" run "$seed" --backend flash_fp8 > "$tmp/flash.out" 2>&1
check "flash_fp8 passes the E5M2 seed" "$tmp/flash.out" "\[flash_fp8\]: pass"
"$bin" run "$seed" --backend flash_fp8_bug:e5m2_sat_448 > "$tmp/sat.out" 2>&1
rc=$?
check "flash_fp8_bug:e5m2_sat_448 is a mismatch on the E5M2 seed" "$tmp/sat.out" "FINDING mismatch"
[ "$rc" = 1 ] || { echo "FAIL e5m2_sat_448 on the seed: exit $rc, expected 1"; fail=1; }
"$bin" run corpora/seed/fp8-e4m3-causal.case --backend flash_fp8_bug:e5m2_sat_448 > "$tmp/sat-e4m3.out" 2>&1
check "flash_fp8_bug:e5m2_sat_448 passes fp8_e4m3 (its bug is E5M2's)" "$tmp/sat-e4m3.out" ": pass"

# 2. a campaign from the E4M3 seed: the fuzzer must reach E5M2
out="$tmp/camp"
"$bin" campaign --time "$TIME" --jobs 1 --seed 11 --backend flash_fp8_bug:e5m2_sat_448 --out "$out" \
  corpora/seed/fp8-e4m3-causal.case > "$tmp/camp.log" 2>&1
rc=$?
n=$(ls "$out/findings" 2>/dev/null | wc -l)
if [ "$rc" != 1 ] || [ "$n" -lt 1 ]; then
  echo "FAIL campaign on flash_fp8_bug:e5m2_sat_448: exit $rc, $n bucket(s)"; tail -3 "$tmp/camp.log"; fail=1
else
  kept=$(grep -l '^dtype = fp8_e5m2$' "$out"/findings/*/finding.case | wc -l)
  first=$(ls "$out/findings" | head -n 1)
  "$bin" repro "$out/findings/$first/finding.case" > "$tmp/repro.out" 2>&1
  rrc=$?
  if [ "$kept" != "$n" ] || [ "$rrc" != 1 ]; then
    echo "FAIL campaign: $kept of $n minimised findings keep fp8_e5m2; repro exit $rrc"; fail=1
  else
    echo "ok   a ${TIME} s campaign from the fp8_e4m3 seed finds e5m2_sat_448: $n bucket(s), each minimised" \
      "with dtype = fp8_e5m2, repro fails"
  fi
fi

# 3. the minimiser drops fp8_e5m2 when the bug does not need it
"$bin" minimize "$seed" -o "$tmp/row.min.case" --backend flash_fp8_bug:row_scale --max-runs 60 --quiet \
  > "$tmp/row.min" 2>&1
rc=$?
if [ "$rc" = 0 ] && grep -q '^dtype = fp8_e4m3$' "$tmp/row.min.case"; then
  echo "ok   flash_fp8_bug:row_scale on the E5M2 seed minimises to fp8_e4m3"
else
  echo "FAIL minimise row_scale: exit $rc; dtype: $(grep '^dtype' "$tmp/row.min.case" 2>/dev/null)"; tail -3 "$tmp/row.min"
  fail=1
fi

# 4. declines
sed 's/^seed = 59$/seed = 59\ncp = 2 p2p/' "$seed" > "$tmp/cp.case"
"$bin" run "$tmp/cp.case" --backend cpu > "$tmp/cp.out" 2>&1
check "CP declines fp8_e5m2" "$tmp/cp.out" "declined.*fp8_e5m2 is not served"
if command -v python3 > /dev/null; then
  export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
  "$bin" run "$seed" --backend worker:refpy --worker-cmd "python3 -m attnfuzz_worker.examples.reference_py" \
    > "$tmp/worker.out" 2>&1
  check "a worker declines fp8_e5m2 (E5M2 storage not carried)" "$tmp/worker.out" "declined.*fp8_e5m2"
else
  echo "SKIP worker decline: no python3"
fi
[ "$fail" = 0 ] && echo "test_fp8_e5m2_end_to_end: ok"
exit "$fail"
