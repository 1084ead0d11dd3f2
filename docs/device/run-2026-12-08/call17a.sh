#!/usr/bin/env bash
# Device call (carry ["build-new", "build-t"]; about 3 min): call17.sh's first three parts
# only, for a session with little device time left: test_oracle_gpu on the three paths
# (fma chains, m8n8k4, m16n8k4) against MPFR, bench_oracle_gpu at 32k on each, then the
# 32k case on each.
export DEVICE_NO_PACK=1
B=build-new
source ci/device_preamble.sh
pack() { (cd "$OUT" && tar czf all.tgz r); }
T0=$(date +%s)
el() { echo "elapsed $(($(date +%s) - T0)) s" >> $S; pack; }
timeout 150 build-t/test_oracle_gpu > $R/test_oracle_gpu.txt 2>&1
echo "test_oracle_gpu: exit $? | $(grep -E 'checks passed|FAIL|failed|skip|worst' $R/test_oracle_gpu.txt | tail -5 | tr '\n' ' ' | cut -c1-900)" >> $S
el
for mma in 0 1 2; do
  ATTNFUZZ_ORACLE_GPU_MMA=$mma timeout 40 build-t/bench_oracle_gpu 32768 >> $S 2>&1
  echo "(mma=$mma)" >> $S
done
el
for mma in 2 1 0; do
  ATTNFUZZ_ORACLE_GPU_MMA=$mma MIX_TIME=0 LONG_S="32768" LONG_TIME=40 LONG_FLAGS=--no-probes \
    OUT=$R/long-$mma timeout 50 bash ci/bench_judge.sh $B > $R/long-$mma.txt 2>&1
  echo "-- mma=$mma" >> $S
  grep -E "^attnfuzz s=|judge stages" $R/long-$mma.txt | cut -c1-400 >> $S
  rm -f $R/long-$mma/*.case
  el
done
cat $S
pack
