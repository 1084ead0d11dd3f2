#!/usr/bin/env bash
# Device call (carry ["build-min", "build-new"]; about 2 min; cut to the device
# time left): a case whose lengths are already its cuDNN buckets runs on its own buffers
# (af_cudnn_bucket_in_place), the fp64 tiers' underflow allowance in too; build-min is the
# build before both; build-new (HEAD's: make it as build-min, ci/make_devbuild.sh then
# attnfuzz and lib) also stages a padded case's every row with its stride gap (a sequence's
# padding rows too, so the stale-data and visibility probes reach cuDNN there: on 9.14, the
# system cuDNN, padded cases may now show the known padding-NaN class; replay any new
# finding on 9.19 too). corpora/gpu has no case on its buckets, so:
#  1. the ten cases of inplace/ (lengths 1024 - 4096 on their buckets, four layouts, gaps,
#     kv packing, GQA, windows, fp16 / bf16, forward and backward) and corpora/gpu's padded
#     cases (seqlens: bucketed and staged), probes on, through both builds at the same time
#     (system cuDNN); ci/verdict_compare.py here;
#  2. the 32k case (b1 h16 d128 causal fwd + bwd, --no-probes), new then old.
export DEVICE_NO_PACK=1
source ci/device_preamble.sh
pack() { (cd "$OUT" && tar czf all.tgz r); }
T0=$(date +%s)
for b in build-min build-new; do
  (LD_LIBRARY_PATH=$PWD/$b/lib:${LD_LIBRARY_PATH:-} timeout 100 $b/attnfuzz run docs/device/run-2026-12-07s/inplace/*.case corpora/gpu/*padding*.case --backend cudnn --json > $R/inplace-$b.jsonl 2> $R/inplace-$b.err; echo "$b inplace: exit $? $(grep -c '^{' $R/inplace-$b.jsonl) verdicts; $(tail -1 $R/inplace-$b.err)" >> $S) &
done
wait
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
  pack
done
echo "elapsed $(($(date +%s) - T0)) s" >> $S
cat $S
pack
rm -rf $R
