# lib_feature_campaign.sh — sourced by test_features.sh and test_dropout.sh (not a test).
# feature_campaign BUG FIELD-REGEX: a cpu campaign of $TIME seconds on planted:BUG from
# the seeds in ${seeds[@]} must find it (exit 1, a bucket); every minimised finding must
# still match FIELD-REGEX (the feature survived minimisation) and the first must still fail
# (repro exits 1). Uses $bin, $TIME, $tmp and ${seeds[@]}; adds failures to $fail.
feature_campaign() {
  local bug=$1 field=$2 out="$tmp/$1"
  # the campaign ends at its first bucket (ATTNFUZZ_TEST_FEATURE_STOP_AFTER, default 1; 0: its
  # whole $TIME, as ci/nightly_tests.sh runs it, every bucket then checked)
  local stop=${ATTNFUZZ_TEST_FEATURE_STOP_AFTER:-1} stop_opt=()
  [ "$stop" != 0 ] && stop_opt=(--stop-after-buckets "$stop")
  if ! "$bin" backends 2>/dev/null | grep -q "^planted:$bug "; then
    echo "FAIL planted:$bug is not on the plugin path"; fail=$((fail + 1)); return
  fi
  "$bin" campaign --time "$TIME" "${stop_opt[@]}" --jobs 1 --seed 11 --backend "planted:$bug" --out "$out" "${seeds[@]}" \
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
  echo "ok   planted:$bug found within a ${TIME} s campaign: $n bucket(s), each minimised with its feature" \
    "($(grep -hE "$field" "$out"/findings/*/finding.case | sort -u | tr '\n' ';')), repro fails"
}
