#!/usr/bin/env bash
# Device call (carry ["build-min", "build-new"]; about 8 min): a case whose lengths are
# already its cuDNN buckets runs on its own buffers (backends/cudnn/cudnn_bucket.h,
# af_cudnn_bucket_in_place: no staged host copies), with the fp64 tiers' underflow
# allowance in too. build-min: the build before both; build-new: with both.
#  1. The 32k case (b1 h16 d128 causal fwd + bwd, --no-probes), new / old / new / old: its
#     run's copy seconds were 0.885 of 0.986 (call6), the repeats 2.09 s.
#  2. corpora/gpu through both builds at the same time, --backend cudnn, then
#     ci/verdict_compare.py here: the in-place runs change no verdict.
#  3. call11.sh's profile of the mix at one worker (new build).
export DEVICE_NO_PACK=1
source ci/device_preamble.sh
pack() { (cd "$OUT" && tar czf all.tgz r); }
T0=$(date +%s)
for b in build-new build-min build-new build-min; do
  LD_LIBRARY_PATH=$PWD/$b/lib:${LD_LIBRARY_PATH:-} MIX_TIME=0 LONG_S="32768" LONG_TIME=60 LONG_FLAGS=--no-probes \
    OUT=$R/long-$b timeout 80 bash ci/bench_judge.sh $b > $R/long-$b.txt 2>&1
  echo "== $b" >> $S
  grep -E "^attnfuzz s=|judge stages" $R/long-$b.txt | cut -c1-200 >> $S
  python3 -c "
import json,sys
d=json.loads(open(sys.argv[1]).read().splitlines()[0]); j=d['judge']['seconds']
print('  run %.3f (copy %.3f kernel %.3f), repeats %.3f, compare %.3f, verdict %s' % (d['seconds'], d.get('copy_seconds',0), d.get('kernel_seconds',0), j['compare_runs'], j['compare'], d['verdict']))" $R/long-$b/long-32768.json >> $S 2>&1
  rm -f $R/long-$b/*.case
done
pack
for b in build-min build-new; do
  (LD_LIBRARY_PATH=$PWD/$b/lib:${LD_LIBRARY_PATH:-} timeout 200 $b/attnfuzz run corpora/gpu/*.case --backend cudnn --json > $R/corpus-$b.jsonl 2> $R/corpus-$b.err; echo "$b corpus: exit $? $(grep -c '^{' $R/corpus-$b.jsonl) verdicts; $(tail -1 $R/corpus-$b.err)" >> $S) &
done
wait
pack
B=build-new timeout 170 bash docs/device/run-2026-12-07s/call11.sh > /dev/null 2>&1
echo "elapsed $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl
cat $S
pack
rm -rf $R
