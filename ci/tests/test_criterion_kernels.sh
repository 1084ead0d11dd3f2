#!/usr/bin/env bash
# test_criterion_kernels.sh ATTNFUZZ — the fp16/bf16 comparison criterion (harness/judge/verdict.h)
# against kernels of known quality, through the plugin ABI:
#
#   flash_ref (harness/plugins/flash_ref: a correct flash-style kernel, rounding
#   differently from the cpu reference everywhere the ABI allows) must pass
#     - $ATTNFUZZ_TEST_CRITERION_CASES (CI 64, the nightly 320) seeded backward cases
#       (ci/tests/criterion_cases.py: fp16 and bf16, GQA, masks, windows, head dims
#       8..128, normal:1/4/16 and outlier data, 1/16 with 257-700 keys),
#     - the dQ false alarm of the per-tensor rule (h4/1 s14x5 d24/104 causal normal:16),
#     - every fp16/bf16 case of corpora/seed and corpora/seed-recent;
#   each flash_bug:<bug> (the perturbations the per-tensor rule passed on b1 h2 s128 d64)
#   must be a mismatch on b1 h2 s128 d64 backward, fp16 and bf16, mask none and causal,
#   two seeds each (8 cases per bug), with no other kind of verdict.
set -u
bin=${1:?usage: test_criterion_kernels.sh path/to/attnfuzz}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
kinds() { grep -o '"verdict":"[a-z_]*"' "$1" | sed 's/"verdict":"\(.*\)"/\1/' | sort | uniq -c | tr -s ' ' | tr '\n' ','; }

if ! "$bin" backends 2>/dev/null | grep -q '^flash_ref '; then
  echo "FAIL 'attnfuzz backends' does not list flash_ref (build/plugins missing?)"
  exit 1
fi

ncases=${ATTNFUZZ_TEST_CRITERION_CASES:-64}
python3 ci/tests/criterion_cases.py "$ncases" "$tmp/many"
cat > "$tmp/many/false-alarm-dq.case" <<'CASE'
dtype = fp16
batch = 1
heads_q = 4
heads_kv = 1
seqlen_q = 14
seqlen_kv = 5
head_dim_qk = 24
head_dim_v = 104
mask = causal
backward = yes
seed = 1
data = normal:16
CASE
shopt -s nullglob
good=("$tmp"/many/*.case corpora/seed/*.case corpora/seed-recent/*.case)
"$bin" run "${good[@]}" --backend flash_ref --json > "$tmp/good.json" 2> "$tmp/good.err"
rc=$?
seen=$(kinds "$tmp/good.json")
passed=$(grep -c '"verdict":"pass"' "$tmp/good.json")
bad=$(grep -vE '"verdict":"(pass|declined)"' "$tmp/good.json" | head -3 | cut -c1-300)
if { [ "$rc" != 0 ] && [ "$rc" != 3 ]; } || [ -n "$bad" ] || [ "$passed" -lt $((ncases + 10)) ]; then
  echo "FAIL flash_ref is not clean on ${#good[@]} cases: exit $rc; $seen"
  echo "$bad"
  fail=$((fail + 1))
else
  worst=$(grep -o '"ratio":[0-9.e+-]*' "$tmp/good.json" | cut -d: -f2 | sort -g | tail -1)
  echo "ok   flash_ref passes $passed of ${#good[@]} cases (the others declined: fp8); worst tensor ratio $worst"
fi

mkdir -p "$tmp/bugs"
for dt in fp16 bf16; do
  for mask in none causal; do
    for seed in 1 2; do
      printf 'dtype = %s\nheads = 2\nseqlen = 128\nhead_dim = 64\nmask = %s\nbackward = yes\nseed = %s\n' \
        "$dt" "$mask" "$seed" > "$tmp/bugs/$dt-$mask-$seed.case"
    done
  done
done
bugcases=("$tmp"/bugs/*.case)
for bug in uniform_scale row_scale last_key_dk one_element flush_small lse_rounded; do
  out="$tmp/$bug.json"
  "$bin" run "${bugcases[@]}" --backend "flash_bug:$bug" --json > "$out" 2> "$tmp/$bug.err"
  rc=$?
  caught=$(grep -c '"verdict":"mismatch"' "$out")
  if [ "$rc" != 1 ] || [ "$caught" != "${#bugcases[@]}" ]; then
    echo "FAIL flash_bug:$bug: exit $rc, mismatch on $caught of ${#bugcases[@]} cases; $(kinds "$out")"
    grep -v '"verdict":"mismatch"' "$out" | head -2 | cut -c1-300
    fail=$((fail + 1))
  else
    echo "ok   flash_bug:$bug caught as mismatch on all ${#bugcases[@]} cases (fp16 and bf16)"
  fi
done

[ "$fail" -eq 0 ] && echo "test_criterion_kernels: all passed" || echo "test_criterion_kernels: $fail failed"
exit $((fail > 0))
