#!/usr/bin/env bash
# test_dropout.sh ATTNFUZZ — dropout end to end (issue 12, item 6):
#  1. the cpu reference passes every case of corpora/seed-dropout with the probes on
#     (replay and keep rate included);
#  2. a correct cpu campaign of ATTNFUZZ_TEST_DROPOUT_CAMPAIGN_TIME seconds (default 20;
#     ci/nightly_tests.sh runs 60)
#     from the dropout seeds ends with 0 findings (exit 0);
#  3. for each planted plugin that gets dropout wrong (planted:dropout_ignored,
#     dropout_offset_ignored, dropout_no_rescale) a cpu campaign of the same length finds it
#     (exit 1, a bucket), every minimised finding still has dropout, and repro fails (exit 1);
#  4. the dropout probe's own checks fire on their bugs and only there: the replay check on
#     planted:dropout_rng_advances (a kernel that advances the Philox offset itself) on every
#     seed, the keep-rate check on planted:dropout_ignored; neither on planted:none, and the
#     keep rate not on planted:dropout_offset_ignored (a wrong mask with the right rate);
#  5. dropout_rng = kernel (below).
set -u
bin=${1:?usage: test_dropout.sh path/to/attnfuzz}
TIME=${ATTNFUZZ_TEST_DROPOUT_CAMPAIGN_TIME:-20}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shopt -s nullglob
seeds=(corpora/seed-dropout/*.case)
if [ ${#seeds[@]} -lt 5 ]; then
  echo "FAIL corpora/seed-dropout has ${#seeds[@]} cases (run from the repository root)"
  exit 1
fi

"$bin" run "${seeds[@]}" --backend cpu --json > "$tmp/cpu.json" 2> "$tmp/cpu.err"
rc=$?
passes=$(grep -c '"verdict":"pass"' "$tmp/cpu.json")
if [ "$rc" != 0 ] || [ "$passes" != ${#seeds[@]} ]; then
  echo "FAIL cpu on corpora/seed-dropout: exit $rc, $passes of ${#seeds[@]} pass"
  grep -v '"verdict":"pass"' "$tmp/cpu.json" | head -3 | cut -c1-300
  fail=$((fail + 1))
else
  echo "ok   cpu passes all ${#seeds[@]} dropout seeds"
fi

"$bin" campaign --time "$TIME" --jobs 1 --seed 13 --backend cpu --out "$tmp/cpu-campaign" "${seeds[@]}" \
  > "$tmp/cpu-campaign.log" 2>&1
rc=$?
n=$(ls "$tmp/cpu-campaign/findings" 2>/dev/null | wc -l)
execs=$(sed -n 's/^execs_done *: *//p' "$tmp/cpu-campaign/fuzzer_stats" 2>/dev/null)
if [ "$rc" != 0 ] || [ "$n" != 0 ] || ! [ "${execs:-0}" -gt 0 ]; then
  echo "FAIL cpu campaign with dropout: exit $rc, $n finding bucket(s), ${execs:-no} cases run"
  tail -3 "$tmp/cpu-campaign.log"
  for d in "$tmp"/cpu-campaign/findings/*; do grep -vE '^(#|$)' "$d/finding.case" | tr '\n' ' ' | cut -c1-300; echo; done
  fail=$((fail + 1))
else
  echo "ok   cpu campaign from the dropout seeds (${TIME} s): 0 findings in $execs cases"
fi
# the kernel-stream seed (and the fuzzer's kernel-stream draws) are counted in stats.json
kcases=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("dropout_kernel_cases", -1))' \
  "$tmp/cpu-campaign/stats.json" 2>/dev/null)
if ! [ "${kcases:-0}" -gt 0 ] 2>/dev/null; then
  echo "FAIL stats.json dropout_kernel_cases is '${kcases:-}' after a campaign from the kernel-stream seed"
  fail=$((fail + 1))
else
  echo "ok   stats.json counts $kcases kernel-stream dropout cases"
fi

. "$(dirname "$0")/lib_feature_campaign.sh"

feature_campaign dropout_ignored '^dropout = '
feature_campaign dropout_offset_ignored '^dropout = '
feature_campaign dropout_no_rescale '^dropout = '

probe_findings() { # probe_findings BACKEND CASE PATTERN: how many findings' details match
  "$bin" run "$2" --backend "$1" --json 2> /dev/null |
    python3 -c 'import json, re, sys
pat = re.compile(sys.argv[1])
print(sum(1 for l in sys.stdin for f in json.loads(l).get("findings", []) if pat.search(f.get("detail", ""))))' "$3"
}
replay_pat='^dropout replay: the same case .* run again gave other'
keep_pat='^dropout keep rate: [0-9]+ of [0-9]+ elements of P kept'
for s in "${seeds[@]}"; do
  n=$(probe_findings planted:dropout_rng_advances "$s" "$replay_pat")
  m=$(probe_findings planted:none "$s" "$replay_pat|$keep_pat")
  if [ "$n" != 1 ] || [ "$m" != 0 ]; then
    echo "FAIL dropout probe on $s: replay findings $n on planted:dropout_rng_advances (want 1), $m on planted:none (want 0)"
    fail=$((fail + 1))
  else
    echo "ok   dropout replay check: fires on planted:dropout_rng_advances, not on planted:none ($(basename "$s"))"
  fi
done
half=corpora/seed-dropout/fp16-p050-causal-gqa.case
n=$(probe_findings planted:dropout_ignored "$half" "$keep_pat")
m=$(probe_findings planted:dropout_offset_ignored "$half" "$keep_pat")
if [ "$n" != 1 ] || [ "$m" != 0 ]; then
  echo "FAIL dropout keep rate: $n findings on planted:dropout_ignored (want 1), $m on planted:dropout_offset_ignored (want 0)"
  fail=$((fail + 1))
else
  echo "ok   dropout keep-rate check: fires on planted:dropout_ignored, not on planted:dropout_offset_ignored"
fi

# 5. dropout_rng = kernel (the kernel's own stream, judged given the mask it returns): the cpu
#    backend (its own Philox key) passes with its mask returned and judged; planted plugins
#    (another key of their own) pass too, but not one that skips the 1/(1-p) rescale or
#    returns an all-kept mask; planted:dropout_mask_lies (returns attnfuzz's stream, applies
#    its own) is found by a 3 s campaign and stays a kernel-stream case when minimised.
kernel=corpora/seed-dropout/fp16-p050-kernel-stream.case
verdict_of() { # verdict_of BACKEND CASE: "VERDICT MASK KIND,KIND,..." of the one case
  "$bin" run "$2" --backend "$1" --json 2> /dev/null |
    python3 -c 'import json, sys
d = json.loads(sys.stdin.readline())
print(d["verdict"], d.get("judge", {}).get("dropout_mask", "-").replace(" ", "_"),
      ",".join(sorted({f["kind"] for f in d.get("findings", [])})) or "-")'
}
for want in "cpu:pass returned -" "planted:none:pass returned -" "planted:dropout_no_rescale:mismatch returned mismatch" \
  "planted:dropout_ignored:feature_ignored returned feature_ignored,mismatch"; do
  be=${want%:*} expect=${want##*:}
  got=$(verdict_of "$be" "$kernel")
  if [ "$got" != "$expect" ]; then
    echo "FAIL dropout_rng = kernel on $be: got '$got', want '$expect'"
    fail=$((fail + 1))
  else
    echo "ok   dropout_rng = kernel on $be: $got"
  fi
done
TIME=3 feature_campaign dropout_mask_lies '^dropout_rng = kernel'

[ "$fail" -eq 0 ] && echo "test_dropout: all passed" || echo "test_dropout: $fail failed"
exit $((fail > 0))
