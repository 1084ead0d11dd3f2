#!/usr/bin/env bash
# test_bias_alibi.sh ATTNFUZZ — the query-broadcast bias shapes and ALiBi's conventions and
# slopes end to end:
#  1. the cpu reference and planted:none (a plugin that reads plugin ABI 7's bias_q,
#     alibi_b and alibi_signed) pass the seeds of corpora/seed-features that use them
#     (bias = 111s / bh1s, alibi = signed with per-(batch, head) slopes, alibi = abs with
#     six heads);
#  2. a cpu campaign of ATTNFUZZ_TEST_BIAS_ALIBI_CAMPAIGN_TIME seconds (default 4) on
#     planted:alibi_unsigned (signed ALiBi applied as -slope |distance|) from the signed
#     seed finds it, every minimised finding keeps alibi = signed, and repro fails.
set -u
bin=${1:?usage: test_bias_alibi.sh path/to/attnfuzz}
TIME=${ATTNFUZZ_TEST_BIAS_ALIBI_CAMPAIGN_TIME:-4}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
d=corpora/seed-features
all=("$d/fp16-bias-111s-fwd.case" "$d/bf16-bias-bh1s-padding-bwd.case" "$d/fp16-alibi-signed-batch-fwd.case"
     "$d/bf16-alibi-abs-heads6-bwd.case")
for be in cpu planted:none; do
  "$bin" run "${all[@]}" --backend "$be" --json > "$tmp/run.json" 2> "$tmp/run.err"
  rc=$?
  passes=$(grep -c '"verdict":"pass"' "$tmp/run.json")
  # planted:none serves the backward without bias / ALiBi: it declines the backward seeds
  want=${#all[@]} want_rc=0
  [ "$be" = planted:none ] && want=2 want_rc=3 # exit 3: some declined
  if [ "$rc" != "$want_rc" ] || [ "$passes" != "$want" ]; then
    echo "FAIL $be on the bias / ALiBi seeds: exit $rc, $passes passes (want $want)"
    head -3 "$tmp/run.err"; grep -v '"verdict":"pass"' "$tmp/run.json" | head -3 | cut -c1-300
    fail=$((fail + 1))
  else
    echo "ok   $be passes $passes of the ${#all[@]} bias / ALiBi seeds"
  fi
done

seeds=("$d/fp16-alibi-signed-batch-fwd.case")
. "$(dirname "$0")/lib_feature_campaign.sh"
feature_campaign alibi_unsigned '^alibi = signed'

[ "$fail" -eq 0 ] && echo "test_bias_alibi: all passed" || echo "test_bias_alibi: $fail failed"
exit $((fail > 0))
