#!/bin/bash
# test_outputs.sh BIN — the score statistics outputs (outputs = max_sumexp | max_logit):
# both seeds pass on the cpu backend and on planted:none; planted:max_logit_masked (the
# max taken over masked keys too) is caught on each seed and found by a short campaign
# whose minimised findings keep `outputs`; the worker declines the field.
bin=$1
TIME=${AF_OUTPUTS_CAMPAIGN_SECONDS:-8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for seed in corpora/seed/outputs-max-logit-bf16.case corpora/seed/outputs-max-sumexp-fp16.case; do
  for be in cpu planted:none; do
    if ! "$bin" run "$seed" --backend "$be" > "$tmp/run.out" 2>&1; then
      echo "FAIL $seed on $be does not pass:"; tail -3 "$tmp/run.out"; fail=1
    else echo "ok   $seed passes on $be"; fi
  done
  "$bin" run "$seed" --backend planted:max_logit_masked > "$tmp/bug.out" 2>&1
  rc=$?
  if [ "$rc" != 1 ] || ! grep -qE "mismatch (max|max_logit) " "$tmp/bug.out"; then
    echo "FAIL planted:max_logit_masked on $seed: exit $rc"; tail -3 "$tmp/bug.out"; fail=1
  else echo "ok   planted:max_logit_masked caught on $seed: $(grep -oE 'mismatch (max|max_logit) [^(]*' "$tmp/bug.out" | head -1)"; fi
done
out="$tmp/camp"
"$bin" campaign --time "$TIME" --stop-after-buckets 1 --jobs 1 --seed 11 --backend planted:max_logit_masked \
  --out "$out" \
  corpora/seed/outputs-max-logit-bf16.case > "$tmp/camp.log" 2>&1
rc=$?
n=$(ls "$out/findings" 2>/dev/null | wc -l)
kept=$(grep -lE "^outputs = max_" "$out"/findings/*/finding.case 2>/dev/null | wc -l)
if [ "$rc" != 1 ] || [ "$n" -lt 1 ] || [ "$kept" != "$n" ]; then
  echo "FAIL campaign on planted:max_logit_masked: exit $rc, $n bucket(s), $kept keep outputs"
  tail -3 "$tmp/camp.log"; fail=1
else echo "ok   a ${TIME} s campaign finds planted:max_logit_masked: $n bucket(s), each minimised keeping outputs"; fi
exit $fail
