#!/usr/bin/env bash
# Device call 1 (carry ["build-dev"]; about 9 min): the GPU tests (the pool's one-time
# choice under pthread_once, the cudnn backend's builds ahead: test_cudnn_ahead), the GPU
# corpus on cuDNN 9.14 with the builds ahead and without (verdicts must not move), the mix
# one worker with ATTNFUZZ_CUDNN_BUILD_AHEAD=0 / 1 twice each (30 s, interleaved), then the
# judge bench (mix: torch loop, 1 worker, --jobs 8 and 16).
source ci/device_preamble.sh
T0=$(date +%s)
for t in test_cudnn_ahead test_gpu_ref test_oracle_gpu test_compare_gpu test_criterion_gpu test_cudnn_sdpa test_cudnn_features test_cudnn_layouts; do
  t1=$(date +%s)
  timeout 120 build-dev/$t > $R/$t.txt 2>&1
  echo "== $t: exit $?, $(($(date +%s) - t1)) s | $(tail -1 $R/$t.txt)" >> $S
done
grep -E "^case|CHECK" $R/test_cudnn_ahead.txt | head -20 >> $S
for m in 0 1; do
  ATTNFUZZ_CUDNN_BUILD_AHEAD=$m stamp corpus-ahead$m timeout 150 build-dev/attnfuzz run corpora/gpu/*.case --backend cudnn --jobs 8 --json > $R/corpus-ahead$m.jsonl 2> $R/corpus-ahead$m.err
done
python3 ci/verdict_compare.py $R/corpus-ahead0.jsonl $R/corpus-ahead1.jsonl > $R/corpus-compare.txt 2>&1
echo "== corpus without vs with the builds ahead: verdict_compare exit $?" >> $S
head -30 $R/corpus-compare.txt >> $S
python3 - $R/corpus-ahead0.jsonl $R/corpus-ahead1.jsonl >> $S <<'PY'
import collections, json, sys
def load(p):
    return {x.get("case"): x for x in map(json.loads, (l for l in open(p) if l.startswith("{")))}
a, b = load(sys.argv[1]), load(sys.argv[2])
print("corpus verdicts:", len(a), dict(collections.Counter(x.get("verdict", x.get("kind", "?")) for x in a.values())))
print("default engines: %d cases, %d differ" % (len(a), sum(a[k].get("engine") != (b.get(k) or {}).get("engine") for k in a)))
PY
mix=/tmp/mix
python3 ci/bench/gen_mix.py 100 $mix 2026 > /dev/null
for b in ahead0 ahead1 ahead0b ahead1b; do
  m=${b:5:1}
  ATTNFUZZ_CUDNN_BUILD_AHEAD=$m timeout 30 build-dev/attnfuzz run $mix/case-*.case --backend cudnn --json > $R/mix-$b.jsonl 2> $R/mix-$b.err
  echo "== mix $b: $(grep -c '^{' $R/mix-$b.jsonl) cases in 30 s" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$b.jsonl >> $S 2>&1
done
echo "elapsed before bench: $(($(date +%s) - T0)) s" >> $S
[ $(($(date +%s) - T0)) -lt 330 ] && OUT=$R/bench N=300 MIX_TIME=40 MIX_JOBS="8 16" LONG_S="" stamp bench bash ci/bench_judge.sh build-dev > $R/bench.txt 2>&1
grep -vE "^\s*$" $R/bench.txt | head -70 >> $S
echo "elapsed: $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl
rm -rf $R/bench/mix
tail -150 $S
device_pack
