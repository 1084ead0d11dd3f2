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
cpu_run() { # LABEL JOBS COUNT: CPU seconds of every process the run waited for
  local label=$1 jobs=$2 count=$3
  python3 -c 'import resource, subprocess, sys, time
t = time.monotonic(); subprocess.run(sys.argv[2:], stdout=open(sys.argv[1] + ".jsonl", "w"), stderr=open(sys.argv[1] + ".err", "w"))
r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_utime, r.ru_stime, time.monotonic() - t)' \
    $R/mix-$label timeout 100 $B/attnfuzz run $(ls $mix/*.case | head -$count) --backend cudnn --jobs $jobs --json > $R/time-$label.txt
  local n; n=$(grep -c '"verdict"' $R/mix-$label.jsonl)
  read -r u s e < <(tail -1 $R/time-$label.txt)
  python3 -c 'import sys; u,s,e,n=map(float,sys.argv[2:6]); print("%-14s %4d cases in %6.1f s wall: %6.1f ms wall/case, user %6.1f + sys %5.1f = %6.1f ms CPU/case (%.1f cores busy)" % (sys.argv[1], n, e, 1e3*e/n, 1e3*u/n, 1e3*s/n, 1e3*(u+s)/n, (u+s)/e))' \
    "$label" "$u" "$s" "$e" "$n" >> $S 2>&1
}
cpu_run j1-probes 1 120
cpu_run j8-probes 8 400
python3 ci/bench/mix_stages.py $R/mix-j1-probes.jsonl 2>&1 | grep -E "^  (gen|oracle|magnitudes|reference|run|compare|probes|cert)" >> $S
rm -rf $R/bench/mix $R/bench/plans $R/bench/long/*.case
gzip -f $R/bench/*.jsonl $R/*.jsonl 2>/dev/null
unset DEVICE_NO_PACK
cat $S
device_pack
