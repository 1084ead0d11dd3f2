#!/usr/bin/env bash
# Device call: carry ["build-dev"]. The judge bench's mix with the inputs' values from the
# GPU generator at every size (ATTNFUZZ_GEN_GPU_MIN_ELEMS=0; row summaries on the device, the
# default), then the long cases b1 h16 d128 causal fwd + bwd at 32k and 64k, --no-probes.
source ci/device_preamble.sh
ATTNFUZZ_GEN_GPU_MIN_ELEMS=0 OUT=$R/bench-gen0 N=120 MIX_TIME=40 MIX_JOBS="8" LONG_S="" \
  stamp "bench gen_gpu_min=0" timeout 200 bash ci/bench_judge.sh $B > $R/bench-gen0.txt 2>&1
echo "== ATTNFUZZ_GEN_GPU_MIN_ELEMS=0" >> $S
grep -E "cases/s|median|criterion|gen" $R/bench-gen0.txt | head -16 >> $S
rm -rf $R/bench-gen0/mix
OUT=$R/bench-long MIX_TIME=0 LONG_S="32768 65536" LONG_TIME=150 LONG_FLAGS=--no-probes \
  stamp "bench long" timeout 380 bash ci/bench_judge.sh $B > $R/bench-long.txt 2>&1
echo "== long" >> $S
tail -40 $R/bench-long.txt >> $S
tail -70 $S
device_pack
