#!/usr/bin/env bash
# device_run.sh — the GPU run of attnfuzz on a machine with an NVIDIA GPU.
#
# Run from the repository root of a copy that carries a CUDA build (built elsewhere
# with the CUDA runtime linked statically):  ci/device_run.sh [BUILD_DIR]
# It checks the machine, runs the GPU tests and the GPU corpus
# (corpora/gpu/*.case, --backend cudnn --engine all --json) once per cuDNN found:
#   system   libcudnn.so.9 as the loader finds it (e.g. cuDNN 9.14 in /usr/lib)
#   venv     the torch venv's nvidia/cudnn/lib (e.g. cuDNN 9.19), chosen by LD_LIBRARY_PATH
# attnfuzz dlopens "libcudnn.so.9", so LD_LIBRARY_PATH picks the version.
# Results go to $OUT (default ./device-out): machine.txt, tests-<tag>.txt,
# corpus-<tag>.jsonl, engines-<tag>.md, summary.md (and knobs-<tag>.jsonl with KNOB_SWEEP).
# Environment:
#   JOBS=N            corpus shards run at once per cuDNN (default 4; every case set of a
#                     shard shares one process, so a sticky CUDA error stays in its shard)
#   CORPUS_TIMEOUT=S  per shard (default 1200)
#   KNOB_SWEEP=N      also run KNOB_CASES (default: 8 GPU corpus cases) with
#                     ATTNFUZZ_CUDNN_KNOB_SWEEP=N (N values of every knob), one process per case;
#                     KNOB_TAG=system|venv limits it to one cuDNN, KNOB_TIMEOUT (120) per case
#   TESTS=0           skip the GPU tests
# Exit status: 0 when every GPU test passed and no corpus run had a finding.
set -u
BUILD=${1:-${BUILD_DIR:-build}}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
ATTNFUZZ="$BUILD/attnfuzz"
status=0

{
  echo "# machine"
  date -u
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv 2>&1 || echo "nvidia-smi failed"
  echo "# libraries"
  ldconfig -p 2>/dev/null | grep -E 'libcudnn\.so|libmpfr|libgmp|libcuda\.so' || true
  echo "# ldd $ATTNFUZZ"
  ldd "$ATTNFUZZ" 2>&1
} > "$OUT/machine.txt"
if ! [ -x "$ATTNFUZZ" ]; then
  echo "device_run: $ATTNFUZZ missing: build first (cmake -S . -B $BUILD && cmake --build $BUILD)" | tee -a "$OUT/summary.md"
  exit 2
fi
if ldd "$ATTNFUZZ" | grep -q "not found"; then
  echo "device_run: $ATTNFUZZ has unresolved libraries (see machine.txt)" | tee -a "$OUT/summary.md"
  exit 2
fi

# cuDNN versions to test: tag -> LD_LIBRARY_PATH prefix ("" = the system's)
declare -a TAGS=(system)
declare -A LIBPATH=([system]="")
venv_dir=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null || true)
if [ -n "$venv_dir" ] && [ -e "$venv_dir/libcudnn.so.9" ]; then
  TAGS+=(venv)
  LIBPATH[venv]="$venv_dir"
fi

ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
echo "# attnfuzz device run $(date -u +%FT%TZ)" > "$OUT/summary.md"
head -3 "$OUT/machine.txt" | tail -1 >> "$OUT/summary.md"
for tag in "${TAGS[@]}"; do
  lp="${LIBPATH[$tag]}"
  export LD_LIBRARY_PATH="${lp}${lp:+:}${ORIG_LD_LIBRARY_PATH}"
  ver=$("$ATTNFUZZ" backends 2>&1 | grep '^cudnn' || true)
  echo "" >> "$OUT/summary.md"
  echo "## cuDNN: $tag ${lp:+($lp)}" >> "$OUT/summary.md"
  echo "    $ver" >> "$OUT/summary.md"
  # GPU tests: each prints SKIP without a GPU, so a SKIP here is a failure
  : > "$OUT/tests-$tag.txt"
  for t in "$BUILD"/test_gpu_* "$BUILD"/test_cudnn_*; do
    [ -x "$t" ] || continue
    [ "${TESTS:-1}" = 0 ] && break
    echo "### $(basename "$t")" >> "$OUT/tests-$tag.txt"
    if timeout 300 "$t" >> "$OUT/tests-$tag.txt" 2>&1 && ! tail -1 "$OUT/tests-$tag.txt" | grep -q '^SKIP'; then
      echo "- $(basename "$t"): pass" >> "$OUT/summary.md"
    else
      echo "- $(basename "$t"): FAIL (see tests-$tag.txt)" >> "$OUT/summary.md"
      status=1
    fi
  done
  # the GPU corpus, every engine, in JOBS shards at once
  start=$(date +%s)
  jobs=${JOBS:-4}
  mapfile -t cases < <(ls corpora/gpu/*.case)
  : > "$OUT/corpus-$tag.stderr"
  pids=()
  for ((j = 0; j < jobs; j++)); do
    shard=()
    for ((i = j; i < ${#cases[@]}; i += jobs)); do shard+=("${cases[$i]}"); done
    [ ${#shard[@]} -gt 0 ] || continue
    timeout "${CORPUS_TIMEOUT:-1200}" "$ATTNFUZZ" run "${shard[@]}" --backend cudnn --engine all --json \
      > "$OUT/.corpus-$tag-$j.jsonl" 2> "$OUT/.corpus-$tag-$j.stderr" &
    pids+=($!)
  done
  rc=0
  for p in "${pids[@]}"; do wait "$p"; r=$?; [ $r -gt $rc ] && rc=$r; done
  cat "$OUT"/.corpus-$tag-*.jsonl > "$OUT/corpus-$tag.jsonl"
  cat "$OUT"/.corpus-$tag-*.stderr > "$OUT/corpus-$tag.stderr"
  rm -f "$OUT"/.corpus-$tag-*
  echo "- corpus: worst exit $rc in $(( $(date +%s) - start )) s ($(wc -l < "$OUT/corpus-$tag.jsonl") engine runs, $jobs shards)" >> "$OUT/summary.md"
  [ $rc -eq 0 ] || [ $rc -eq 3 ] || status=1
  if [ "${KNOB_SWEEP:-0}" -gt 0 ] && [ "${KNOB_TAG:-$tag}" = "$tag" ]; then
    start=$(date +%s)
    : > "$OUT/knobs-$tag.jsonl"
    for kc in ${KNOB_CASES:-corpora/gpu/bf16-causal-b1h4s256d128-bwd.case corpora/gpu/fp16-gqa-8to2-nomask-bwd.case corpora/gpu/bf16-nomask-fwd-d128.case corpora/gpu/bf16-swa-causal-tl-64-bwd.case corpora/gpu/fp16-padding-bwd.case corpora/gpu/bf16-d256-causal-fwd.case corpora/gpu/fp16-thd-gqa-cross-bwd.case corpora/gpu/fp16-d32-bwd.case}; do
      [ -f "$kc" ] || { echo "knob sweep: $kc missing" >> "$OUT/knobs-$tag.stderr"; continue; }
      ATTNFUZZ_CUDNN_KNOB_SWEEP=$KNOB_SWEEP timeout "${KNOB_TIMEOUT:-120}" "$ATTNFUZZ" run "$kc" --backend cudnn \
        --engine all --json >> "$OUT/knobs-$tag.jsonl" 2>> "$OUT/knobs-$tag.stderr"
      r=$?
      [ $r -eq 0 ] || [ $r -eq 3 ] || echo "knob sweep: $kc exit $r" >> "$OUT/knobs-$tag.stderr"
    done
    echo "- knob sweep (ATTNFUZZ_CUDNN_KNOB_SWEEP=$KNOB_SWEEP): $(wc -l < "$OUT/knobs-$tag.jsonl") engine runs in $(( $(date +%s) - start )) s" >> "$OUT/summary.md"
    python3 ci/cudnn_engine_table.py "$tag-knobs" "$OUT/knobs-$tag.jsonl" > "$OUT/knobs-$tag.md" 2>&1
  fi
  python3 ci/cudnn_engine_table.py "$tag" "$OUT/corpus-$tag.jsonl" > "$OUT/engines-$tag.md" 2>&1 || status=1
  cat "$OUT/engines-$tag.md" >> "$OUT/summary.md"
done
echo "" >> "$OUT/summary.md"
echo "device_run: exit $status" >> "$OUT/summary.md"
cat "$OUT/summary.md"
exit $status
