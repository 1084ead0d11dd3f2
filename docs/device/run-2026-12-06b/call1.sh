#!/usr/bin/env bash
# Device call 1 (carry ["build-dev"]): the GPU oracle's kernel timings (bench_oracle_gpu,
# the baseline for the register-tiled kernels), the 32k case under pmp (callB), then the
# cudnn campaign part 1 (call2); call 2 of this run resumes it on the warm machine.
export DEVICE_NO_PACK=1
source ci/device_preamble.sh
stamp bench-oracle timeout 120 $B/bench_oracle_gpu 4096 16384 32768 > $R/bench-oracle.txt 2>&1
cat $R/bench-oracle.txt >> $S
bash docs/device/next/callB.sh
CAMP1_S=300 bash docs/device/next/call2.sh
unset DEVICE_NO_PACK
device_pack
