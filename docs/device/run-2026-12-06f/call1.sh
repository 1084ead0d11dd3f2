#!/usr/bin/env bash
# Device call 1 (carry ["build-dev", "build-base"]; about 5 min): the probes' host passes
# before (build-base/attnfuzz, the tree before) and after (build-dev) on the same mix and card,
# the judge bench with the new build, and a sampled profile of one worker's host time.
source ci/device_preamble.sh
mix=/tmp/mix
python3 ci/bench/gen_mix.py 100 $mix 2026 > /dev/null
mkdir -p build-base/lib && cp -n build-dev/lib/* build-base/lib/ 2>/dev/null
# the same 35 s of the mix, 1 worker, base then new then base again (the order's warm-up seen)
for b in base new base2; do
  bin=build-dev/attnfuzz; [ $b = new ] || bin=build-base/attnfuzz
  timeout 35 $bin run $mix/case-*.case --backend cudnn --json > $R/mix-$b.jsonl 2> $R/mix-$b.err
  echo "== mix $b ($bin): $(grep -c '^{' $R/mix-$b.jsonl) cases in 35 s" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$b.jsonl >> $S 2>&1
done
# the GPU corpus through both builds (system cuDNN), and the new build on the venv's cuDNN:
# the probes' change must leave every verdict as it was (ci/verdict_compare.py)
for b in base new; do
  bin=build-dev/attnfuzz; [ $b = new ] || bin=build-base/attnfuzz
  stamp corpus-$b timeout 200 $bin run corpora/gpu/*.case --backend cudnn --jobs 8 --json > $R/corpus-$b.jsonl 2> /dev/null
done
python3 ci/verdict_compare.py $R/corpus-base.jsonl $R/corpus-new.jsonl > $R/corpus-compare.txt 2>&1
echo "== corpus base vs new: verdict_compare exit $?" >> $S
head -30 $R/corpus-compare.txt >> $S
if [ -n "$VENV_CUDNN" ]; then
  LD_LIBRARY_PATH="$VENV_CUDNN:$LD_LIBRARY_PATH" stamp corpus-new-919 timeout 200 build-dev/attnfuzz run \
    corpora/gpu/*.case --backend cudnn --jobs 8 --json > $R/corpus-new-919.jsonl 2> /dev/null
fi
python3 - $R/corpus-*.jsonl >> $S 2>&1 <<'PY'
import collections, json, sys
for f in sys.argv[1:]:
    n = collections.Counter(json.loads(l).get("verdict") for l in open(f) if l.startswith("{"))
    print(f.split("/")[-1], dict(n))
PY
# the bench of docs/benchmarks.md with the new build
OUT=$R/bench N=100 MIX_TIME=35 MIX_JOBS=8 LONG_S="" stamp bench bash ci/bench_judge.sh build-dev > $R/bench.txt 2>&1
grep -vE "^\s*$" $R/bench.txt | head -60 >> $S
# a sampled profile: which host functions one worker's time goes to (new build)
timeout 60 bash ci/bench/pmp.sh $R/pmp-mix.txt 0.2 timeout 45 build-dev/attnfuzz run $mix/case-*.case \
  --backend cudnn --json > $R/pmp-run.jsonl 2>/dev/null
python3 ci/bench/pmp_fold.py $R/pmp-mix.txt 60 > $R/pmp-fold.txt 2>&1
echo "== pmp: $(grep -c '^== sample' $R/pmp-mix.txt) samples" >> $S
head -70 $R/pmp-fold.txt >> $S
gzip -f $R/pmp-mix.txt $R/mix-*.jsonl $R/corpus-*.jsonl
rm -rf $R/bench/mix
tail -150 $S
device_pack
