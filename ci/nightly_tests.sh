#!/usr/bin/env bash
# ci/nightly_tests.sh [ATTNFUZZ] — the long versions of the CI tests whose campaigns or
# case counts CI runs short (ci/test.sh keeps a short one of each class): the planted
# feature and dropout campaigns, the campaign end to end, the CP plants, at their long
# lengths, the fp16/bf16 and fp8 criterion tests on 320 / 300 seeded cases, and
# the bounded libFuzzer runs for 10 minutes when attnfuzz_fuzz* are built beside ATTNFUZZ.
# Run by ci/nightly.sh (NIGHTLY_TESTS=0 skips it). Lengths (seconds, each campaign):
#   $NIGHTLY_TEST_CAMPAIGN_TIME (default 60), $NIGHTLY_TEST_FUZZ_TIME (default 600).
# Exit: 0 when every test passed, else the number of failed tests (at most 100).
set -u
bin=${1:-build/attnfuzz}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
cd "$(dirname "$0")/.."

t=${NIGHTLY_TEST_CAMPAIGN_TIME:-60}
fuzz=${NIGHTLY_TEST_FUZZ_TIME:-600}
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
long() { # long NAME ENV=VALUE...: one test script with its campaign length raised
  local name=$1; shift
  echo "nightly test $name ($*)"
  if ! env "$@" bash "ci/tests/$name.sh" "$bin" >"$tmp/$name.log" 2>&1; then
    echo "nightly test $name FAILED:"; tail -n 20 "$tmp/$name.log"; failed=$((failed + 1))
  fi
}
long test_features ATTNFUZZ_TEST_FEATURE_CAMPAIGN_TIME="$t" ATTNFUZZ_TEST_FEATURE_STOP_AFTER=0
long test_dropout ATTNFUZZ_TEST_DROPOUT_CAMPAIGN_TIME="$t" ATTNFUZZ_TEST_FEATURE_STOP_AFTER=0
long test_campaign ATTNFUZZ_TEST_CAMPAIGN_TIME="$t"
long test_cp_campaign ATTNFUZZ_TEST_CP_CAMPAIGN_TIME="$t"
long test_criterion_kernels ATTNFUZZ_TEST_CRITERION_CASES=320
long test_criterion_fp8 ATTNFUZZ_TEST_CRITERION_CASES=300
dir=$(dirname "$bin")
for f in "$dir/attnfuzz_fuzz_parser" "$dir/attnfuzz_fuzz"; do
  [ -x "$f" ] || continue
  echo "nightly fuzz $(basename "$f") for $fuzz s"
  if ! bash ci/fuzz_bounded.sh "$f" "$fuzz" >"$tmp/fuzz.log" 2>&1; then
    echo "nightly fuzz $(basename "$f") FAILED:"; tail -n 20 "$tmp/fuzz.log"; failed=$((failed + 1))
  fi
done
echo "nightly tests: $failed failed"
exit $((failed > 100 ? 100 : failed))
