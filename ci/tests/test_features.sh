#!/usr/bin/env bash
# test_features.sh ATTNFUZZ — the attention features end to end (issue 12):
#  1. the cpu reference passes every case of corpora/seed-features (softcap, sinks, bias,
#     ALiBi, log2 stats, dLSE) with the probes on;
#  2. for each planted plugin that drops one feature (planted:ignores_softcap,
#     ignores_sinks, ignores_bias, dsink_dropped: the sinks' gradient) a cpu campaign of ATTNFUZZ_TEST_FEATURE_CAMPAIGN_TIME
#     seconds (default 60) from the feature seeds finds it (exit 1, a bucket), and the
#     minimised finding still has the feature and still fails (repro exits 1).
set -u
bin=${1:?usage: test_features.sh path/to/attnfuzz}
TIME=${ATTNFUZZ_TEST_FEATURE_CAMPAIGN_TIME:-60}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shopt -s nullglob
seeds=(corpora/seed-features/*.case)
if [ ${#seeds[@]} -lt 10 ]; then
  echo "FAIL corpora/seed-features has ${#seeds[@]} cases (run from the repository root)"
  exit 1
fi

"$bin" run "${seeds[@]}" --backend cpu --json > "$tmp/cpu.json" 2> "$tmp/cpu.err"
rc=$?
kinds=$(grep -o '"verdict":"[a-z_]*"' "$tmp/cpu.json" | sort | uniq -c | tr -s ' ' | tr '\n' ',')
passes=$(grep -c '"verdict":"pass"' "$tmp/cpu.json")
if [ "$rc" != 0 ] || [ "$passes" != ${#seeds[@]} ]; then
  echo "FAIL cpu on corpora/seed-features: exit $rc, verdicts:$kinds"
  grep -v '"verdict":"pass"' "$tmp/cpu.json" | head -3 | cut -c1-300
  fail=$((fail + 1))
else
  echo "ok   cpu passes all ${#seeds[@]} feature seeds"
fi

campaign() { # campaign BUG FIELD-REGEX
  local bug=$1 field=$2 out="$tmp/$1"
  if ! "$bin" backends 2>/dev/null | grep -q "^planted:$bug "; then
    echo "FAIL planted:$bug is not on the plugin path"; fail=$((fail + 1)); return
  fi
  "$bin" campaign --time "$TIME" --jobs 1 --seed 11 --backend "planted:$bug" --out "$out" "${seeds[@]}" \
    > "$tmp/$bug.log" 2>&1
  local rc=$?
  local n
  n=$(ls "$out/findings" 2>/dev/null | wc -l)
  if [ "$rc" != 1 ] || [ "$n" -lt 1 ]; then
    echo "FAIL planted:$bug: campaign exit $rc, $n bucket(s)"; tail -3 "$tmp/$bug.log"; fail=$((fail + 1)); return
  fi
  local d kept=0
  for d in "$out"/findings/*; do
    if grep -qE "$field" "$d/finding.case"; then
      kept=$((kept + 1))
    else # say what the featureless finding is, so a failure can be read from the log
      echo "     lost the feature: $(basename "$d"): $(head -c 300 "$d/verdict.json" 2>/dev/null | tr -d '\n')"
      grep -vE '^(#|$)' "$d/finding.case" | tr '\n' ' ' | cut -c1-300; echo
    fi
  done
  if [ "$kept" != "$n" ]; then
    echo "FAIL planted:$bug: $((n - kept)) of $n minimised findings lost the feature ($field)"
    fail=$((fail + 1)); return
  fi
  local first
  first=$(ls "$out/findings" | head -n 1)
  "$bin" repro "$out/findings/$first/finding.case" > "$tmp/$bug.repro" 2>&1
  rc=$?
  if [ "$rc" != 1 ]; then
    echo "FAIL planted:$bug: repro of the minimised finding exited $rc"; head -3 "$tmp/$bug.repro"
    fail=$((fail + 1)); return
  fi
  echo "ok   planted:$bug found by a ${TIME} s campaign: $n bucket(s), each minimised with its feature, repro fails"
}

campaign ignores_softcap '^softcap = '
campaign ignores_sinks '^softmax = (off_by_one|learnable)'
campaign ignores_bias '^bias = '
campaign dsink_dropped '^softmax = learnable'

[ "$fail" -eq 0 ] && echo "test_features: all passed" || echo "test_features: $fail failed"
exit $((fail > 0))
