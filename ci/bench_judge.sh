#!/usr/bin/env bash
# bench_judge.sh BUILD_DIR — the judge benchmark of docs/benchmarks.md, on a GPU machine
# with torch (one device call). Prints figures and ratios side by side with the anchor:
#  (a) cases/s of attnfuzz (cudnn, default engine, probes on, every element judged) and
#      of a plain PyTorch loop (ci/bench/torch_loop.py) over the same N generated configs
#      (ci/bench/gen_mix.py), each given at most MIX_TIME seconds;
#  (b) attnfuzz judge time and peak GPU memory of b1 h16 d128 causal forward + backward at
#      LONG_S (default 4096 16384 32768 131072; LONG_S="" runs none), next to torch's float64 reference;
#  (c) MPFR coverage per case (rows and key columns certified) from the JSON verdicts.
# Environment: N (300), MIX_TIME (120; 0 = skip (a) and (c)), TORCH_RUNS (2: the torch loop's
#   processes, each with its ratios), LONG_S, LONG_TIME (per length, 300),
#   OUT (./bench-out), LONG_FLAGS (extra `run` options for the long cases, e.g. --no-probes),
#   MIX_NO_REUSE=1 (the mix once more with ATTNFUZZ_CUDNN_PLAN_REUSE=0; ci/bench/plan_summary.py
#   sums both runs' plans)
# The long cases alone (judge seconds per stage at 32k and 128k):
#   MIX_TIME=0 LONG_S="32768 131072" LONG_FLAGS=--no-probes ci/bench_judge.sh BUILD_DIR
#   MIX_JOBS (space-separated; default 8 when nvidia-smi sees a GPU, else none): the mix once
#   more per value J through `run --jobs J` (J persistent workers, campaign/worker_pool.h),
#   printed with its ratio to the 1-job figure and to the torch loop. A run stopped by MIX_TIME
#   loses the cases finished but not yet printed (lines come out in case order: < J cases).
#   PLANS_WARM=1: every attnfuzz run keeps its cuDNN plans in OUT/plans (ATTNFUZZ_CUDNN_PLAN_DIR,
#   docs/cudnn.md), filled first by an untimed run of the mix (MIX_TIME seconds): the figures of
#   a nightly run that meets the plans of the night before (the torch loop's second process meets
#   torch's caches warm the same way)
set -u
BUILD=${1:-build}
OUT=${OUT:-$PWD/bench-out}
N=${N:-300}
MIX_TIME=${MIX_TIME:-120}
LONG_S=${LONG_S-"4096 16384 32768 131072"} # set and empty: no long cases
LONG_TIME=${LONG_TIME:-300}
AF="$BUILD/attnfuzz"
if [ -z "${MIX_JOBS+x}" ]; then
  MIX_JOBS=""
  nvidia-smi -L > /dev/null 2>&1 && MIX_JOBS=8
fi
mkdir -p "$OUT"
mix="$OUT/mix"
[ "$MIX_TIME" != 0 ] && python3 ci/bench/gen_mix.py "$N" "$mix" 2026

# peak GPU memory of a command: poll nvidia-smi every 100 ms while it runs. nvidia-smi
# counts the whole GPU, so the memory in use just before (other processes, e.g. an earlier
# step's workers still finishing) is said beside the peak, and the difference is the command's
peak_mem() { # LOGFILE CMD...
  local log=$1; shift
  local before
  before=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$log.mem" 2>/dev/null &
  local mon=$!
  "$@"
  local rc=$?
  kill "$mon" 2>/dev/null; wait "$mon" 2>/dev/null
  local peak
  peak=$(sort -n "$log.mem" | tail -1)
  echo "${peak:-?} MiB (${before:-?} MiB in use before: $(( ${peak:-0} - ${before:-0} )) MiB its own)" > "$log.peak"
  return $rc
}

if [ "$MIX_TIME" != 0 ]; then
echo "== (a) config mix: $N cases (gen_mix.py seed 2026), at most ${MIX_TIME}s each side"
if [ "${PLANS_WARM:-0}" = 1 ]; then
  export ATTNFUZZ_CUDNN_PLAN_DIR="$OUT/plans"
  timeout "$MIX_TIME" "$AF" run "$mix"/case-*.case --backend cudnn --json > "$OUT/mix-fill.jsonl" 2> "$OUT/mix-fill.err"
  echo "plan folder: $(ls "$ATTNFUZZ_CUDNN_PLAN_DIR" | wc -l) plans kept by an untimed run of the mix; every run below reads them"
fi
t0=$(date +%s.%N)
timeout "$MIX_TIME" "$AF" run "$mix"/case-*.case --backend cudnn --json > "$OUT/mix-attnfuzz.jsonl" 2> "$OUT/mix-attnfuzz.err"
t1=$(date +%s.%N)
count() { python3 -c "import json,sys; v=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]; print(len(v) if sys.argv[2]=='all' else sum(x.get('verdict')!='pass' for x in v))" "$@"; }
af_cases=$(count "$OUT/mix-attnfuzz.jsonl" all)
af_secs=$(python3 -c "print('%.1f' % ($t1 - $t0))")
af_rate=$(python3 -c "print('%.2f' % ($af_cases / ($t1 - $t0)))")
af_find=$(count "$OUT/mix-attnfuzz.jsonl" nonpass)
echo "attnfuzz run --backend cudnn: $af_cases cases in $af_secs s = $af_rate cases/s (non-pass verdicts: $af_find)"
python3 ci/bench/plan_summary.py "$OUT/mix-attnfuzz.jsonl"
python3 ci/bench/mix_stages.py "$OUT/mix-attnfuzz.jsonl"
if [ "${MIX_NO_REUSE:-0}" = 1 ]; then # the same mix on each case's own graph (plan reuse off)
  t0=$(date +%s.%N)
  ATTNFUZZ_CUDNN_PLAN_REUSE=0 timeout "$MIX_TIME" "$AF" run "$mix"/case-*.case --backend cudnn --json \
    > "$OUT/mix-noreuse.jsonl" 2> "$OUT/mix-noreuse.err"
  t1=$(date +%s.%N)
  nr_cases=$(count "$OUT/mix-noreuse.jsonl" all)
  echo "ATTNFUZZ_CUDNN_PLAN_REUSE=0: $nr_cases cases in $(python3 -c "print('%.1f' % ($t1 - $t0))") s =" \
    "$(python3 -c "print('%.2f' % ($nr_cases / ($t1 - $t0)))") cases/s (non-pass: $(count "$OUT/mix-noreuse.jsonl" nonpass))"
  python3 ci/bench/plan_summary.py "$OUT/mix-noreuse.jsonl"
fi
jobs_rates=""
for J in $MIX_JOBS; do # the same mix through J persistent workers
  sleep 3 # workers of an earlier run stopped by MIX_TIME finish their case and go
  t0=$(date +%s.%N)
  timeout "$MIX_TIME" "$AF" run --jobs "$J" "$mix"/case-*.case --backend cudnn --json \
    > "$OUT/mix-jobs$J.jsonl" 2> "$OUT/mix-jobs$J.err"
  t1=$(date +%s.%N)
  j_cases=$(count "$OUT/mix-jobs$J.jsonl" all)
  j_rate=$(python3 -c "print('%.2f' % ($j_cases / ($t1 - $t0)))")
  jobs_rates="$jobs_rates $J:$j_rate"
  echo "attnfuzz run --jobs $J --backend cudnn: $j_cases cases in $(python3 -c "print('%.1f' % ($t1 - $t0))") s =" \
    "$j_rate cases/s (non-pass: $(count "$OUT/mix-jobs$J.jsonl" nonpass));" \
    "$(python3 -c "print('%.2fx the 1-job figure (%s cases/s)' % ($j_rate / max($af_rate, 1e-9), '$af_rate'))")"
done
# The torch loop TORCH_RUNS times (default 2), each in a process of its own: on an H100 its
# second process ran 1.5x its first over the same configurations (5.16 then 7.80 cases/s,
# docs/benchmarks.md), so each run's ratios are printed
for tr in $(seq 1 "${TORCH_RUNS:-2}"); do
  torch_line=$(python3 ci/bench/torch_loop.py "$mix/mix.jsonl" "$MIX_TIME" 2>&1 | tail -1)
  echo "$torch_line (run $tr)"
  torch_rate=$(echo "$torch_line" | sed -n 's/.*= \([0-9.]*\) cases\/s.*/\1/p')
  [ -n "$torch_rate" ] && python3 -c "print('ratio attnfuzz / torch loop run $tr: %.2fx' % ($af_rate / $torch_rate))"
  for jr in $jobs_rates; do
    [ -n "$torch_rate" ] &&
      python3 -c "print('ratio attnfuzz --jobs ${jr%%:*} / torch loop run $tr: %.2fx' % (${jr#*:} / $torch_rate))"
  done
done

fi
echo "== (b) long sequences: b1 h16 d128 causal fwd+bwd (cudnn${LONG_FLAGS:+, $LONG_FLAGS})"
for s in $LONG_S; do
  c="$OUT/long-$s.case"
  printf 'dtype = bf16\nbatch = 1\nheads = 16\nseqlen = %s\nhead_dim = 128\nlayout = bhsd\nmask = causal\nbackward = yes\nseed = 7\n' "$s" > "$c"
  t0=$(date +%s.%N)
  peak_mem "$OUT/long-$s" timeout "$LONG_TIME" "$AF" run "$c" --backend cudnn --json ${LONG_FLAGS:-} > "$OUT/long-$s.json" 2> "$OUT/long-$s.err"
  rc=$?
  t1=$(date +%s.%N)
  echo "attnfuzz s=$s: rc=$rc $(python3 -c "print('%.1f s' % ($t1 - $t0))"), peak GPU $(cat "$OUT/long-$s.peak"); $(head -c 300 "$OUT/long-$s.json" | tr -d '\n')"
  python3 -c "import json,sys; v=json.load(open(sys.argv[1])); print('  verdict', v['verdict'], 'ratios', {k: round(t['ratio'], 3) for k, t in v['tensors'].items()}, 'judge', v.get('judge'))" "$OUT/long-$s.json" 2>/dev/null || tail -3 "$OUT/long-$s.err"
  python3 ci/bench/judge_stages.py "$OUT/long-$s.json" "s=$s" 2>/dev/null
  python3 ci/bench/torch_loop.py --long "$s" 2>&1 | tail -1
done

[ "$MIX_TIME" = 0 ] && exit 0
echo "== (c) MPFR coverage and where the time went, per case (mix)"
python3 - "$OUT/mix-attnfuzz.jsonl" <<'PY'
import json, sys
vs = []
for line in open(sys.argv[1]):
    try:
        vs.append(json.loads(line))
    except ValueError:
        pass
js = [v['judge'] for v in vs if 'judge' in v]
print('cases with a judge summary: %d of %d' % (len(js), len(vs)))
if js:
    tiers = {}
    for j in js:
        tiers[j['oracle_tier']] = tiers.get(j['oracle_tier'], 0) + 1
    print('oracle tiers: %s; references: %s' % (tiers, {r: sum(j['reference'] == r for j in js) for r in set(j['reference'] for j in js)}))
    rows = sorted(j['cert_rows'] for j in js)
    keys = sorted(j['cert_keys'] for j in js)
    print('MPFR-certified rows per case: min %d median %d max %d; key columns: min %d median %d max %d' % (
        rows[0], rows[len(rows) // 2], rows[-1], keys[0], keys[len(keys) // 2], keys[-1]))
    print('worst fp64-vs-MPFR gap / stated bound: %.3g' % max(j['cert_gap_over_bound'] for j in js))
    tot = {}
    for j in js:
        for k, x in j['seconds'].items():
            if isinstance(x, dict):  # per_probe, checks, builds: name -> seconds
                for pk, px in x.items():
                    tot[k + ':' + pk] = tot.get(k + ':' + pk, 0.0) + (px or 0.0)
            else:
                tot[k] = tot.get(k, 0.0) + (x or 0.0)
    print('mean seconds per case: ' + ', '.join('%s %.4f' % (k, x / len(js)) for k, x in tot.items()))
PY
