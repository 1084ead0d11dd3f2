#!/usr/bin/env bash
# Device call (carry ["build-new", "build-t"]; about 4 min). build-new: a stripped Release
# attnfuzz of d37f244 with lib/; build-t: the same tree's cudnn GPU tests, stripped.
#  1. docs/device/run-2026-12-07t/call15.sh: the mix at one worker and --jobs 8, the threads'
#     CPU per part (judge.seconds.cpu) beside the process's, to place the ~340 ms a case
#     spends outside the probes and the certification (call14);
#  2. the cudnn GPU tests of the staging pool, the margin map and the tiled check (they ran
#     on a GPU only at 6ba2134, before those changes).
export DEVICE_NO_PACK=1
B=build-new
source ci/device_preamble.sh
pack() { (cd "$OUT" && tar czf all.tgz r); }
T0=$(date +%s)
echo "== part 1" >> $S
OUT=$OUT timeout 240 bash docs/device/run-2026-12-07t/call15.sh > /dev/null 2>&1
echo "part 1 elapsed $(($(date +%s) - T0)) s" >> $S
pack
echo "== part 2" >> $S
for t in test_cudnn_sdpa test_cudnn_layouts test_cudnn_features test_cudnn_feature_declines test_compare_gpu test_campaign_gpu test_cudnn_bucket; do
  timeout 90 build-t/$t > $R/$t.txt 2>&1
  echo "$t: exit $? | $(grep -E 'checks passed|FAIL|failed|skip' $R/$t.txt | tail -2 | tr '\n' ' ' | cut -c1-250)" >> $S
done
echo "elapsed $(($(date +%s) - T0)) s" >> $S
cat $S
pack
