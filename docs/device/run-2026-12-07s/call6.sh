#!/usr/bin/env bash
# Device call (carry ["build-min", "build-33a", "build-33b"]; about 5 min): three parts, one
# start.
#  1. ../run-2026-12-07r/call3.sh: the GPU corpus's verdicts before and after the case-field
#     table (build-33a / build-33b), compared here with ci/verdict_compare.py.
#  2. The judge bench as call4 ran it (PLANS_WARM=1, N 600, 30 s a side, --jobs 8, the torch
#     loop once, the 32k case without probes) on the build with the MPFR tier's weighted sums
#     in integers (oracle/src/exact_wsum.h): the 32k certification beside the case was 12.0 s.
#  3. call5.sh's CPU seconds per mix case, probes on, at one worker (120 cases) and --jobs 8
#     (400 cases), with the bench's plan folder (524 / 548 ms per case before).
export DEVICE_NO_PACK=1
B=build-min
bash docs/device/run-2026-12-07r/call3.sh > /dev/null 2>&1
source ci/device_preamble.sh
PLANS_WARM=1 N=600 MIX_TIME=30 MIX_JOBS="8" TORCH_RUNS=1 LONG_S="32768" LONG_TIME=120 \
  LONG_FLAGS=--no-probes OUT=$R/bench stamp bench bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
grep -E "^(plan folder|attnfuzz|torch loop|ratio)|judge stages|host time outside" $R/bench.txt | cut -c1-400 >> $S
export ATTNFUZZ_CUDNN_PLAN_DIR=$R/bench/plans
mix=$R/bench/mix
cpu_run mix-j1-probes timeout 100 $B/attnfuzz run $(ls $mix/*.case | head -120) --backend cudnn --json
cpu_run mix-j8-probes timeout 100 $B/attnfuzz run $(ls $mix/*.case | head -400) --backend cudnn --jobs 8 --json
python3 ci/bench/mix_stages.py $R/mix-j1-probes.jsonl 2>&1 | grep -E "^  (gen|oracle|magnitudes|reference|run|compare|probes|cert)" >> $S
rm -rf $R/bench/mix $R/bench/plans $R/bench/long/*.case
gzip -f $R/bench/*.jsonl $R/*.jsonl 2>/dev/null
unset DEVICE_NO_PACK
cat $S
device_pack
