#!/usr/bin/env bash
# Device call 1 (carry ["build-dev", "build-base"]; about 9 min): the cudnn backend's
# builds by phase, the enumeration of every engine left until a caller needs it, and the
# device arrays from the memory pool. build-base/attnfuzz: the tree before both (every
# engine enumerated at a graph's first use, cudaMalloc / cudaFree); build-dev: this tree
# (ATTNFUZZ_GPU_POOL=0 gives its arrays back to cudaMalloc / cudaFree). The cudnn tests
# that name engines and the GPU tests of the passes whose arrays moved to the pool, the
# GPU corpus through both builds (verdicts and default engines must not move),
# `--engine all` on three corpus cases through both (the same configs listed), the mix one
# worker base / new-pool0 / new twice (30 s each; the new build's verdicts carry the
# builds by phase), the judge bench (mix) when time is left.
source ci/device_preamble.sh
T0=$(date +%s)
for t in test_cudnn_sdpa test_cudnn_features test_cudnn_layouts test_oracle_gpu test_compare_gpu test_gpu_ref test_criterion_gpu; do
  timeout 120 build-dev/$t > $R/$t.txt 2>&1
  echo "== $t: exit $? | $(tail -1 $R/$t.txt)" >> $S
done
mkdir -p build-base/lib && cp -n build-dev/lib/* build-base/lib/ 2>/dev/null
for b in base new; do
  bin=build-dev/attnfuzz; [ $b = new ] || bin=build-base/attnfuzz
  stamp corpus-$b timeout 200 $bin run corpora/gpu/*.case --backend cudnn --jobs 8 --json > $R/corpus-$b.jsonl 2> /dev/null
  for c in $(ls corpora/gpu/*.case | head -3); do
    timeout 60 $bin run $c --backend cudnn --engine all --no-probes --json 2>/dev/null | python3 -c '
import json, sys
v = [json.loads(l) for l in sys.stdin if l.startswith("{")]
print(sys.argv[1], len(v), "configs:", " ".join(sorted(x.get("engine", "?") + "=" + x.get("verdict", x.get("kind", "?")) for x in v)))' "$(basename $c)" >> $R/all-$b.txt
  done
done
python3 ci/verdict_compare.py $R/corpus-base.jsonl $R/corpus-new.jsonl > $R/corpus-compare.txt 2>&1
echo "== corpus base vs new: verdict_compare exit $?" >> $S
head -30 $R/corpus-compare.txt >> $S
python3 - $R/corpus-base.jsonl $R/corpus-new.jsonl >> $S <<'PY'
import json, sys
def eng(p):
    return {x.get("case"): x.get("engine") for x in map(json.loads, (l for l in open(p) if l.startswith("{")))}
a, b = eng(sys.argv[1]), eng(sys.argv[2])
print("default engines: %d cases, %d differ" % (len(a), sum(a[k] != b.get(k) for k in a)))
PY
if cmp -s $R/all-base.txt $R/all-new.txt; then echo "== --engine all: same configs in both" >> $S
else echo "== --engine all: DIFFER" >> $S; cat $R/all-base.txt $R/all-new.txt >> $S; fi
mix=/tmp/mix
python3 ci/bench/gen_mix.py 100 $mix 2026 > /dev/null
for b in base new-pool0 new base2 new-pool0b new2; do
  bin=build-dev/attnfuzz; [ "${b#new}" = "$b" ] && bin=build-base/attnfuzz
  pool=1; [ "${b#new-pool0}" = "$b" ] || pool=0
  ATTNFUZZ_GPU_POOL=$pool timeout 30 $bin run $mix/case-*.case --backend cudnn --json > $R/mix-$b.jsonl 2> $R/mix-$b.err
  echo "== mix $b ($bin): $(grep -c '^{' $R/mix-$b.jsonl) cases in 30 s" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$b.jsonl >> $S 2>&1
done
[ $(($(date +%s) - T0)) -lt 400 ] && OUT=$R/bench N=100 MIX_TIME=30 MIX_JOBS=8 LONG_S="" \
  stamp bench bash ci/bench_judge.sh build-dev > $R/bench.txt 2>&1
grep -vE "^\s*$" $R/bench.txt | head -70 >> $S
gzip -f $R/mix-*.jsonl $R/corpus-*.jsonl
rm -rf $R/bench/mix
tail -150 $S
device_pack
