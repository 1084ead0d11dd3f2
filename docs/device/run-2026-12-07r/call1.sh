#!/usr/bin/env bash
# Device call (carry ["build-q4"]; about 5 min): the plan folder again after its two faults in
# run-2026-12-07q/call4.sh (every plan read back crashed the process: the plan was finalized
# from its text without CUDNN_ATTR_EXECUTION_PLAN_HANDLE; the test's instances read the
# folder's variable after the test had unset it). test_cudnn_plan_disk; the GPU corpus
# without a folder, with an empty one and with it filled (verdicts compared here); the mix
# (N 600) at one worker MIX_S (40) s each: no folder, cold, warm; --jobs 8 without and warm.
B=${B:-build-q4}
source ci/device_preamble.sh
T0=$(date +%s)
stamp test_cudnn_plan_disk timeout 120 $B/test_cudnn_plan_disk > $R/test_cudnn_plan_disk.txt 2>&1
grep -E "checks passed|FAIL|CHECK|instance|damage" $R/test_cudnn_plan_disk.txt | tail -24 >> $S
cp=/tmp/plans-corpus
rm -rf $cp
for v in none cold warm; do
  d=""; [ $v != none ] && d=$cp
  ATTNFUZZ_CUDNN_PLAN_DIR=$d stamp "corpus $v" timeout 150 $B/attnfuzz run corpora/gpu/*.case --backend cudnn --json > $R/corpus-$v.jsonl 2> $R/corpus-$v.err
  echo "   corpus $v: $(grep -c '^{' $R/corpus-$v.jsonl) verdicts, $(grep -c '"verdict":"crash"' $R/corpus-$v.jsonl) crashes; folder $(ls $cp 2>/dev/null | wc -l) files" >> $S
  grep -m3 "plan" $R/corpus-$v.err >> $S
done
mix=/tmp/mix
python3 ci/bench/gen_mix.py 600 $mix 2026 > /dev/null
plans=/tmp/plans
rm -rf $plans
for v in none cold warm; do
  d=""; [ $v != none ] && d=$plans
  ATTNFUZZ_CUDNN_PLAN_DIR=$d timeout ${MIX_S:-40} $B/attnfuzz run $mix/case-*.case --backend cudnn --json > $R/mix-$v.jsonl 2> $R/mix-$v.err
  echo "== mix 1 worker, plan folder $v: $(grep -c '^{' $R/mix-$v.jsonl) cases in ${MIX_S:-40} s, $(grep -c '"verdict":"crash"' $R/mix-$v.jsonl) crashes; folder $(ls $plans 2>/dev/null | wc -l) files, $(du -sh $plans 2>/dev/null | cut -f1)" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$v.jsonl 2>&1 | grep -E "^  (run |builds (plans|waited|total)|host|judge time)" >> $S
  grep -m2 "plan" $R/mix-$v.err >> $S
done
for v in none warm; do
  d=""; [ $v != none ] && d=$plans
  sleep 3
  ATTNFUZZ_CUDNN_PLAN_DIR=$d timeout ${MIX_S:-40} $B/attnfuzz run --jobs 8 $mix/case-*.case --backend cudnn --json > $R/mix-j8-$v.jsonl 2> $R/mix-j8-$v.err
  echo "== mix --jobs 8, plan folder $v: $(grep -c '^{' $R/mix-j8-$v.jsonl) cases in ${MIX_S:-40} s, $(grep -c '"verdict":"crash"' $R/mix-j8-$v.jsonl) crashes" >> $S
  grep -m2 "plan" $R/mix-j8-$v.err >> $S
done
echo "elapsed $(($(date +%s) - T0)) s" >> $S
gzip -f $R/mix*.jsonl
tail -60 $S
device_pack
