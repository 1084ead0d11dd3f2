#!/usr/bin/env bash
# Device call: carry ["build-dev"]. The long cases b1 h16 d128 causal fwd + bwd at 32k and 64k,
# --no-probes, with the host passes on threads.
source ci/device_preamble.sh
OUT=$R/bench-long MIX_TIME=0 LONG_S="32768 65536" LONG_TIME=150 LONG_FLAGS=--no-probes \
  stamp "bench long" timeout 380 bash ci/bench_judge.sh $B > $R/bench-long.txt 2>&1
echo "== long" >> $S
tail -40 $R/bench-long.txt >> $S
tail -70 $S
device_pack
