#!/usr/bin/env bash
# device_long.sh — the GPU machine's ten-minute runs, started in the background so that
# they outlive one device call (at most 600 s a call), then collected by the next call.
#
#   ci/device_long.sh start BUILD BG      copy BUILD to BG/build, start every run (setsid)
#   ci/device_long.sh collect BG OUT [W]  wait up to W s (default 300) for them, then write
#                                         OUT/long.txt (one block per run) and OUT/long.tgz
# Runs (LONG_S seconds of fuzzing each, default 600; LONG_TOTAL_S hard limit, default
# LONG_S + 240):
#   libgate        attnfuzz gate --base-lib <system libcudnn.so.9> --head-lib <torch venv's>
#                  --backend cudnn (issue 15: cuDNN 9.14 against 9.19)
#   torch-sdpa     campaign --backend worker:torch-sdpa --engine all on corpora/gpu (issue 13)
#   flex           campaign --backend worker:flex --engine all on corpora/gpu
#   jax            campaign --backend worker:jax --engine all on corpora/gpu
#   mx-ordinary    campaign --backend worker:mx-ordinary on the MXFP8 seeds (leaks expected)
#   mx-own-block   campaign --backend worker:mx-own-block on the MXFP8 seeds (no leak expected)
#   corpus-X       attnfuzz run corpora/gpu/*.case --backend worker:X --engine all (X: torch-sdpa,
#                  flex, jax): the GPU corpus where each target serves it
# LONG_RUNS="NAME ..." starts only those (default: all). They share the one GPU (JAX's preallocation is off), so their rates are not benchmarks.
set -u
cmd=${1:?start|collect}
case $cmd in
start)
  BUILD=${2:?build} BG=${3:?dir}
  rm -rf "$BG"; mkdir -p "$BG"
  cp -a "$BUILD" "$BG/build"
  B="$BG/build"
  export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export XLA_PYTHON_CLIENT_PREALLOCATE=false
  export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
  PY=${ATTNFUZZ_PYTHON:-python3}
  S=${LONG_S:-600}
  T=${LONG_TOTAL_S:-$((S + 240))}
  sys_lib=$(ldconfig -p | awk '/libcudnn\.so\.9 /{print $NF; exit}')
  venv_dir=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
  pc=ci/tests/pytargets_cases
  mkdir -p "$BG/mx-seed"
  cp $pc/mxfp8-*.case corpora/seed/mxfp8-causal.case "$BG/mx-seed/" 2>/dev/null
  RUNS=" ${LONG_RUNS:-libgate torch-sdpa flex jax mx-ordinary mx-own-block corpus-torch-sdpa corpus-flex corpus-jax} "
  launch() { # NAME COMMAND... (only the runs named in LONG_RUNS)
    local name=$1; shift
    case $RUNS in *" $name "*) ;; *) return ;; esac
    setsid bash -c '"$@" > "'"$BG/$name"'.log" 2>&1; echo $? > "'"$BG/$name"'.rc"' _ "$@" < /dev/null &
    echo "started $name: $*" >> "$BG/started.txt"
  }
  launch libgate timeout $((T + 120)) "$B/attnfuzz" gate --base-lib "$sys_lib" --head-lib "$venv_dir/libcudnn.so.9" \
    --backend cudnn --time "$S" --seed 15 --out "$BG/libgate"
  launch torch-sdpa timeout $((T + 60)) "$B/attnfuzz" campaign corpora/gpu --backend worker:torch-sdpa --engine all \
    --time "$S" --total-time "$T" --seed 13 --out "$BG/camp-torch-sdpa" \
    --worker-cmd "$PY -m attnfuzz_worker.examples.torch_sdpa"
  launch flex timeout $((T + 60)) "$B/attnfuzz" campaign corpora/gpu --backend worker:flex --engine all \
    --time "$S" --total-time "$T" --seed 13 --out "$BG/camp-flex" \
    --worker-cmd "$PY -m attnfuzz_worker.examples.flex_attention --device cuda"
  launch jax timeout $((T + 60)) "$B/attnfuzz" campaign corpora/gpu --backend worker:jax --engine all \
    --time "$S" --total-time "$T" --seed 13 --out "$BG/camp-jax" \
    --worker-cmd "$PY -m attnfuzz_worker.examples.jax_dpa --device cuda"
  launch mx-ordinary timeout $((T + 60)) "$B/attnfuzz" campaign "$BG/mx-seed" --backend worker:mx-ordinary \
    --time "$S" --total-time "$T" --seed 1 --out "$BG/camp-mx-ordinary" \
    --worker-cmd "$PY -m attnfuzz_worker.examples.triton_mxfp8 --device cuda --recipe ordinary"
  launch mx-own-block timeout $((T + 60)) "$B/attnfuzz" campaign "$BG/mx-seed" --backend worker:mx-own-block \
    --time "$S" --total-time "$T" --seed 1 --out "$BG/camp-mx-own-block" \
    --worker-cmd "$PY -m attnfuzz_worker.examples.triton_mxfp8 --device cuda --recipe own-block"
  # the GPU corpus through each Python target, every engine (declines name the reason)
  launch corpus-torch-sdpa timeout 900 "$B/attnfuzz" run corpora/gpu/*.case --backend worker:torch-sdpa --engine all \
    --worker-cmd "$PY -m attnfuzz_worker.examples.torch_sdpa"
  launch corpus-flex timeout 900 "$B/attnfuzz" run corpora/gpu/*.case --backend worker:flex --engine all \
    --worker-cmd "$PY -m attnfuzz_worker.examples.flex_attention --device cuda"
  launch corpus-jax timeout 900 "$B/attnfuzz" run corpora/gpu/*.case --backend worker:jax --engine all \
    --worker-cmd "$PY -m attnfuzz_worker.examples.jax_dpa --device cuda"
  cat "$BG/started.txt" ;;
collect)
  BG=${2:?dir} OUT=${3:?out} W=${4:-300}
  mkdir -p "$OUT"
  t0=$(date +%s)
  names=$(sed -n 's/^started \([^:]*\):.*/\1/p' "$BG/started.txt" | tr '\n' ' ')
  for n in $names; do
    while [ ! -e "$BG/$n.rc" ] && [ $(( $(date +%s) - t0 )) -lt "$W" ]; do sleep 5; done
  done
  {
    for n in $names; do
      case $n in corpus-*) continue ;; esac
      echo "=== $n: exit $(cat "$BG/$n.rc" 2>/dev/null || echo 'still running')"
      tail -15 "$BG/$n.log" 2>/dev/null | cut -c1-300
      d="$BG/camp-$n"; [ "$n" = libgate ] && d="$BG/libgate"
      [ -f "$d/stats.json" ] && python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("stats:", {k: s.get(k) for k in ("cases","elapsed_s","buckets","findings","declined","crashes")})' "$d/stats.json"
      ls "$d/findings" 2>/dev/null | head -20 | sed 's/^/finding: /'
    done
    for n in $names; do
      case $n in corpus-*) ;; *) continue ;; esac
      echo "=== $n: exit $(cat "$BG/$n.rc" 2>/dev/null || echo 'still running'): $(grep -c '\]: pass' "$BG/$n.log") pass," \
        "$(grep -c '\]: declined' "$BG/$n.log") declined, $(grep -c '\]: FINDING' "$BG/$n.log") findings"
      grep -E '\]: (FINDING|error|crash|hang)' "$BG/$n.log" | cut -c1-260 | head -20
      grep -E '\]: declined' "$BG/$n.log" | sed 's/.*declined/declined/' | cut -c1-160 | sort | uniq -c | sort -rn | head -8
    done
  } > "$OUT/long.txt" 2>&1
  tar -C "$BG" --exclude=build --exclude='*/corpus' -czf "$OUT/long.tgz" . 2>/dev/null
  cat "$OUT/long.txt" ;;
*) echo "device_long.sh: unknown command $cmd (start|collect)"; exit 2 ;;
esac
