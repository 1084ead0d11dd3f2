#!/usr/bin/env bash
# Device call 4 (carry ["build-dev"]; about 2 min): test_criterion_gpu under both keep rules
# (the tier's kept exact values, and the pass's own upload), test_gpu_ref, and the mix once
# more with the keep rule A/B in one binary.
source ci/device_preamble.sh
for kod in 1 0; do
  ATTNFUZZ_KEEP_ON_DEVICE=$kod timeout 90 build-dev/test_criterion_gpu > $R/test_criterion_gpu-$kod.txt 2>&1
  echo "== test_criterion_gpu (ATTNFUZZ_KEEP_ON_DEVICE=$kod): exit $? | $(tail -1 $R/test_criterion_gpu-$kod.txt)" >> $S
done
timeout 90 build-dev/test_gpu_ref > $R/test_gpu_ref.txt 2>&1
echo "== test_gpu_ref: exit $? | $(tail -1 $R/test_gpu_ref.txt)" >> $S
mix=/tmp/mix
python3 ci/bench/gen_mix.py 100 $mix 2026 > /dev/null
for kod in long 1; do
  ATTNFUZZ_KEEP_ON_DEVICE=$kod timeout 30 build-dev/attnfuzz run $mix/case-*.case --backend cudnn --json > $R/mix-$kod.jsonl 2> /dev/null
  echo "== mix ATTNFUZZ_KEEP_ON_DEVICE=$kod: $(grep -c '^{' $R/mix-$kod.jsonl) cases in 30 s" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$kod.jsonl >> $S 2>&1
done
gzip -f $R/mix-*.jsonl
tail -90 $S
device_pack
