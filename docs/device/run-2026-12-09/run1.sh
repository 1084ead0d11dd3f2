#!/usr/bin/env bash
# device call 1 of 2026-12-09 (the judge on the device): test_criterion_gpu (the GPU pass of
# the element budgets against the host loop), the GPU tests that share the judge's code
# (test_compare_gpu, test_oracle_gpu, test_runner_pipeline), the learnable-sinks cases
# that crashed before the oracle fix, then ci/bench_judge.sh: the config mix against the
# PyTorch loop at 1 and 8 workers with per-stage medians, and the long cases 4k and 16k.
source ci/device_preamble.sh
for t in test_criterion_gpu test_runner_pipeline test_oracle_pipeline_sinks test_compare_gpu test_oracle_gpu; do
  stamp "$t" timeout 200 $B/$t > $R/$t.txt 2>&1; tail -4 $R/$t.txt >> $S
done
# the learnable-sinks cases that crashed in af_prepare (signal 11) before the oracle fix
stamp "sinks cases" timeout 200 $B/attnfuzz run corpora/regression/cudnn-sink-learnable-*-heap.case --backend cudnn \
  > $R/sinks.txt 2>&1; cut -c1-240 $R/sinks.txt >> $S
OUT=$R/bench N=300 MIX_TIME=60 MIX_JOBS=8 LONG_S="4096 16384" LONG_TIME=80 \
  stamp bench timeout 330 bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
cat $R/bench.txt >> $S
tail -40 $S
device_pack
