#!/usr/bin/env bash
# Device call (carry ["build-min", "build-33a", "build-33b"]; about 6 min): three parts, one
# start.
#  1. ../run-2026-12-07r/call3.sh: the GPU corpus's verdicts before and after the case-field
#     table (build-33a / build-33b), compared here with ci/verdict_compare.py.
#  2. The judge bench as call4 ran it (PLANS_WARM=1, N 600, 30 s a side, --jobs 8 and 12, the
#     torch loop once, the 32k case without probes) on the build with the MPFR tier's
#     weighted sums in integers (oracle/src/exact_wsum.h): the 32k certification beside the
#     case was 12.0 s.
#  3. call5.sh: CPU seconds per mix case at one worker and --jobs 8 (524 / 548 ms with probes
#     before: mostly the MPFR certification's threads).
export DEVICE_NO_PACK=1
B=build-min
bash docs/device/run-2026-12-07r/call3.sh > /dev/null 2>&1
source ci/device_preamble.sh
PLANS_WARM=1 N=600 MIX_TIME=30 MIX_JOBS="8 12" TORCH_RUNS=1 LONG_S="32768" LONG_TIME=120 \
  LONG_FLAGS=--no-probes OUT=$R/bench stamp bench bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
grep -E "^(plan folder|attnfuzz|torch loop|ratio)|judge stages|host time outside" $R/bench.txt | cut -c1-400 >> $S
rm -rf $R/bench/mix $R/bench/plans $R/bench/long/*.case
gzip -f $R/bench/*.jsonl 2>/dev/null
B=$B bash docs/device/run-2026-12-07s/call5.sh > /dev/null 2>&1
unset DEVICE_NO_PACK
cat $S
device_pack
