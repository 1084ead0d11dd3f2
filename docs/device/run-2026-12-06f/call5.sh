#!/usr/bin/env bash
# Device call 5 (carry ["build-dev"]; under a minute): test_criterion_gpu under both keep rules.
source ci/device_preamble.sh
for kod in 1 0; do
  ATTNFUZZ_KEEP_ON_DEVICE=$kod timeout 90 build-dev/test_criterion_gpu > $R/test_criterion_gpu-$kod.txt 2>&1
  echo "== test_criterion_gpu (ATTNFUZZ_KEEP_ON_DEVICE=$kod): exit $? | $(tail -1 $R/test_criterion_gpu-$kod.txt)" >> $S
  grep -v "^ok" $R/test_criterion_gpu-$kod.txt | tail -12 >> $S
done
tail -40 $S
device_pack
