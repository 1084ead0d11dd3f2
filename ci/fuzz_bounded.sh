#!/usr/bin/env bash
# ci/fuzz_bounded.sh FUZZER SECONDS — run a libFuzzer target for a bounded time from the
# seed corpus (encoded by the campaign's encoder for the case target; the .case texts
# themselves for the parser target), in a scratch folder. Fails on a crash, a sanitizer
# report or a timeout: libFuzzer exits non-zero and leaves an artifact, which is printed.
set -u
fuzzer=${1:?usage: fuzz_bounded.sh FUZZER SECONDS}
secs=${2:-60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/out"
case "$(basename "$fuzzer")" in
  *parser*) cp corpora/seed/*.case "$work/corpus/" ;;
  *) : ;; # the case target starts from the empty input (the default case) and grows
esac
ATTNFUZZ_OUT="$work/out" ATTNFUZZ_BACKEND=cpu "$fuzzer" "$work/corpus" -max_total_time="$secs" -timeout=60 \
  -rss_limit_mb=4096 -seed=1 -print_final_stats=1 -artifact_prefix="$work/" > "$work/log" 2>&1
rc=$?
tail -n 15 "$work/log"
if [ $rc -ne 0 ]; then
  for a in "$work"/crash-* "$work"/timeout-* "$work"/oom-* "$work"/leak-*; do
    [ -e "$a" ] && { echo "artifact $a:"; od -c "$a" | head -20; }
  done
  echo "fuzz_bounded: $(basename "$fuzzer") failed (exit $rc)"
  exit 1
fi
n=$(ls "$work/out/findings" 2>/dev/null | wc -l)
echo "fuzz_bounded: $(basename "$fuzzer") ran ${secs}s without a crash (findings stored: $n)"
