#!/usr/bin/env bash
# Device call 3 (carry ["build-dev", "build-base"]; about 6 min): the criterion terms'
# arrays left on the device. build-base/attnfuzz: the tree of call 1's build-dev (the
# probes' change); build-dev: this tree. The GPU tests of the changed passes, the GPU corpus
# through both builds (verdicts must not move), the mix one worker before / after / before,
# the judge bench (mix only).
source ci/device_preamble.sh
for t in test_criterion_gpu test_compare_gpu test_oracle_gpu; do
  timeout 90 build-dev/$t > $R/$t.txt 2>&1
  echo "== $t: exit $? | $(tail -1 $R/$t.txt)" >> $S
done
mix=/tmp/mix
python3 ci/bench/gen_mix.py 100 $mix 2026 > /dev/null
mkdir -p build-base/lib && cp -n build-dev/lib/* build-base/lib/ 2>/dev/null
for b in base new; do
  bin=build-dev/attnfuzz; [ $b = new ] || bin=build-base/attnfuzz
  stamp corpus-$b timeout 200 $bin run corpora/gpu/*.case --backend cudnn --jobs 8 --json > $R/corpus-$b.jsonl 2> /dev/null
done
python3 ci/verdict_compare.py $R/corpus-base.jsonl $R/corpus-new.jsonl > $R/corpus-compare.txt 2>&1
echo "== corpus base vs new: verdict_compare exit $?" >> $S
head -30 $R/corpus-compare.txt >> $S
# new-long: this tree with ATTNFUZZ_KEEP_ON_DEVICE=long (the arrays of long cases only kept)
for b in base new new-long; do
  bin=build-dev/attnfuzz; [ "${b#new}" = "$b" ] && bin=build-base/attnfuzz
  kod=1; [ $b = new-long ] && kod=long
  ATTNFUZZ_KEEP_ON_DEVICE=$kod timeout 30 $bin run $mix/case-*.case --backend cudnn --json > $R/mix-$b.jsonl 2> $R/mix-$b.err
  echo "== mix $b ($bin): $(grep -c '^{' $R/mix-$b.jsonl) cases in 30 s" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$b.jsonl >> $S 2>&1
done
OUT=$R/bench N=100 MIX_TIME=30 MIX_JOBS=8 LONG_S="" \
  stamp bench bash ci/bench_judge.sh build-dev > $R/bench.txt 2>&1
grep -vE "^\s*$" $R/bench.txt | head -70 >> $S
gzip -f $R/mix-*.jsonl $R/corpus-*.jsonl
rm -rf $R/bench/mix
tail -120 $S
device_pack
