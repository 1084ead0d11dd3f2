#!/usr/bin/env bash
# device_asan.sh — the host code under ASan + UBSan on a GPU machine (CUDA kept: the
# ATTNFUZZ_SANITIZE_GPU build), for heap bugs on paths that only run with a GPU present.
#
# Here (no GPU needed), before the device call:
#   bash ci/build.sh build-asan-gpu -DATTNFUZZ_SANITIZE_GPU=ON     # or only the binaries below:
#     cmake -S . -B build-asan-gpu -DATTNFUZZ_SANITIZE_GPU=ON && cmake --build build-asan-gpu -j2 --target \
#       attnfuzz test_oracle_pipeline_sinks test_oracle_gpu test_gpu_ref test_gpu_gen test_cudnn_sdpa \
#       test_cudnn_fp8 test_cudnn_fp8_stats test_compare_gpu test_campaign_gpu test_criterion_gpu test_runner_pipeline
#   bash ci/device_asan.sh --pack build-asan-gpu build-asan-dev  # one .tgz with debug info, < 30 MiB
# On the GPU machine, from the repository root, $OUT set, carry ["build-asan-dev"]:
#   bash ci/device_asan.sh build-asan-dev        (a full ASan GPU build directory works too)
#   bash ci/device_asan.sh --build               (builds build-asan-gpu there first: slower)
#
# Steps, each with its own limit inside one budget (ASAN_BUDGET_S, default 450 s; a step
# that no longer fits is reported as skipped):
#   pipeline-sinks  test_oracle_pipeline_sinks (the background certification with sinks)
#   cudnn           the learnable-sinks regression cases (corpora/regression/cudnn-sink-*),
#                   --backend cudnn, isolated children, probes on
#   cpu             the same cases, --backend cpu --no-probes
#   gpu tests       the GPU unit tests of ci/device_session.sh's tests stage
#   cudnn-inproc    the first sinks case in-process with cudnn (an ASan report ends attnfuzz)
#   cs-case, cs-oracle, cs-terms  compute-sanitizer memcheck on one small cudnn case, test_oracle_gpu
#                   and test_criterion_gpu (the judge's GPU pass)
# ASAN_OPTIONS=detect_leaks=0 (the CUDA runtime's allocations at exit are not ours),
# abort_on_error=1, protect_shadow_gap=0 (the CUDA driver maps memory in ASan's shadow gap),
# every report also written to r/asan.PID. Results in $OUT/all.tgz (r/), the summary table
# last on stdout and in $OUT/summary.txt.
set -u
if [ "${1:-}" = "--pack" ]; then
  SRC=${2:?build dir}
  DEST=${3:?destination dir}
  bins="attnfuzz test_oracle_pipeline_sinks test_oracle_gpu test_gpu_ref test_gpu_gen test_cudnn_sdpa test_cudnn_fp8
        test_cudnn_fp8_stats test_compare_gpu test_campaign_gpu test_criterion_gpu test_runner_pipeline"
  for b in $bins; do [ -x "$SRC/$b" ] || { echo "device_asan: $SRC/$b not built" >&2; exit 2; }; done
  grep -q "ATTNFUZZ_SANITIZE_GPU:BOOL=ON" "$SRC/CMakeCache.txt" ||
    { echo "device_asan: $SRC is not an ATTNFUZZ_SANITIZE_GPU build" >&2; exit 2; }
  rm -rf "$DEST"
  stage=$(mktemp -d)
  mkdir -p "$stage/lib" "$DEST"
  for b in $bins; do cp "$SRC/$b" "$stage/"; done
  # the sanitizer runtimes of this compiler, and what the GPU machine lacks (ci/make_devbuild.sh)
  for lib in libasan.so.8 libubsan.so.1 libjansson.so.4 libpng16.so.16; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')" "$stage/lib/" ||
      { echo "device_asan: $lib not found" >&2; exit 2; }
  done
  tar czf "$DEST/asan-gpu.tgz" -C "$stage" .
  rm -rf "$stage"
  du -sh "$DEST"
  exit 0
fi

START=$(date +%s)
BUDGET=${ASAN_BUDGET_S:-450}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
build_log=""
if [ "${1:-}" = "--build" ]; then
  B=build-asan-gpu
  build_log=$(mktemp)
  { cmake -S . -B "$B" -DATTNFUZZ_SANITIZE_GPU=ON && cmake --build "$B" -j"$(nproc)" --target attnfuzz \
      test_oracle_pipeline_sinks test_oracle_gpu test_gpu_ref test_gpu_gen test_cudnn_sdpa test_cudnn_fp8 \
      test_cudnn_fp8_stats test_compare_gpu test_campaign_gpu test_criterion_gpu test_runner_pipeline; } > "$build_log" 2>&1
  build_rc=$?
else
  B=${1:?usage: device_asan.sh BUILD | --build | --pack SRC DEST}
  if [ -f "$B/asan-gpu.tgz" ]; then tar xzf "$B/asan-gpu.tgz" -C "$B" || exit 6; fi
fi
source ci/device_preamble.sh # R, S, LD_LIBRARY_PATH with $B/lib, stamp, device_pack
[ -n "$build_log" ] && { cp "$build_log" "$R/build.txt"; rm -f "$build_log"; echo "build: exit $build_rc" >> "$S"; }
ASAN_BASE=detect_leaks=0:abort_on_error=1:protect_shadow_gap=0:alloc_dealloc_mismatch=0
UBSAN_BASE=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS="$ASAN_BASE:log_path=$R/asan" UBSAN_OPTIONS="$UBSAN_BASE:log_path=$R/ubsan"
TABLE=$R/table.txt
printf "%-20s %-10s %6s  %s\n" step result seconds note > "$TABLE"
ROWS=$TABLE   # where row() writes (the background step has its own file)
LOGP=$R/asan  # the ASan / UBSan report files reports() counts: $LOGP.* and ${LOGP/asan/ubsan}.*
row() { printf "%-20s %-10s %6s  %s\n" "$1" "$2" "$3" "$4" >> "$ROWS"; }
left() { echo $((BUDGET - ($(date +%s) - START))); }
reports() { cat "$LOGP".* "${LOGP/asan/ubsan}".* 2> /dev/null | grep -c "ERROR: AddressSanitizer\|runtime error:"; }

# step NAME LIMIT_S KIND LOG CMD...: run CMD under min(LIMIT_S, what is left of the budget)
# and add a row: ok (exit 0, no new sanitizer report), "exit RC", timeout, "N reports" (new
# ASan / UBSan reports), or skipped; the note by KIND from the log: verdicts (attnfuzz run's
# lines), checks (a test's count), cs (compute-sanitizer's error summary), or text after "="
step() {
  local name=$1 limit=$2 kind=$3 log=$4 t0 rc before after l result note
  shift 4
  l=$(left)
  [ "$l" -lt "$limit" ] && limit=$l
  if [ "$limit" -lt 20 ]; then
    row "$name" skipped 0 "no time left in the ${BUDGET} s budget"
    return
  fi
  before=$(reports)
  t0=$(date +%s)
  timeout "$limit" "$@" > "$log" 2>&1
  rc=$?
  after=$(reports)
  result=ok
  [ $rc -ne 0 ] && result="exit $rc"
  [ $rc -eq 124 ] && result=timeout
  [ "$after" -gt "$before" ] && result="$((after - before)) reports"
  case $kind in
    verdicts) note="$(grep -c '\]: pass' "$log") pass, $(grep -c '\]: FINDING' "$log") findings, $(grep -c '\]: declined' "$log") declined" ;;
    checks) note=$(grep -o '[0-9]* checks passed\|CHECK failed.*' "$log" | tail -1 | cut -c1-120) ;;
    cs) note=$(grep -o 'ERROR SUMMARY: [0-9]* errors*' "$log" | tail -1) ;;
    =*) note=${kind#=} ;;
  esac
  row "$name" "$result" $(($(date +%s) - t0)) "$note"
}

[ -x "$B/attnfuzz" ] || { echo "device_asan: $B/attnfuzz missing" | tee -a "$S"; cat "$S"; exit 2; }
CASES=(corpora/regression/cudnn-sink-*.case)

step pipeline-sinks 60 checks "$R/pipeline-sinks.txt" "$B/test_oracle_pipeline_sinks"
# the cpu backend's runs (CPU only, the oracle on every core) beside the GPU steps, with their
# own report files and rows
(
  ROWS=$R/table-cpu.txt LOGP=$R/asan-cpu
  # shellcheck disable=SC2030  # this subshell's own report files
  export ASAN_OPTIONS="$ASAN_BASE:log_path=$R/asan-cpu" UBSAN_OPTIONS="$UBSAN_BASE:log_path=$R/ubsan-cpu"
  step cpu 300 verdicts "$R/cpu.txt" nice -n 10 "$B/attnfuzz" run "${CASES[@]}" --backend cpu --no-probes --deadline 300
) &
cpu_pid=$!
step cudnn 240 verdicts "$R/cudnn.txt" "$B/attnfuzz" run "${CASES[@]}" --backend cudnn --deadline 240
for t in test_criterion_gpu test_runner_pipeline test_gpu_gen test_oracle_gpu test_gpu_ref test_cudnn_sdpa \
         test_cudnn_fp8_stats test_compare_gpu test_cudnn_fp8 test_campaign_gpu; do
  [ -x "$B/$t" ] || { row "$t" missing 0 ""; continue; }
  if [ $t = test_campaign_gpu ]; then # its fake backend raises SIGSEGV and aborts on purpose in children
    ASAN_OPTIONS="$ASAN_BASE:log_path=$R/asan:handle_segv=0:handle_abort=0" step "$t" 120 checks "$R/$t.txt" "$B/$t"
  else
    step "$t" 120 checks "$R/$t.txt" "$B/$t"
  fi
done
wait "$cpu_pid"
cat "$R/table-cpu.txt" >> "$TABLE" 2> /dev/null || row cpu lost 0 "the background step wrote no row"
step cudnn-inproc 150 verdicts "$R/cudnn-inproc.txt" "$B/attnfuzz" run "${CASES[0]}" --backend cudnn --in-process

CS=$(command -v compute-sanitizer)
[ -z "$CS" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && CS=/usr/local/cuda/bin/compute-sanitizer
if [ -n "$CS" ]; then
  # compute-sanitizer's injection library is loaded by the driver, not before libasan
  # shellcheck disable=SC2031
  export ASAN_OPTIONS="$ASAN_BASE:log_path=$R/asan:verify_asan_link_order=0"
  step cs-case 120 cs "$R/cs-case.txt" "$CS" --tool memcheck --error-exitcode 9 "$B/attnfuzz" run \
    corpora/gpu/feat-sink-learnable-fp16-bwd.case --backend cudnn --in-process --no-probes
  step cs-oracle 150 cs "$R/cs-oracle.txt" "$CS" --tool memcheck --error-exitcode 9 "$B/test_oracle_gpu"
  step cs-terms 120 cs "$R/cs-terms.txt" "$CS" --tool memcheck --error-exitcode 9 "$B/test_criterion_gpu"
else
  row compute-sanitizer missing 0 "not found on PATH or in /usr/local/cuda/bin"
fi

n=$(cat "$R"/asan* "$R"/ubsan* 2> /dev/null | grep -c "ERROR: AddressSanitizer\|runtime error:")
{
  echo "sanitizer reports: $n (r/asan.*, r/ubsan.*); total $(($(date +%s) - START)) s of a ${BUDGET} s budget"
  for f in "$R"/asan* "$R"/ubsan*; do
    [ -f "$f" ] && grep -m3 "ERROR: AddressSanitizer\|runtime error:\|^    #[0-3] " "$f" | cut -c1-200
  done
  cat "$TABLE"
} >> "$S"
cp "$S" "$OUT/summary.txt"
device_pack
cat "$OUT/summary.txt"
