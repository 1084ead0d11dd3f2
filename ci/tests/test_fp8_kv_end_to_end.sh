#!/usr/bin/env bash
# test_fp8_kv_end_to_end.sh ATTNFUZZ — kv_dtype (an fp8 KV cache under fp16 / bf16 queries,
# docs/fp8.md) end to end:
#   1. the kv_dtype seed passes on the cpu backend and on planted:none, and
#      planted:kv_scale_swap (V dequantised with K's descale) is caught on it as a mismatch;
#      the same bug passes where K's and V's descales agree (its bug needs them apart);
#      the cpu passes a case whose sequences' amax differ (the batch probe skips kv_dtype);
#   2. a short campaign from that seed finds planted:kv_scale_swap, every minimised finding
#      keeps kv_dtype and the first still fails (repro exits 1);
#   3. the minimiser drops kv_dtype when the finding survives without it
#      (planted:gqa_head_mod, GQA heads misread whatever K's storage);
#   4. a worker declines it with a reason; the cp wrapper declines it.
set -u
bin=${1:?usage: test_fp8_kv_end_to_end.sh path/to/attnfuzz}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TIME=${TIME:-5}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seed=corpora/seed/fp16-kv-fp8-e4m3.case
. "$(dirname "$0")/lib_fp8_kind.sh"

# 1. the seed
"$bin" run "$seed" --backend cpu > "$tmp/cpu.out" 2>&1
check "cpu passes the kv_dtype seed" "$tmp/cpu.out" "\[cpu\]: pass"
"$bin" run "$seed" --backend planted:none > "$tmp/none.out" 2>&1
check "planted:none passes the kv_dtype seed" "$tmp/none.out" "\[planted:none\]: pass"
"$bin" run "$seed" --backend planted:kv_scale_swap > "$tmp/bug.out" 2>&1
rc=$?
check "planted:kv_scale_swap is caught on the kv_dtype seed" "$tmp/bug.out" "FINDING mismatch O"
[ "$rc" = 1 ] || { echo "FAIL kv_scale_swap on the seed: exit $rc, expected 1"; fail=1; }
grep -v '^data' "$seed" > "$tmp/flat.case" # K and V of one distribution: one descale
"$bin" run "$tmp/flat.case" --backend planted:kv_scale_swap > "$tmp/flat.out" 2>&1
check "planted:kv_scale_swap passes where the descales agree" "$tmp/flat.out" ": pass"
# the probes that rebuild inputs for another shape skip it (scales over the whole batch);
# a cpu campaign found this case "not batch invariant" before
"$bin" run ci/tests/cases/fp8-kv-batch-probe.case --backend cpu > "$tmp/batch.out" 2>&1
check "cpu passes a kv_dtype case whose sequences have other amax (batch probe skipped)" "$tmp/batch.out" \
  "\[cpu\]: pass"

# 2. a campaign from the seed finds it and keeps kv_dtype in every minimised finding
out="$tmp/camp"
"$bin" campaign --time "$TIME" --stop-after-buckets 1 --jobs 1 --seed 11 --backend planted:kv_scale_swap --out "$out" \
  "$seed" \
  > "$tmp/camp.log" 2>&1
rc=$?
n=$(ls "$out/findings" 2>/dev/null | wc -l)
kept=$(grep -lE '^kv_dtype = fp8_e(4m3|5m2)$' "$out"/findings/*/finding.case 2>/dev/null | wc -l)
first=$(ls "$out/findings" 2>/dev/null | head -n 1)
rrc=0
[ -n "$first" ] && { "$bin" repro "$out/findings/$first/finding.case" > "$tmp/repro.out" 2>&1; rrc=$?; }
if [ "$rc" != 1 ] || [ "$n" -lt 1 ] || [ "$kept" != "$n" ] || [ "$rrc" != 1 ]; then
  echo "FAIL campaign on planted:kv_scale_swap: exit $rc, $n bucket(s), $kept keep kv_dtype, repro exit $rrc"
  tail -3 "$tmp/camp.log"; fail=1
else
  echo "ok   a ${TIME} s campaign finds kv_scale_swap: $n bucket(s), each minimised with kv_dtype, repro fails"
fi

# 3. the minimiser drops kv_dtype when the bug does not need it
"$bin" minimize "$seed" -o "$tmp/gqa.min.case" --backend planted:gqa_head_mod --max-runs 60 --quiet \
  > "$tmp/gqa.min" 2>&1
rc=$?
if [ "$rc" = 0 ] && [ -s "$tmp/gqa.min.case" ] && ! grep -q '^kv_dtype' "$tmp/gqa.min.case"; then
  echo "ok   planted:gqa_head_mod on the kv_dtype seed minimises with kv_dtype dropped"
else
  echo "FAIL minimise gqa_head_mod: exit $rc; $(grep -E '^kv_dtype' "$tmp/gqa.min.case" 2>/dev/null)"
  tail -3 "$tmp/gqa.min"; fail=1
fi

# 4. a worker and the cp wrapper decline it
worker_declines "$seed" "declined.*kv_dtype = fp8_e4m3 is not carried" "a worker declines kv_dtype"
sed 's/^seqlen_q = 16$/seqlen_q = 96/; s/^align = bottom_right$//' "$seed" > "$tmp/cp.case"
echo "cp = 2 p2p" >> "$tmp/cp.case"
"$bin" run "$tmp/cp.case" --backend cpu > "$tmp/cp.out" 2>&1
check "the cp wrapper declines kv_dtype" "$tmp/cp.out" "declined.*kv_dtype = fp8_e4m3 is not served"
[ "$fail" = 0 ] && echo "test_fp8_kv_end_to_end: ok"
exit "$fail"
