#!/usr/bin/env bash
# test_features.sh ATTNFUZZ — the attention features end to end (issue 12):
#  1. the cpu reference passes every case of corpora/seed-features (softcap, sinks, bias,
#     ALiBi, log2 stats, dLSE) with the probes on;
#  2. for each planted plugin that drops one feature (planted:ignores_softcap,
#     ignores_sinks, ignores_bias, dsink_dropped: the sinks' gradient, ignores_alibi,
#     lse_base2_ignored: log2 stats, dlse_dropped; v_head_kv: V read at K's head when
#     heads_v != heads_kv) a cpu campaign of ATTNFUZZ_TEST_FEATURE_CAMPAIGN_TIME
#     seconds (default 20; ci/nightly_tests.sh runs 60) from the feature seeds finds it (exit 1, a bucket), and the
#     minimised finding still has the feature and still fails (repro exits 1).
set -u
bin=${1:?usage: test_features.sh path/to/attnfuzz}
TIME=${ATTNFUZZ_TEST_FEATURE_CAMPAIGN_TIME:-20}
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

. "$(dirname "$0")/lib_feature_campaign.sh"

feature_campaign ignores_softcap '^softcap = '
feature_campaign ignores_sinks '^softmax = (off_by_one|learnable)'
feature_campaign ignores_bias '^bias = '
feature_campaign dsink_dropped '^softmax = learnable'
feature_campaign ignores_alibi '^alibi = yes'
feature_campaign lse_base2_ignored '^stats = log2'
feature_campaign dlse_dropped '^dlse = yes'
feature_campaign v_head_kv '^heads_v = ' # not a score feature: V's own head count (cuDNN's h_v)

[ "$fail" -eq 0 ] && echo "test_features: all passed" || echo "test_features: $fail failed"
exit $((fail > 0))
