#!/usr/bin/env bash
# Device call (carry ["build-new", "build-t2"]; about 4 min). build-new as call17's;
# build-t2: the cudnn GPU tests of the staging pool, the margin map and the tiled check
# (they ran on a GPU only at 6ba2134, before those changes), stripped.
#  1. those tests;
#  2. docs/device/run-2026-12-07t/call15.sh: the mix at one worker and --jobs 8, the
#     threads' CPU per part beside the process's.
export DEVICE_NO_PACK=1
B=build-new
source ci/device_preamble.sh
pack() { (cd "$OUT" && tar czf all.tgz r); }
T0=$(date +%s)
echo "== part 1" >> $S
for t in test_cudnn_sdpa test_cudnn_layouts test_cudnn_features test_cudnn_feature_declines test_compare_gpu test_campaign_gpu test_cudnn_bucket; do
  timeout 90 build-t2/$t > $R/$t.txt 2>&1
  echo "$t: exit $? | $(grep -E 'checks passed|FAIL|failed|skip' $R/$t.txt | tail -2 | tr '\n' ' ' | cut -c1-250)" >> $S
done
echo "elapsed $(($(date +%s) - T0)) s" >> $S
pack
echo "== part 2" >> $S
OUT=$OUT timeout 200 bash docs/device/run-2026-12-07t/call15.sh > /dev/null 2>&1
echo "elapsed $(($(date +%s) - T0)) s" >> $S
cat $S
pack
