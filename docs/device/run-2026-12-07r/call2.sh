#!/usr/bin/env bash
# Device call (carry ["build-q5"]: attnfuzz NOT stripped, so the sampler names functions;
# about 4 min): where one worker's host time goes once the plans come from the folder.
# The mix (N 600) at one worker 40 s with an empty folder (fills it); a 10 s check that the
# warm folder serves without crashes (if not, the rest runs without a folder); 40 s on the
# warm folder under ci/bench/pmp.sh (0.3 s), folded; 30 s warm for the stages; --jobs 8
# without a folder and warm, 25 s each; the torch loop 30 s for the ratios.
B=${B:-build-q5}
source ci/device_preamble.sh
T0=$(date +%s)
mix=/tmp/mix
python3 ci/bench/gen_mix.py 600 $mix 2026 > /dev/null
plans=/tmp/plans
rm -rf $plans
ATTNFUZZ_CUDNN_PLAN_DIR=$plans timeout 40 $B/attnfuzz run $mix/case-*.case --backend cudnn --json > $R/mix-cold.jsonl 2> $R/mix-cold.err
echo "== mix 1 worker, cold folder: $(grep -c '^{' $R/mix-cold.jsonl) cases in 40 s, $(grep -c '"verdict":"crash"' $R/mix-cold.jsonl) crashes; folder $(ls $plans | wc -l) files" >> $S
ATTNFUZZ_CUDNN_PLAN_DIR=$plans timeout 10 $B/attnfuzz run $mix/case-*.case --backend cudnn --json > $R/mix-check.jsonl 2> $R/mix-check.err
crashes=$(grep -c '"verdict":"crash"' $R/mix-check.jsonl)
echo "== warm check: $(grep -c '^{' $R/mix-check.jsonl) cases in 10 s, $crashes crashes" >> $S
use=$plans; [ "$crashes" != 0 ] && use="" && echo "   (the warm folder crashed: the rest runs without it)" >> $S
ATTNFUZZ_CUDNN_PLAN_DIR=$use stamp "pmp mix" bash ci/bench/pmp.sh $R/pmp-mix.txt 0.3 timeout 40 $B/attnfuzz run $mix/case-*.case --backend cudnn --json > $R/mix-pmp.jsonl 2> $R/mix-pmp.err
echo "== mix 1 worker under pmp, folder '$use': $(grep -c '^{' $R/mix-pmp.jsonl) cases in 40 s" >> $S
python3 ci/bench/pmp_fold.py $R/pmp-mix.txt 90 > $R/pmp-mix-fold.txt 2>&1
head -92 $R/pmp-mix-fold.txt >> $S
ATTNFUZZ_CUDNN_PLAN_DIR=$use timeout 30 $B/attnfuzz run $mix/case-*.case --backend cudnn --json > $R/mix-warm.jsonl 2> $R/mix-warm.err
echo "== mix 1 worker, folder '$use': $(grep -c '^{' $R/mix-warm.jsonl) cases in 30 s" >> $S
python3 ci/bench/mix_stages.py $R/mix-warm.jsonl >> $S 2>&1
for v in none warm; do
  d=""; [ $v != none ] && d=$use
  sleep 2
  ATTNFUZZ_CUDNN_PLAN_DIR=$d timeout 25 $B/attnfuzz run --jobs 8 $mix/case-*.case --backend cudnn --json > $R/mix-j8-$v.jsonl 2> $R/mix-j8-$v.err
  echo "== mix --jobs 8, plan folder '$d': $(grep -c '^{' $R/mix-j8-$v.jsonl) cases in 25 s, $(grep -c '"verdict":"crash"' $R/mix-j8-$v.jsonl) crashes; folder $(ls $plans | wc -l) files" >> $S
done
timeout 45 python3 ci/bench/torch_loop.py $mix/mix.jsonl 30 > $R/torch.txt 2>&1
tail -2 $R/torch.txt >> $S
echo "elapsed $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl $R/pmp-mix.txt
tail -70 $S
device_pack
