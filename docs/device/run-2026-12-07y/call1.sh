#!/usr/bin/env bash
# Device call 1 (carry ["build-min"]; about 9.5 min): three changes first on a GPU: freed host
# memory kept for the next allocation (ATTNFUZZ_HEAP_KEEP, util/heap.h: on by default; the mix's
# heap0 rows turn it off), and two off by default until this call: the cudnn backend's device mirror (ATTNFUZZ_CUDNN_MIRROR=N bytes;
# kernels/gpu_mirror.h: a case's buffers kept on the device between its runs, only what
# changed copied) and the next case prepared ahead (ATTNFUZZ_PREPARE_AHEAD=gpu;
# judge/prepare_ahead.h). test_gpu_mirror, then the cudnn tests that run many cases in one
# process with the mirror on (test_cudnn_sdpa, test_cudnn_ahead); the GPU corpus plain, with
# the mirror, with prepare-ahead: verdicts and engines must not move; the mix of 300 one
# worker, MIX_S (25) s each: heap0 / plain / mirror / ahead / both, twice, with the stages and run
# 0's copy and kernel split; then the judge bench (1 worker, --jobs 8) with both on, and a
# sampling profile of the host side (ci/bench/pmp.sh) while time is left.
source ci/device_preamble.sh
T0=$(date +%s)
A=$B/attnfuzz
for t in test_gpu_mirror test_cudnn_ahead test_cudnn_sdpa; do
  t1=$(date +%s)
  ATTNFUZZ_CUDNN_MIRROR=2147483648 timeout 120 $B/$t > $R/$t.txt 2>&1
  echo "== $t: exit $?, $(($(date +%s) - t1)) s | $(tail -1 $R/$t.txt)" >> $S
done
for v in plain mirror ahead; do
  m=0; a=0; [ $v = mirror ] && m=2147483648; [ $v = ahead ] && a=gpu
  ATTNFUZZ_CUDNN_MIRROR=$m ATTNFUZZ_PREPARE_AHEAD=$a stamp corpus-$v timeout 80 $A run corpora/gpu/*.case --backend cudnn --jobs 8 --json > $R/corpus-$v.jsonl 2> $R/corpus-$v.err
done
for v in mirror ahead; do
  python3 ci/verdict_compare.py $R/corpus-plain.jsonl $R/corpus-$v.jsonl > $R/corpus-compare-$v.txt 2>&1
  echo "== corpus plain vs $v: verdict_compare exit $?" >> $S
  head -10 $R/corpus-compare-$v.txt >> $S
done
echo "corpus prepared ahead: $(grep -c '"prepared_ahead":true' $R/corpus-ahead.jsonl)" >> $S
python3 - $R/corpus-plain.jsonl $R/corpus-mirror.jsonl >> $S <<'PY'
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
for b in heap0 plain mirror ahead both heap02 plain2 mirror2 ahead2 both2; do
  m=0; a=0; k=536870912; case $b in mirror* | both*) m=2147483648 ;; esac; case $b in ahead* | both*) a=gpu ;; esac
  case $b in heap0*) k=0 ;; esac
  ATTNFUZZ_HEAP_KEEP=$k ATTNFUZZ_CUDNN_MIRROR=$m ATTNFUZZ_PREPARE_AHEAD=$a timeout ${MIX_S:-25} $A run $mix/case-*.case --backend cudnn --json > $R/mix-$b.jsonl 2> $R/mix-$b.err
  echo "== mix $b (heap keep $k, mirror $m, ahead $a): $(grep -c '^{' $R/mix-$b.jsonl) cases in ${MIX_S:-25} s" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$b.jsonl 2>&1 | grep -E "^  (run|compare|probes|judge|host|prepared|gen|oracle|reference|magnitudes)" >> $S
done
echo "elapsed before bench: $(($(date +%s) - T0)) s" >> $S
if [ $(($(date +%s) - T0)) -lt ${BENCH_BEFORE_S:-340} ]; then # the judge bench with both on
  ATTNFUZZ_CUDNN_MIRROR=2147483648 ATTNFUZZ_PREPARE_AHEAD=gpu OUT=$R/bench N=600 MIX_TIME=40 MIX_JOBS="8" LONG_S="${LONG_S-32768}" LONG_TIME=60 \
    stamp bench bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
  grep -E "cases/s|ratio|prepared|host time|s=32768|stages|peak" $R/bench.txt | cut -c1-400 >> $S
  rm -rf $R/bench/mix
fi
if [ $(($(date +%s) - T0)) -lt ${PMP_BEFORE_S:-500} ]; then # a sampling profile of the host side, both on
  ATTNFUZZ_CUDNN_MIRROR=2147483648 ATTNFUZZ_PREPARE_AHEAD=gpu stamp pmp timeout 60 bash ci/bench/pmp.sh $R/pmp.txt 0.5 \
    timeout 45 $A run $mix/case-*.case --backend cudnn --in-process --json > $R/pmp-verdicts.jsonl 2> /dev/null
  python3 ci/bench/pmp_fold.py $R/pmp.txt 60 > $R/pmp-fold.txt 2>&1
  head -45 $R/pmp-fold.txt >> $S
  gzip -f $R/pmp.txt
fi
echo "elapsed: $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl
tail -70 $S
device_pack
