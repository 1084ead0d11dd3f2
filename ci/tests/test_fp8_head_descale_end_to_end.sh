#!/usr/bin/env bash
# test_fp8_head_descale_end_to_end.sh ATTNFUZZ — descale = head (fp8 Q, K, V descales per
# (batch, kv head), FlashAttention 3's q/k/v_descale; docs/fp8.md) end to end:
#   1. the descale = head seed passes on the cpu backend and on flash_fp8, and
#      flash_fp8_bug:descale_batch0 (sequence 0's descales for every sequence) is caught on
#      it as a mismatch; the same bug passes the seed with descale = tensor;
#   2. a short campaign from that seed finds it, every minimised finding keeps
#      descale = head and the first still fails (repro exits 1);
#   3. the minimiser drops descale = head when the finding survives without it
#      (flash_fp8_bug:row_scale, an O row x 1.5 whatever the descales);
#   4. a worker declines it with a reason.
set -u
bin=${1:?usage: test_fp8_head_descale_end_to_end.sh path/to/attnfuzz}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TIME=${TIME:-5}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seed=corpora/seed/fp8-e4m3-descale-head.case
. "$(dirname "$0")/lib_fp8_kind.sh"

# 1. the seed
"$bin" run "$seed" --backend cpu > "$tmp/cpu.out" 2>&1
check "cpu passes the descale = head seed" "$tmp/cpu.out" "\[cpu\]: pass"
"$bin" run "$seed" --backend flash_fp8 > "$tmp/flash.out" 2>&1
check "flash_fp8 passes the descale = head seed" "$tmp/flash.out" "\[flash_fp8\]: pass"
"$bin" run "$seed" --backend flash_fp8_bug:descale_batch0 > "$tmp/bug.out" 2>&1
rc=$?
check "flash_fp8_bug:descale_batch0 is caught on the descale = head seed" "$tmp/bug.out" "FINDING mismatch O b1"
[ "$rc" = 1 ] || { echo "FAIL descale_batch0 on the seed: exit $rc, expected 1"; fail=1; }
grep -v '^descale' "$seed" > "$tmp/tensor.case"
"$bin" run "$tmp/tensor.case" --backend flash_fp8_bug:descale_batch0 > "$tmp/tensor.out" 2>&1
check "flash_fp8_bug:descale_batch0 passes per-tensor descales (its bug is descale = head's)" "$tmp/tensor.out" ": pass"

# 2. a campaign from the seed finds it and keeps descale = head in every minimised finding
out="$tmp/camp"
# it stops at its first bucket: one job and a fixed seed draw the same cases in the same order
# on any machine, so that bucket does not depend on the machine's speed (a longer run also
# meets an fp8 case the correct flash_fp8 fails: docs/results/open-flash-fp8-e4m3-o-row.case)
"$bin" campaign --time "$TIME" --stop-after-buckets 1 --jobs 1 --seed 11 --backend flash_fp8_bug:descale_batch0 \
  --out "$out" "$seed" \
  > "$tmp/camp.log" 2>&1
rc=$?
n=$(ls "$out/findings" 2>/dev/null | wc -l)
kept=$(grep -lE '^descale = head$' "$out"/findings/*/finding.case 2>/dev/null | wc -l)
first=$(ls "$out/findings" 2>/dev/null | head -n 1)
rrc=0
[ -n "$first" ] && { "$bin" repro "$out/findings/$first/finding.case" > "$tmp/repro.out" 2>&1; rrc=$?; }
if [ "$rc" != 1 ] || [ "$n" -lt 1 ] || [ "$kept" != "$n" ] || [ "$rrc" != 1 ]; then
  echo "FAIL campaign on flash_fp8_bug:descale_batch0: exit $rc, $n bucket(s), $kept keep descale = head, repro $rrc"
  tail -3 "$tmp/camp.log"; fail=1
else
  echo "ok   a ${TIME} s campaign finds descale_batch0: $n bucket(s), each minimised with descale = head, repro fails"
fi

# 3. the minimiser drops descale = head when the bug does not need it
kind_dropped "$seed" '^dtype = fp8_e4m3$' "descale = head"
! grep -q '^descale' "$tmp/row.min.case" 2>/dev/null || { echo "FAIL the minimised case keeps descale = head"; fail=1; }

# 4. a worker declines it
worker_declines "$seed" "declined.*descale = head .* is not carried" "a worker declines descale = head"
[ "$fail" = 0 ] && echo "test_fp8_head_descale_end_to_end: ok"
exit "$fail"
