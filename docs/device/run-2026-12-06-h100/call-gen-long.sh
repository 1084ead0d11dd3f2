#!/usr/bin/env bash
# Device call: carry ["build-dev"]. The long cases b1 h16 d128 causal fwd + bwd at LONG_S (32k; 64k too: LONG_S="32768 65536"),
# --no-probes, with the host passes on threads; then the 32k case once more under
# ci/bench/pmp.sh (a sampling profile of every thread's stack).
source ci/device_preamble.sh
OUT=$R/bench-long MIX_TIME=0 LONG_S="${LONG_S:-32768}" LONG_TIME=150 LONG_FLAGS=--no-probes \
  stamp "bench long" timeout 380 bash ci/bench_judge.sh $B > $R/bench-long.txt 2>&1
echo "== long" >> $S
tail -40 $R/bench-long.txt >> $S
# where the 32k case's wall time goes: stacks of every thread every 1.5 s (ci/bench/pmp.sh;
# gdb or cuda-gdb attached), folded into shares
stamp "pmp 32k" timeout 200 bash ci/bench/pmp.sh $R/pmp-32k.txt 1.5 $B/attnfuzz run $R/bench-long/long-32768.case \
  --backend cudnn --no-probes --json > $R/pmp-32k.json 2>&1
python3 ci/bench/pmp_fold.py $R/pmp-32k.txt 60 > $R/pmp-32k-fold.txt 2>&1
head -45 $R/pmp-32k-fold.txt >> $S
gzip -f $R/pmp-32k.txt
tail -70 $S
device_pack
