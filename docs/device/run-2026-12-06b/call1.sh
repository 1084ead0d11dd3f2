#!/usr/bin/env bash
# Device call 1 (carry ["build-dev"]): test_oracle_gpu (the tier's magnitudes from its own
# passes, bit for bit those of the separate passes), bench_oracle_gpu (separate magnitude
# passes against the fused ones), the 32k case under pmp (callB), then the cudnn campaign
# part 1 (call2); call 2 of this run resumes it on the warm machine.
export DEVICE_NO_PACK=1
source ci/device_preamble.sh
stamp test_oracle_gpu timeout 300 $B/test_oracle_gpu > $R/test_oracle_gpu.txt 2>&1
tail -3 $R/test_oracle_gpu.txt >> $S
stamp bench-oracle timeout 120 $B/bench_oracle_gpu 4096 16384 32768 > $R/bench-oracle.txt 2>&1
cat $R/bench-oracle.txt >> $S
bash docs/device/next/callB.sh
CAMP1_S=240 bash docs/device/next/call2.sh
unset DEVICE_NO_PACK
device_pack
