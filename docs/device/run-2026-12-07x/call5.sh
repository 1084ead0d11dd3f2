#!/usr/bin/env bash
# Device call 5 (carry ["build-min"]; about 4 min): the cudnn backend's device mirror
# (kernels/gpu_mirror.h: a case's buffers kept on the device between its runs, only what
# changed copied) first on a GPU. test_gpu_mirror, then the cudnn tests that run many cases
# in one process (test_cudnn_sdpa, test_cudnn_ahead); the GPU corpus with the mirror off
# (ATTNFUZZ_CUDNN_MIRROR=0) and on: verdicts and engines must not move; the mix of 300 one
# worker, MIX_S (25) s each, off / on / off / on, with run 0's copy and kernel split.
source ci/device_preamble.sh
T0=$(date +%s)
A=$B/attnfuzz
for t in test_gpu_mirror test_cudnn_ahead test_cudnn_sdpa; do
  t1=$(date +%s)
  timeout 120 $B/$t > $R/$t.txt 2>&1
  echo "== $t: exit $?, $(($(date +%s) - t1)) s | $(tail -1 $R/$t.txt)" >> $S
done
for m in 0 2147483648; do
  ATTNFUZZ_CUDNN_MIRROR=$m stamp corpus-mirror$m timeout 80 $A run corpora/gpu/*.case --backend cudnn --jobs 8 --json > $R/corpus-mirror$m.jsonl 2> $R/corpus-mirror$m.err
done
python3 ci/verdict_compare.py $R/corpus-mirror0.jsonl $R/corpus-mirror2147483648.jsonl > $R/corpus-compare.txt 2>&1
echo "== corpus mirror off vs on: verdict_compare exit $?" >> $S
head -20 $R/corpus-compare.txt >> $S
python3 - $R/corpus-mirror0.jsonl $R/corpus-mirror2147483648.jsonl >> $S <<'PY'
import collections, json, sys
def load(p):
    return {x.get("case"): x for x in map(json.loads, (l for l in open(p) if l.startswith("{")))}
a, b = load(sys.argv[1]), load(sys.argv[2])
print("corpus verdicts:", len(a), len(b), dict(collections.Counter(x.get("verdict", "?") for x in a.values())))
print("engines: %d differ" % sum(a[k].get("engine") != (b.get(k) or {}).get("engine") for k in a))
print("findings text differ: %d" % sum(json.dumps(a[k].get("findings")) != json.dumps((b.get(k) or {}).get("findings")) for k in a))
PY
mix=/tmp/mix
python3 ci/bench/gen_mix.py 300 $mix 2026 > /dev/null
for b in off on offb onb; do
  m=2147483648; [ ${b:0:3} = off ] && m=0
  ATTNFUZZ_CUDNN_MIRROR=$m timeout ${MIX_S:-25} $A run $mix/case-*.case --backend cudnn --json > $R/mix-$b.jsonl 2> $R/mix-$b.err
  echo "== mix $b (mirror $m): $(grep -c '^{' $R/mix-$b.jsonl) cases in ${MIX_S:-25} s" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$b.jsonl 2>&1 | grep -E "^  (run|compare|probes|judge|host)" >> $S
done
echo "elapsed: $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl
tail -70 $S
device_pack
