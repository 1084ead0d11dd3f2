#!/usr/bin/env bash
# Device call (carry ["build-q4"]; about 4 min, 6 with JOBS8=1): plans kept on disk between
# processes (ATTNFUZZ_CUDNN_PLAN_DIR, backends/cudnn/cudnn_plan_disk.h). test_cudnn_plan_disk,
# test_oracle_gpu (the key pass skips dO . v for dV alone), test_oracle_pipeline (on a GPU the
# certification's rows start before the GPU tier), test_cudnn_ahead (its helpers moved to
# tests/run_compare.h); the 32k case without probes (its cert_wait was 4.8-5.1 s: call3); the judge bench's mix (N 600) at one worker, MIX_S (20)
# seconds each: no plan folder, an empty one (cold), the same again (warm, a new process);
# with JOBS8=1 also --jobs 8 without a folder and with the warm one.
B=${B:-build-q4}
source ci/device_preamble.sh
T0=$(date +%s)
for t in test_cudnn_plan_disk test_oracle_gpu test_oracle_pipeline test_cudnn_ahead; do
  stamp $t timeout 90 $B/$t > $R/$t.txt 2>&1
  grep -E "checks passed|FAIL|CHECK|first instance|second instance|damage" $R/$t.txt | tail -14 >> $S
done
MIX_TIME=0 LONG_S="32768" LONG_TIME=120 LONG_FLAGS=--no-probes OUT=$R/long bash ci/bench_judge.sh $B > $R/long.txt 2>&1
grep -E "^attnfuzz s=|judge stages" $R/long.txt | cut -c1-400 >> $S
rm -f $R/long/*.case
mix=/tmp/mix
python3 ci/bench/gen_mix.py 600 $mix 2026 > /dev/null
plans=/tmp/plans
rm -rf $plans
for v in none cold warm; do
  d=""; [ $v != none ] && d=$plans
  ATTNFUZZ_CUDNN_PLAN_DIR=$d timeout ${MIX_S:-20} $B/attnfuzz run $mix/case-*.case --backend cudnn --json > $R/mix-$v.jsonl 2> $R/mix-$v.err
  echo "== mix 1 worker, plan folder $v: $(grep -c '^{' $R/mix-$v.jsonl) cases in ${MIX_S:-20} s; folder $(ls $plans 2>/dev/null | wc -l) files, $(du -sh $plans 2>/dev/null | cut -f1)" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$v.jsonl 2>&1 | grep -E "^  (run |builds (plans|waited|total)|host|judge time)" >> $S
  grep -m2 "plan" $R/mix-$v.err >> $S
done
for v in ${JOBS8:+none warm}; do
  d=""; [ $v != none ] && d=$plans
  sleep 3
  ATTNFUZZ_CUDNN_PLAN_DIR=$d timeout ${MIX_S:-20} $B/attnfuzz run --jobs 8 $mix/case-*.case --backend cudnn --json > $R/mix-j8-$v.jsonl 2> $R/mix-j8-$v.err
  echo "== mix --jobs 8, plan folder $v: $(grep -c '^{' $R/mix-j8-$v.jsonl) cases in ${MIX_S:-20} s" >> $S
done
echo "elapsed $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl
tail -40 $S
device_pack
