#!/usr/bin/env bash
# test_criterion_fp8.sh ATTNFUZZ — the fp8_e4m3 per-row criterion (harness/judge/verdict.h,
# criterion_fp8.c) against kernels of known quality, through the plugin ABI:
#
#   flash_fp8 (harness/plugins/flash_fp8: a correct flash-style fp8 kernel, rounding
#   differently from the cpu reference where the ABI allows) must pass
#   $ATTNFUZZ_TEST_CRITERION_CASES (CI 64, the nightly 300) seeded fp8
#   cases (ci/tests/criterion_fp8_cases.py: GQA, masks, windows, head dims 8..128,
#   normal:1/4/16 and outlier data, 1/16 with 257-700 keys, 2/3 with backward);
#   each flash_fp8_bug:<bug> must be a mismatch on b1 h2 s128 d64 causal backward, four
#   seeds; row_scale and last_key_dk on every case with the per-tensor rule's ratio
#   (printed in the finding) at most 1: what the per-tensor rule passed; the regression
#   cases corpora/regression/flash-fp8-*.case (false alarms once) pass on flash_fp8.
set -u
bin=${1:?usage: test_criterion_fp8.sh path/to/attnfuzz}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
kinds() { grep -o '"verdict":"[a-z_]*"' "$1" | sed 's/"verdict":"\(.*\)"/\1/' | sort | uniq -c | tr -s ' ' | tr '\n' ','; }

if ! "$bin" backends 2>/dev/null | grep -q '^flash_fp8 '; then
  echo "FAIL 'attnfuzz backends' does not list flash_fp8 (build/plugins missing?)"
  exit 1
fi

python3 ci/tests/criterion_fp8_cases.py "${ATTNFUZZ_TEST_CRITERION_CASES:-64}" "$tmp/many"
good=("$tmp"/many/*.case)
"$bin" run "${good[@]}" --backend flash_fp8 --json > "$tmp/good.json" 2> "$tmp/good.err"
rc=$?
passed=$(grep -c '"verdict":"pass"' "$tmp/good.json")
bad=$(grep -v '"verdict":"pass"' "$tmp/good.json" | head -3 | cut -c1-400)
if [ "$rc" != 0 ] || [ -n "$bad" ] || [ "$passed" != "${#good[@]}" ]; then
  echo "FAIL flash_fp8 is not clean on ${#good[@]} fp8 cases: exit $rc; $(kinds "$tmp/good.json")"
  echo "$bad"
  fail=$((fail + 1))
else
  worst=$(grep -o '"ratio":[0-9.e+-]*' "$tmp/good.json" | cut -d: -f2 | sort -g | tail -1)
  echo "ok   flash_fp8 passes $passed of ${#good[@]} fp8 cases; worst tensor ratio $worst"
fi

# the regression cases of false alarms on flash_fp8 (corpora/regression/flash-fp8-*.case)
reg=(corpora/regression/flash-fp8-*.case)
if [ ! -e "${reg[0]}" ]; then
  echo "FAIL no corpora/regression/flash-fp8-*.case (run from the source directory)"
  fail=$((fail + 1))
elif ! "$bin" run "${reg[@]}" --backend flash_fp8 > "$tmp/reg.txt" 2>&1; then
  echo "FAIL flash_fp8 does not pass its regression cases:"
  grep -v ": pass" "$tmp/reg.txt" | head -3 | cut -c1-300
  fail=$((fail + 1))
else
  echo "ok   flash_fp8 passes its ${#reg[@]} regression case(s): $(grep -o 'worst [A-Za-z]* ratio=[0-9.e+-]*' "$tmp/reg.txt" | tr '\n' ' ')"
fi

mkdir -p "$tmp/bugs"
for seed in 1 2 3 4; do
  printf 'dtype = fp8_e4m3\nheads = 2\nseqlen = 128\nhead_dim = 64\nmask = causal\nbackward = yes\nseed = %s\n' \
    "$seed" > "$tmp/bugs/causal-$seed.case"
done
bugcases=("$tmp"/bugs/*.case)
for bug in row_scale head_descale last_key_dk; do
  out="$tmp/$bug.json"
  "$bin" run "${bugcases[@]}" --backend "flash_fp8_bug:$bug" --json > "$out" 2> "$tmp/$bug.err"
  rc=$?
  caught=$(grep -c '"verdict":"mismatch"' "$out")
  # the per-tensor rule's ratio of each case's worst fp8 finding (compare.c prints it)
  tensor_max=$(grep -o 'per-tensor rule ratio [0-9.e+-]*' "$out" | awk '{print $4}' | sort -g | tail -1)
  row_min=$(grep -o '"kind":"mismatch","tensor":"[A-Za-z]*","b":[0-9-]*,"h":[0-9-]*,"row":[0-9-]*,"col":[0-9-]*,"error":[0-9.e+-]*,"allowed":[0-9.e+-]*,"ratio":[0-9.e+-]*' "$out" |
    sed 's/.*"ratio"://' | sort -g | head -1)
  if [ "$rc" != 1 ] || [ "$caught" != "${#bugcases[@]}" ]; then
    echo "FAIL flash_fp8_bug:$bug: exit $rc, mismatch on $caught of ${#bugcases[@]} cases; $(kinds "$out")"
    grep -v '"verdict":"mismatch"' "$out" | head -2 | cut -c1-300
    fail=$((fail + 1))
  elif [ "$bug" != head_descale ] && ! awk -v t="${tensor_max:-9}" 'BEGIN { exit !(t <= 1) }'; then
    echo "FAIL flash_fp8_bug:$bug: the per-tensor rule would catch it too (ratio $tensor_max): not a per-row test"
    fail=$((fail + 1))
  else
    echo "ok   flash_fp8_bug:$bug caught as mismatch on all ${#bugcases[@]} cases (row ratios >= $row_min;" \
      "per-tensor rule ratios <= ${tensor_max:-n/a})"
  fi
done

[ "$fail" -eq 0 ] && echo "test_criterion_fp8: all passed" || echo "test_criterion_fp8: $fail failed"
exit $((fail > 0))
