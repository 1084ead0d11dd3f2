#!/usr/bin/env bash
# Device call 1 (carry ["build-dev"]; about 8 min): the build lock held per build step (not
# yet on a GPU). The GPU tests (test_cudnn_ahead and test_cudnn_sdpa first), the GPU corpus
# with the builds ahead and without (verdicts and engines must not move), the mix of 300
# (more than 30 s finishes) one worker ATTNFUZZ_CUDNN_BUILD_AHEAD=0 / 1 twice each,
# interleaved; the judge bench (torch loop, 1 worker, --jobs 8) when fewer than
# BENCH_BEFORE_S (300) seconds have passed; then a 20 s stack sample of one worker with the
# builds ahead (ci/bench/pmp.sh) when fewer than PMP_BEFORE_S (480) have passed.
source ci/device_preamble.sh
T0=$(date +%s)
A=$B/attnfuzz
for t in test_cudnn_ahead test_cudnn_sdpa test_gpu_ref test_oracle_gpu test_compare_gpu test_criterion_gpu test_cudnn_features test_cudnn_layouts; do
  t1=$(date +%s)
  timeout 120 $B/$t > $R/$t.txt 2>&1
  echo "== $t: exit $?, $(($(date +%s) - t1)) s | $(tail -1 $R/$t.txt)" >> $S
done
grep -E "^case [0-9]+: engine" $R/test_cudnn_ahead.txt | head -8 >> $S
for m in 0 1; do
  ATTNFUZZ_CUDNN_BUILD_AHEAD=$m stamp corpus-ahead$m timeout 100 $A run corpora/gpu/*.case --backend cudnn --jobs 8 --json > $R/corpus-ahead$m.jsonl 2> $R/corpus-ahead$m.err
done
python3 ci/verdict_compare.py $R/corpus-ahead0.jsonl $R/corpus-ahead1.jsonl > $R/corpus-compare.txt 2>&1
echo "== corpus without vs with the builds ahead: verdict_compare exit $?" >> $S
head -20 $R/corpus-compare.txt >> $S
python3 - $R/corpus-ahead0.jsonl $R/corpus-ahead1.jsonl >> $S <<'PY'
import collections, json, sys
def load(p):
    return {x.get("case"): x for x in map(json.loads, (l for l in open(p) if l.startswith("{")))}
a, b = load(sys.argv[1]), load(sys.argv[2])
print("corpus verdicts:", len(a), dict(collections.Counter(x.get("verdict", x.get("kind", "?")) for x in a.values())))
print("default engines: %d cases, %d differ" % (len(a), sum(a[k].get("engine") != (b.get(k) or {}).get("engine") for k in a)))
PY
mix=/tmp/mix
python3 ci/bench/gen_mix.py 300 $mix 2026 > /dev/null
for b in ahead0 ahead1 ahead0b ahead1b; do
  m=${b:5:1}
  ATTNFUZZ_CUDNN_BUILD_AHEAD=$m timeout 30 $A run $mix/case-*.case --backend cudnn --json > $R/mix-$b.jsonl 2> $R/mix-$b.err
  echo "== mix $b: $(grep -c '^{' $R/mix-$b.jsonl) cases in 30 s" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$b.jsonl 2>&1 | grep -vE "^  (probe|checks) " >> $S
done
echo "elapsed before bench: $(($(date +%s) - T0)) s" >> $S
if [ $(($(date +%s) - T0)) -lt ${BENCH_BEFORE_S:-300} ]; then
  OUT=$R/bench N=600 MIX_TIME=40 MIX_JOBS="8" LONG_S="" stamp bench bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
else
  echo "bench: not run (time)" > $R/bench.txt
fi
grep -vE "^\s*$" $R/bench.txt | grep -vE "^  (probe|checks) " | head -60 >> $S
rm -rf $R/bench/mix
if [ $(($(date +%s) - T0)) -lt ${PMP_BEFORE_S:-480} ]; then
  stamp pmp bash ci/bench/pmp.sh $R/pmp.txt 2 timeout 20 $A run $mix/case-*.case --backend cudnn --json > $R/mix-pmp.jsonl 2> $R/mix-pmp.err
  python3 ci/bench/pmp_fold.py $R/pmp.txt > $R/pmp-fold.txt 2>&1
  head -40 $R/pmp-fold.txt >> $S
  gzip -f $R/pmp.txt
fi
echo "elapsed: $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl
tail -130 $S
device_pack
