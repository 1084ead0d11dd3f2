#!/usr/bin/env bash
# Device call (carry ["build-min", "build-new", "build-t"]; about 8 min; one start for three
# parts, since starts are scarce). build-min: a stripped Release attnfuzz of 0a2fb7e (before
# the cudnn backend's in-place runs and its staging of every row with its stride gap);
# build-new: HEAD's (6ba2134); build-t: HEAD's cudnn GPU tests, stripped.
#  1. docs/device/run-2026-12-07s/call12b.sh's two parts: the ten cases of inplace/ and
#     corpora/gpu's padded cases through both builds (system cuDNN), then the 32k case
#     (--no-probes) new then old;
#  2. HEAD's cudnn GPU tests (sdpa, layouts, features, declines, compare, campaign, bucket);
#  3. docs/device/run-2026-12-07s/call11.sh with B=build-new: a sampling profile of the mix at
#     one worker (where a mix case's 534 ms of CPU goes).
export DEVICE_NO_PACK=1
B=build-new
source ci/device_preamble.sh
pack() { (cd "$OUT" && tar czf all.tgz r); }
T0=$(date +%s)
echo "== part 1" >> $S
for b in build-min build-new; do
  (LD_LIBRARY_PATH=$PWD/$b/lib:${LD_LIBRARY_PATH:-} timeout 100 $b/attnfuzz run docs/device/run-2026-12-07s/inplace/*.case corpora/gpu/*padding*.case --backend cudnn --json > $R/inplace-$b.jsonl 2> $R/inplace-$b.err; echo "$b inplace: exit $? $(grep -c '^{' $R/inplace-$b.jsonl) verdicts; $(tail -1 $R/inplace-$b.err)" >> $S) &
done
wait
python3 ci/verdict_compare.py $R/inplace-build-min.jsonl $R/inplace-build-new.jsonl >> $S 2>&1
pack
for b in build-new build-min; do
  LD_LIBRARY_PATH=$PWD/$b/lib:${LD_LIBRARY_PATH:-} MIX_TIME=0 LONG_S="32768" LONG_TIME=45 LONG_FLAGS=--no-probes \
    OUT=$R/long-$b timeout 60 bash ci/bench_judge.sh $b > $R/long-$b.txt 2>&1
  echo "== $b" >> $S
  grep -E "^attnfuzz s=|judge stages" $R/long-$b.txt | cut -c1-300 >> $S
  python3 -c "
import json,sys
d=json.loads(open(sys.argv[1]).read().splitlines()[0]); j=d['judge']['seconds']
print('  run %.3f (copy %.3f kernel %.3f), repeats %.3f, compare %.3f, verdict %s, plan %s' % (d['seconds'], d.get('copy_seconds',0), d.get('kernel_seconds',0), j['compare_runs'], j['compare'], d['verdict'], d.get('plan')))" $R/long-$b/long-32768.json >> $S 2>&1
  rm -f $R/long-$b/*.case
done
echo "part 1 elapsed $(($(date +%s) - T0)) s" >> $S
pack
echo "== part 2" >> $S
for t in test_cudnn_sdpa test_cudnn_layouts test_cudnn_features test_cudnn_feature_declines test_compare_gpu test_campaign_gpu test_cudnn_bucket; do
  timeout 90 build-t/$t > $R/$t.txt 2>&1
  echo "$t: exit $? | $(grep -E 'checks passed|FAIL|failed|skip' $R/$t.txt | tail -2 | tr '\n' ' ' | cut -c1-250)" >> $S
done
echo "part 2 elapsed $(($(date +%s) - T0)) s" >> $S
pack
echo "== part 3" >> $S
mix=/tmp/mix
python3 ci/bench/gen_mix.py 600 $mix 2026 > /dev/null
export ATTNFUZZ_CUDNN_PLAN_DIR=/tmp/plans
timeout 40 $B/attnfuzz run $mix/*.case --backend cudnn --jobs 8 --json > /dev/null 2>&1
timeout 150 bash ci/bench/pmp.sh $R/pmp-j1.txt 0.5 $B/attnfuzz run $(ls $mix/*.case | head -120) --backend cudnn --json > $R/pmp-j1.jsonl 2> $R/pmp-j1.err
echo "pmp samples: $(grep -c '^== sample' $R/pmp-j1.txt)" >> $S
python3 ci/bench/pmp_fold.py $R/pmp-j1.txt 45 >> $S 2>&1
gzip -f $R/pmp-j1.txt $R/pmp-j1.jsonl
echo "elapsed $(($(date +%s) - T0)) s" >> $S
cat $S
pack
