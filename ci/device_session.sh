#!/usr/bin/env bash
# device_session.sh BUILD STAGE... — one device call's worth of GPU work, for a build made
# elsewhere (CUDA runtime static) and carried to the GPU machine. Stages:
#   tests      every GPU test binary (skips count as failures here) on the system cuDNN
#   tiers      bench_ref_gpu (old and new kernels) and bench_oracle_gpu at TIER_S
#   bench      ci/bench_judge.sh (config mix vs a PyTorch loop, long sequences)
#   corpus     ci/device_run.sh TESTS=0: the GPU corpus on every cuDNN found
#   scaling    the cudnn campaign on GPU ${SCALE_GPU:-0} with --gpus and --workers-per-gpu
#              1, 2, 4 (SCALE_WORKERS), SCALE_S seconds each (default 120, --total-time
#              SCALE_S + 120): per run cases, cases/s, its ratio to 1 worker, exit code,
#              buckets and whether one merged report.json came out (issue 16: cases/s
#              scales with workers)
#   pytargets  the Python worker targets on the GPU (issue 13, docs/targets.md): FlexAttention
#              (engine all), JAX (xla, cudnn), the Triton MXFP8 pair; a campaign of
#              MX_ORDINARY_S (10) s on the ordinary recipe (a leak expected) and MX_OWN_S
#              (480) s on the own-block recipe (none expected); ATTNFUZZ_PYTHON picks python
#   cp         CP over cudnn with virtual ranks (issue 14): corpora/gpu-cp and corpora/seed-cp,
#              --backend cudnn, on the system cuDNN and the torch venv's (ATTNFUZZ_CP on)
#   confirm    CONFIRM_CASES (files) with CONFIRM_BACKEND (default cudnn) and CONFIRM_ARGS, twice in
#              separate processes on each cuDNN (system, venv): one line per case and run
#              (a suspected bug is written up only once it repeats in separate processes)
# Results: $OUT/<stage>.txt, and summary.txt with one line per stage.
set -u
BUILD=${1:?build dir}
shift
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
# libraries this machine may lack travel in BUILD/lib (jansson, libpng)
export LD_LIBRARY_PATH="$PWD/$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
summary="$OUT/summary.txt"
: > "$summary"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >> "$summary" 2>&1
for stage in "$@"; do
  t0=$(date +%s)
  log="$OUT/$stage.txt"
  case $stage in
    tests)
      : > "$log"
      fails=0
      for t in test_oracle_gpu test_oracle_pipeline test_gpu_ref test_gpu_gen test_cudnn_sdpa test_cudnn_fp8 \
               test_cudnn_fp8_stats test_cudnn_ahead test_cudnn_plan_disk test_compare_gpu test_campaign_gpu; do
        [ -x "$BUILD/$t" ] || { echo "### $t: missing" >> "$log"; fails=$((fails + 1)); continue; }
        echo "### $t" >> "$log"
        timeout "${TEST_TIMEOUT:-240}" "$BUILD/$t" >> "$log" 2>&1
        rc=$?
        echo "### $t: exit $rc" >> "$log"
        [ $rc -eq 0 ] || fails=$((fails + 1))
        grep "^### $t: exit\|checks passed\|FAIL\|failed" "$log" | tail -2 >> "$summary"
      done
      echo "tests: $fails failing" >> "$summary" ;;
    tiers)
      # the GPU reference's kernels old and new side by side, then the oracle tier (+ grad_abs)
      timeout 240 "$BUILD/bench_ref_gpu" --kernel both ${TIER_S:-4096 32768 131072} >> "$log" 2>&1
      for s in ${ORACLE_S-${TIER_S:-4096 32768 131072}}; do
        timeout 240 "$BUILD/bench_oracle_gpu" "$s" >> "$log" 2>&1
      done
      tail -20 "$log" >> "$summary" ;;
    bench)
      OUT="$OUT/bench" bash ci/bench_judge.sh "$BUILD" > "$log" 2>&1
      cat "$log" >> "$summary" ;;
    corpus)
      OUT="$OUT/corpus" TESTS=0 bash ci/device_run.sh "$BUILD" > "$log" 2>&1
      grep -E "^## cuDNN|corpus:|device_run: exit|\| total" "$log" >> "$summary" ;;
    scaling)
      : > "$log"
      base=""
      mkdir -p "$OUT/scaling"
      for w in ${SCALE_WORKERS:-1 2 4}; do
        dir="$OUT/scaling/w$w"
        rm -rf "$dir"
        S=${SCALE_S:-120}
        "$BUILD/attnfuzz" campaign --backend cudnn --gpus "${SCALE_GPU:-0}" --workers-per-gpu "$w" --time "$S" \
          --total-time $((S + 120)) --seed 16 --out "$dir" > "$dir.log" 2>&1
        rc=$?
        line=$(python3 - "$dir" "$w" "$rc" "$base" <<'EOF'
import json, os, sys
d, w, rc, base = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
try:
    s = json.load(open(f"{d}/stats.json"))
except (OSError, ValueError) as e:
    print(f"scaling: workers {w}: exit {rc}, no stats.json ({e})")
    sys.exit()
rate = s["cases"] / s["elapsed_s"] if s["elapsed_s"] > 0 else 0.0
ratio = f"{rate / float(base):.2f}" if base and float(base) > 0 else "1.00 (base)"
report = os.path.isfile(f"{d}/report.json")
print(f"scaling: workers {w}: {s['cases']} cases in {s['elapsed_s']:.0f} s, {rate:.2f} cases/s, x{ratio} vs 1 worker, "
      f"exit {rc}, {s['buckets']} bucket(s), gpu_cases {s.get('gpu_cases')}, report.json {'yes' if report else 'MISSING'}"
      f" [{rate:.6f}]")
EOF
)
        echo "$line" >> "$log"
        tail -3 "$dir.log" >> "$log"
        [ -z "$base" ] && base=$(echo "$line" | sed -n 's/.*\[\([0-9.]*\)\]$/\1/p')
      done
      grep "^scaling:" "$log" >> "$summary" ;;
    pytargets)
      PY=${ATTNFUZZ_PYTHON:-python3}
      export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
      pc=ci/tests/pytargets_cases
      {
        "$PY" -m attnfuzz_worker.examples.targets
        for t in "flex flex_attention all" "jax jax_dpa all"; do
          set -- $t
          echo "### worker:$1 --engine $3"
          timeout 240 "$BUILD/attnfuzz" run $pc/fp16*.case $pc/bf16*.case corpora/seed/*.case --backend "worker:$1" \
            --engine "$3" --worker-cmd "$PY -m attnfuzz_worker.examples.$2 --device cuda"
        done
        for r in ordinary own-block; do
          echo "### worker:mx-$r"
          timeout 240 "$BUILD/attnfuzz" run $pc/mxfp8*.case corpora/seed/mxfp8-causal.case --backend "worker:mx-$r" \
            --worker-cmd "$PY -m attnfuzz_worker.examples.triton_mxfp8 --device cuda --recipe $r"
        done
        mkdir -p "$OUT/pyt-seed"
        cp $pc/mxfp8-causal-s64-d16.case $pc/mxfp8-block-range-s64-d16.case corpora/seed/mxfp8-causal.case "$OUT/pyt-seed/"
        for rs in "ordinary ${MX_ORDINARY_S:-10}" "own-block ${MX_OWN_S:-480}"; do
          set -- $rs
          echo "### campaign worker:mx-$1 $2 s"
          "$BUILD/attnfuzz" campaign "$OUT/pyt-seed" --time "$2" --seed 1 --backend "worker:mx-$1" \
            --worker-cmd "$PY -m attnfuzz_worker.examples.triton_mxfp8 --device cuda --recipe $1" --out "$OUT/pyt-camp-$1"
          echo "### campaign worker:mx-$1: exit $?"
        done
      } > "$log" 2>&1
      grep -E "can start|cannot start|^### campaign|bucket|\]: (FINDING|declined)" "$log" | cut -c1-240 | head -60 >> "$summary"
      echo "pytargets: $(grep -c '\]: pass' "$log") pass, $(grep -c '\]: declined' "$log") declined, $(grep -c '\]: FINDING' "$log") findings" >> "$summary" ;;
    cp)
      : > "$log"
      venv_dir=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
      for lp in "" "$venv_dir"; do
        (
          [ -n "$lp" ] && export LD_LIBRARY_PATH="$lp:$LD_LIBRARY_PATH"
          echo "### cuDNN: $("$BUILD/attnfuzz" backends 2>&1 | grep '^cudnn' | cut -c1-120)"
          timeout 400 "$BUILD/attnfuzz" run corpora/gpu-cp/*.case corpora/seed-cp/*.case --backend cudnn
          echo "### cp run: exit $?"
        ) >> "$log" 2>&1
      done
      grep -E "^### |\]: (FINDING|declined)" "$log" | cut -c1-260 >> "$summary"
      echo "cp: $(grep -c '\]: pass' "$log") pass, $(grep -c '\]: declined' "$log") declined, $(grep -c '\]: FINDING' "$log") findings" >> "$summary" ;;
    confirm)
      : > "$log"
      venv_dir=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
      for lp in "" "$venv_dir"; do
        for rep in 1 2; do
          (
            [ -n "$lp" ] && export LD_LIBRARY_PATH="$lp:$LD_LIBRARY_PATH"
            echo "### cuDNN ${lp:-system}, process $rep"
            timeout 240 "$BUILD/attnfuzz" run $CONFIRM_CASES --backend "${CONFIRM_BACKEND:-cudnn}" ${CONFIRM_ARGS:-}
            echo "### exit $?"
          ) >> "$log" 2>&1
        done
      done
      grep -E "^### |\]: " "$log" | cut -c1-300 >> "$summary" ;;
    *) echo "unknown stage $stage" >> "$summary" ;;
  esac
  echo "== $stage: $(( $(date +%s) - t0 )) s" >> "$summary"
done
cat "$summary"
