#!/usr/bin/env bash
# Device call (carry ["build-min"]; about 8 min): (1) on an H200 only, the GPU tests never run
# on one (test_cudnn_ahead, test_cudnn_fp8, test_cudnn_fp8_stats); (2) a sampling profile of the
# judge bench's mix at one worker (ci/bench/pmp.sh, 45 s) and the per-stage medians of the same
# run; (3) the long cases without probes, s = 32768 and 131072 (ci/bench_judge.sh, the issue's
# 10 s / 60 s targets), with peak GPU memory and torch's float64 reference beside them.
B=${B:-build-min}
source ci/device_preamble.sh
T0=$(date +%s)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  for t in test_cudnn_ahead test_cudnn_fp8 test_cudnn_fp8_stats; do
    stamp $t timeout 120 $B/$t > $R/$t.txt 2>&1
    tail -2 $R/$t.txt >> $S
  done
else
  echo "not an H200: the H200-only tests not run" >> $S
fi
mix=/tmp/mix
python3 ci/bench/gen_mix.py 300 $mix 2026 > /dev/null
stamp "pmp mix" bash ci/bench/pmp.sh $R/pmp-mix.txt 0.5 timeout 45 $B/attnfuzz run $mix/case-*.case --backend cudnn --json > $R/mix-pmp.jsonl 2> $R/mix-pmp.err
echo "mix under pmp: $(grep -c '^{' $R/mix-pmp.jsonl) cases in 45 s" >> $S
python3 ci/bench/pmp_fold.py $R/pmp-mix.txt 60 > $R/pmp-mix-fold.txt 2>&1
head -64 $R/pmp-mix-fold.txt >> $S
# the same mix without the profiler: per-stage medians
timeout 40 $B/attnfuzz run $mix/case-*.case --backend cudnn --json > $R/mix.jsonl 2> $R/mix.err
echo "== mix (no profiler): $(grep -c '^{' $R/mix.jsonl) cases in 40 s" >> $S
python3 ci/bench/mix_stages.py $R/mix.jsonl >> $S 2>&1
MIX_TIME=0 LONG_S="32768 131072" LONG_TIME=240 LONG_FLAGS=--no-probes OUT=$R/long stamp "long no probes" bash ci/bench_judge.sh $B > $R/long.txt 2>&1
grep -E "^attnfuzz|judge stages|torch float64|verdict" $R/long.txt | cut -c1-600 >> $S
echo "elapsed $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl $R/pmp-mix.txt
rm -rf $R/long/*.case
tail -100 $S
device_pack
