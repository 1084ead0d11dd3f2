#!/usr/bin/env bash
# Device call (carry ["build-new", "build-t"]; about 6 min; with SHORT=1 about 3 min, parts 1-3). build-new: a stripped Release
# attnfuzz whose GPU oracle tier forms its tile products on the fp64 tensor cores (DMMA,
# oracle/gpu/oracle_gpu_mma.cuh) when ATTNFUZZ_ORACLE_GPU_MMA=1 (m8n8k4) or 2 (m16n8k4),
# as fma chains with 0 (the default); build-t: the same tree's
# GPU tests and bench_oracle_gpu, stripped.
#  1. test_oracle_gpu (the three paths against MPFR), test_oracle_pipeline, test_criterion_gpu;
#  2. bench_oracle_gpu at 32k on the three paths (the tier's passes, its outputs' hash),
#     128k on the tensor cores;
#  3. the 32k case (b1 h16 d128 causal fwd + bwd, --no-probes) on the three paths (part 4);
#  4. the GPU corpus through both paths (verdicts, worst fp64-vs-MPFR gap / bound; part 3),
#     then the 128k case on the tensor cores;
export DEVICE_NO_PACK=1
B=build-new
source ci/device_preamble.sh
pack() { (cd "$OUT" && tar czf all.tgz r); }
T0=$(date +%s)
el() { echo "elapsed $(($(date +%s) - T0)) s" >> $S; pack; }
echo "== part 1" >> $S
for t in test_oracle_gpu test_oracle_pipeline test_criterion_gpu; do
  timeout 120 build-t/$t > $R/$t.txt 2>&1
  echo "$t: exit $? | $(grep -E 'checks passed|FAIL|failed|skip|worst' $R/$t.txt | tail -4 | tr '\n' ' ' | cut -c1-600)" >> $S
done
el
echo "== part 2" >> $S
for mma in 0 1 2; do
  ATTNFUZZ_ORACLE_GPU_MMA=$mma timeout 60 build-t/bench_oracle_gpu 32768 >> $S 2>&1
  echo "(mma=$mma)" >> $S
done
for mma in 1 2; do ATTNFUZZ_ORACLE_GPU_MMA=$mma timeout 60 build-t/bench_oracle_gpu 131072 >> $S 2>&1; echo "(mma=$mma)" >> $S; done
el
echo "== part 4" >> $S
for mma in 0 1 2; do
  ATTNFUZZ_ORACLE_GPU_MMA=$mma MIX_TIME=0 LONG_S="32768" LONG_TIME=45 LONG_FLAGS=--no-probes \
    OUT=$R/long-$mma timeout 60 bash ci/bench_judge.sh $B > $R/long-$mma.txt 2>&1
  echo "-- mma=$mma" >> $S
  grep -E "^attnfuzz s=|judge stages" $R/long-$mma.txt | cut -c1-400 >> $S
  rm -f $R/long-$mma/*.case
done
el
[ -n "${SHORT:-}" ] && { cat $S; pack; exit 0; } # SHORT=1: a short window, the tests and the 32k figures only
echo "== part 3" >> $S
for mma in 0 1 2; do
  ATTNFUZZ_ORACLE_GPU_MMA=$mma timeout 100 $B/attnfuzz run corpora/gpu/*.case --backend cudnn --json > $R/corpus-$mma.jsonl 2> $R/corpus-$mma.err
  python3 - $R/corpus-$mma.jsonl $mma >> $S 2>&1 <<'PY'
import json, sys, collections
vs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
c = collections.Counter(v.get("verdict") for v in vs)
js = [v["judge"] for v in vs if v.get("judge")]
gpu = [j for j in js if j.get("oracle_tier") == "gpu"]
print("corpus mma=%s: %d verdicts %s; GPU tier on %d; worst gap/bound %.3g; oracle s sum %.2f" % (sys.argv[2], len(vs), dict(c), len(gpu),
      max([j.get("cert_gap_over_bound", 0) for j in js] or [0]), sum(j.get("seconds", {}).get("oracle", 0) for j in js)))
PY
done
for mma in 1 2; do python3 ci/verdict_compare.py $R/corpus-0.jsonl $R/corpus-$mma.jsonl >> $S 2>&1; done
el
ATTNFUZZ_ORACLE_GPU_MMA=${MMA128:-2} MIX_TIME=0 LONG_S="131072" LONG_TIME=110 LONG_FLAGS=--no-probes OUT=$R/long-128k timeout 130 bash ci/bench_judge.sh $B > $R/long-128k.txt 2>&1
grep -E "^attnfuzz s=|judge stages" $R/long-128k.txt | cut -c1-400 >> $S
rm -f $R/long-128k/*.case
el
cat $S
pack
