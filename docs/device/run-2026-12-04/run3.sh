#!/usr/bin/env bash
# device call 3: MXFP8 ordinary 10 s campaigns with the worker's lazy imports (the
# availability probe's worker no longer imports torch / triton); the unexplained torch,
# flex and jax finding cases of 2026-12-03 re-run alone on every engine of their target.
set -u
B=build-dev
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python"
export XLA_PYTHON_CLIENT_PREALLOCATE=false
R=$OUT/r; mkdir -p $R; S=$R/summary.txt
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
MX="python3 -m attnfuzz_worker.examples.triton_mxfp8 --device cuda --recipe"
pc=ci/tests/pytargets_cases
F=docs/device/run-2026-12-03/findings
mkdir -p /tmp/mxall
cp $pc/mxfp8-*.case corpora/seed/mxfp8-causal.case /tmp/mxall/
t0=$(date +%s%N)
$B/attnfuzz run /tmp/mxall/*.case --backend worker:mx-ordinary --worker-cmd "$MX ordinary" > $R/mx-warm.txt 2>&1
echo "warm-up run of 7 seeds (cold Triton cache): exit $? wall $(ms $t0) ms" >> $S
for seed in 1 2 3 4 5 6 7 8; do
  d=$R/c-$seed
  ATTNFUZZ_WORKER_TRACE=$R/trace-$seed.txt $B/attnfuzz campaign /tmp/mxall --time 10 --seed $seed \
      --backend worker:mx-ordinary --worker-cmd "$MX ordinary" --out $d > $d.log 2>&1
  echo "10 s campaign seed $seed: exit $?" >> $S
  python3 - $d/stats.json $R/trace-$seed.txt >> $S 2>&1 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
t0 = s["start_time_unix"]
starts = ["+%.2f" % (float(l.split()[0]) - t0) for l in open(sys.argv[2]) if " serve " in l or " hello " in l]
runs = [l.split() for l in open(sys.argv[2]) if " run " in l]
first = "+%.2f (%s s)" % (float(runs[0][0]) - t0, runs[0][1]) if runs else "none"
print("  ", {k: s.get(k) for k in ("cases", "declined", "buckets", "findings", "time_to_first_finding_s")},
      "worker start/hello at", " ".join(starts), "first run", first)
PY
done
for f in $d/findings/*/; do [ -d "$f" ] && { echo "  $(basename $f): $(head -3 $f/leak.txt 2>/dev/null | tr '\n' ' ' | cut -c1-300)"; grep -E '^(seqlen|head_dim|mask|window|align|data)' $f/finding.case | tr '\n' ' '; echo; } >> $S; done
# the unexplained finding cases, alone, every engine
TS="python3 -m attnfuzz_worker.examples.torch_sdpa"
timeout 200 $B/attnfuzz run $F/torch-sdpa-0da052e8c27f.case $F/torch-sdpa-d37396643d4d.case $F/torch-sdpa-4c4f2637f0b1.case \
    $F/torch-sdpa-f9bd3853c090.case $F/torch-sdpa-08ff3f6165aa.case $F/torch-sdpa-845bb7e972ba.case \
    --backend worker:torch-sdpa --engine all --worker-cmd "$TS" > $R/torch-all.txt 2>&1
echo "torch-sdpa finding cases, engine all: exit $?" >> $S; cut -c1-330 $R/torch-all.txt >> $S
timeout 150 $B/attnfuzz run $F/flex-*.case --backend worker:flex --engine all \
    --worker-cmd "python3 -m attnfuzz_worker.examples.flex_attention --device cuda" > $R/flex-all.txt 2>&1
echo "flex finding cases, engine all: exit $?" >> $S; cut -c1-330 $R/flex-all.txt >> $S
timeout 120 $B/attnfuzz run $F/jax-*.case --backend worker:jax --engine all \
    --worker-cmd "python3 -m attnfuzz_worker.examples.jax_dpa --device cuda" > $R/jax-all.txt 2>&1
echo "jax finding cases, engine all: exit $?" >> $S; cut -c1-330 $R/jax-all.txt >> $S
cd $OUT && rm -rf r/c-*/corpus r/c-*/current && tar czf all.tgz r && rm -rf r
