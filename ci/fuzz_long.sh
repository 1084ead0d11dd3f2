#!/usr/bin/env bash
# ci/fuzz_long.sh [RUNS] [BUILD_DIR] — the long fuzzing of the two input decoders, run by
# hand (not CI; CI keeps the bounded runs of ci/fuzz_bounded.sh): the .case text parser
# (attnfuzz_fuzz_parser, harness/targets/fuzz_case_parser.c, with corpora/case.dict) and
# the fuzz decoder (attnfuzz_fuzz_decoder, harness/targets/fuzz_decoder.c, with
# corpora/fuzz_bytes.dict), RUNS executions each (default 10^7), under ASan + UBSan.
# BUILD_DIR (default build-asan) is configured and built with clang when a target is
# missing. Prints executions, exec/s, time and crashes per target; exit 1 on any crash
# (its artifact is printed), 2 on a build failure. Run it niced: nice -n 10 ci/fuzz_long.sh
# FUZZ_LONG_TARGETS="parser" (or "decoder") runs one of the two; FUZZ_LONG_JOBS=N splits the
# executions over N parallel processes (on a machine with N cores).
set -u
runs=${1:-10000000}
build=${2:-build-asan}
case "$runs" in '' | *[!0-9]*) echo "fuzz_long: RUNS '$runs' is not a positive integer" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.." || exit 2
if [ ! -x "$build/attnfuzz_fuzz_parser" ] || [ ! -x "$build/attnfuzz_fuzz_decoder" ]; then
  echo "fuzz_long: building the fuzz targets in $build (clang, ASan + UBSan)"
  CC=clang cmake -S . -B "$build" -DATTNFUZZ_SANITIZE=ON -DATTNFUZZ_FUZZERS=ON -DATTNFUZZ_NO_CUDA=ON > /dev/null &&
    cmake --build "$build" -j2 --target attnfuzz_fuzz_parser attnfuzz_fuzz_decoder > /dev/null ||
    { echo "fuzz_long: build failed in $build" >&2; exit 2; }
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
total_crashes=0
fuzz_one() { # fuzz_one NAME BINARY DICT SEED_DIR...
  local name=$1 bin=$2 dict=$3; shift 3
  local dir="$work/$name"
  mkdir -p "$dir/corpus"
  for s in "$@"; do cp "$s"/*.case "$dir/corpus/" 2> /dev/null; done
  local jobs=${FUZZ_LONG_JOBS:-1} j
  local per=$(((runs + jobs - 1) / jobs))
  echo "fuzz_long: $name: $runs executions with $dict ($(ls "$dir/corpus" | wc -l) seeds, $jobs process(es) of $per)"
  local t0 t1 rc=0
  t0=$(date +%s)
  # FUZZ_LONG_JOBS=N: N independent libFuzzer processes (seeds 1..N), each with its own
  # copy of the corpus; the executions are summed over their final stats
  for j in $(seq 1 "$jobs"); do
    mkdir -p "$dir/j$j"
    cp -r "$dir/corpus" "$dir/j$j/corpus"
    "$bin" "$dir/j$j/corpus" -runs="$per" -dict="$dict" -seed="$j" -timeout=30 -rss_limit_mb=2048 -max_len=4096 \
      -print_final_stats=1 -print_pcs=0 -artifact_prefix="$dir/" > "$dir/j$j/log" 2>&1 &
  done
  for j in $(seq 1 "$jobs"); do wait -n || rc=$?; done
  t1=$(date +%s)
  cat "$dir"/j*/log > "$dir/log"
  local execs rate
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | awk '{ s += $1 } END { print s + 0 }')
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | awk '{ s += $1 } END { print s + 0 }')
  local crashes
  crashes=$(ls "$dir" | grep -c -E '^(crash|timeout|oom|leak)-')
  echo "fuzz_long: $name: executions ${execs:-?}, exec/s ${rate:-?}, time $((t1 - t0)) s, crashes $crashes, exit $rc"
  if [ "$crashes" -gt 0 ] || [ "$rc" -ne 0 ]; then
    grep -E 'ERROR|ASSERTION|runtime error|SUMMARY' "$dir/log" | head -10
    for a in "$dir"/crash-* "$dir"/timeout-* "$dir"/oom-* "$dir"/leak-*; do
      [ -e "$a" ] && { echo "artifact $(basename "$a"):"; od -c "$a" | head -20; }
    done
    total_crashes=$((total_crashes + (crashes > 0 ? crashes : 1)))
  fi
}
targets=${FUZZ_LONG_TARGETS:-parser decoder}
case " $targets " in *" parser "*) fuzz_one parser "$build/attnfuzz_fuzz_parser" corpora/case.dict corpora/seed corpora/seed-recent ;; esac
case " $targets " in *" decoder "*) fuzz_one decoder "$build/attnfuzz_fuzz_decoder" corpora/fuzz_bytes.dict ;; esac
if [ "$total_crashes" -gt 0 ]; then
  echo "fuzz_long: FAILED ($total_crashes crash(es))"
  exit 1
fi
echo "fuzz_long: $targets: $runs executions each without a crash"
