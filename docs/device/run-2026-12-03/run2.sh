#!/usr/bin/env bash
# device call 2 of 2026-12-03 (the new score-accumulation term in the criterion):
# MXFP8 ordinary 10 s leak check (warm cache), then the 10-minute campaigns in the
# background (collected by run3.sh), then in the foreground: the own-block LSE cases and
# FROST CP over torch efficient
set -u
B=build-dev
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python"
export XLA_PYTHON_CLIENT_PREALLOCATE=false
R=$OUT/r; mkdir -p $R; S=$R/summary.txt
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
MX="python3 -m attnfuzz_worker.examples.triton_mxfp8 --device cuda --recipe"
pc=ci/tests/pytargets_cases
mkdir -p /tmp/mxseed; cp $pc/mxfp8-*.case corpora/seed/mxfp8-causal.case /tmp/mxseed/
# 1. ordinary recipe: warm the Triton cache with one run, then a 10 s campaign
t0=$(date +%s%N)
$B/attnfuzz run corpora/seed/mxfp8-causal.case --backend worker:mx-ordinary --worker-cmd "$MX ordinary" > $R/mx-warm.txt 2>&1
echo "mx ordinary warm-up run: exit $? wall $(ms $t0) ms: $(head -1 $R/mx-warm.txt | cut -c1-200)" >> $S
t0=$(date +%s%N)
$B/attnfuzz campaign /tmp/mxseed --time 10 --seed 3 --backend worker:mx-ordinary --worker-cmd "$MX ordinary" --out $R/mx-ord-10s > $R/mx-ord-10s.log 2>&1
echo "mx ordinary 10 s: exit $? wall $(ms $t0) ms" >> $S
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print({k: s.get(k) for k in ("cases","elapsed_s","buckets","findings","time_to_first_finding_s")})' $R/mx-ord-10s/stats.json >> $S 2>&1
for f in $R/mx-ord-10s/findings/*/; do [ -d "$f" ] && { echo "  $(basename $f): $(head -2 $f/leak.txt 2>/dev/null | tr '\n' ' ' | cut -c1-300)"; grep -E '^(seqlen|head_dim|mask|window|align)' $f/finding.case | tr '\n' ' '; echo; } >> $S; done
# 2. the 10-minute campaigns, in the background (they outlive this call: setsid)
LONG_RUNS="torch-sdpa flex jax mx-ordinary mx-own-block" LONG_S=600 LONG_TOTAL_S=640 bash ci/device_long.sh start $B /tmp/bg >> $S 2>&1
# 3. the own-block LSE cases of 2026-12-02 under the new term
timeout 120 $B/attnfuzz run docs/device/run-2026-12-02/own-block-lse-*.case --backend worker:mx-own-block --worker-cmd "$MX own-block" > $R/own-lse.txt 2>&1
echo "own-block LSE cases: exit $?" >> $S; cut -c1-300 $R/own-lse.txt >> $S
# 4. FROST CP over torch efficient
OUT=$R/cp CP_TIMEOUT=200 timeout 430 bash ci/device_cp.sh $B > /dev/null 2>&1; echo "device_cp exit $?" >> $S
cat $R/cp/cp.txt >> $S 2>/dev/null; grep -v ': pass' $R/cp/cp-auto.out 2>/dev/null | cut -c1-260 | head -12 >> $S
cd $OUT && tar czf all.tgz r && rm -rf r
