#!/usr/bin/env bash
# device call 2 of 2026-12-02
set -u
B=build-dev
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python"
export XLA_PYTHON_CLIENT_PREALLOCATE=false
R=$OUT/r; mkdir -p $R
S=$R/summary.txt
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# 1. transport cost per case: one small and one large forward case, repeated, no probes
mkdir -p /tmp/tr
printf 'dtype = fp16\nbatch = 1\nheads = 2\nseqlen = 64\nhead_dim = 64\nmask = causal\nseed = 5\n' > /tmp/tr/small.case
printf 'dtype = bf16\nbatch = 2\nheads = 8\nseqlen = 1024\nhead_dim = 128\nmask = causal\nseed = 6\n' > /tmp/tr/large.case
small=$(for i in $(seq 60); do printf '/tmp/tr/small.case '; done)
large=$(for i in $(seq 12); do printf '/tmp/tr/large.case '; done)
for tr in shm cuda_ipc; do
  printf 'command = python3 -m attnfuzz_worker.examples.torch_sdpa\nname = torch-sdpa\ntimeout = 120\nstart_timeout = 120\ntransport = %s\n' $tr > /tmp/t-$tr.conf
  for sz in one small large; do
    case $sz in one) files=/tmp/tr/small.case ;; small) files=$small ;; large) files=$large ;; esac
    t0=$(date +%s%N)
    $B/attnfuzz run $files --backend worker:torch-sdpa --engine efficient --no-probes --worker-config /tmp/t-$tr.conf > $R/tr-$tr-$sz.log 2>&1
    echo "transport $tr $sz: exit $? wall $(ms $t0) ms, $(grep -c ': pass' $R/tr-$tr-$sz.log) pass" >> $S
  done
done
# 2. background runs inside this call: own-block campaign, the GPU corpus through three targets
LONG_RUNS="mx-own-block corpus-torch-sdpa corpus-flex corpus-jax" LONG_S=500 LONG_TOTAL_S=520 bash ci/device_long.sh start $B /tmp/bg >> $S 2>&1
# 3. MXFP8 ordinary, 10 s campaigns: cold Triton cache, then warm
export TRITON_CACHE_DIR=/tmp/tcache; rm -rf /tmp/tcache
pc=ci/tests/pytargets_cases
mkdir -p /tmp/mxseed; cp $pc/mxfp8-causal-s64-d16.case $pc/mxfp8-block-range-s64-d16.case corpora/seed/mxfp8-causal.case /tmp/mxseed/
mkdir -p /tmp/mxseed1; cp corpora/seed/mxfp8-causal.case /tmp/mxseed1/
MX="python3 -m attnfuzz_worker.examples.triton_mxfp8 --device cuda --recipe"
for rep in cold warm seedonly; do
  d=/tmp/mxseed; [ $rep = seedonly ] && d=/tmp/mxseed1
  t0=$(date +%s%N)
  $B/attnfuzz campaign $d --time 10 --seed 1 --backend worker:mx-ordinary --worker-cmd "$MX ordinary" --out $R/mx-ord-$rep > $R/mx-ord-$rep.log 2>&1
  echo "mx ordinary 10s $rep: exit $? wall $(ms $t0) ms" >> $S
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print({k: s.get(k) for k in ("cases","elapsed_s","buckets","findings","declined","time_to_first_finding_s")})' $R/mx-ord-$rep/stats.json >> $S 2>&1
  for f in $R/mx-ord-$rep/findings/*/; do [ -d "$f" ] && { echo "  $(basename $f): $(head -3 $f/leak.txt 2>/dev/null | tr '\n' ' ')"; grep -E '^(seqlen|head_dim|mask|window|align)' $f/finding.case | tr '\n' ' '; echo; } >> $S; done
done
# 4. LSE error per head dim (torch kernels vs fp64, in units of the allowance)
python3 .devrun/lse_d.py >> $S 2>&1
# 5. FROST shapes at cp 1 over torch efficient (is the CP LSE finding CP's?)
mkdir -p /tmp/f1
for f in corpora/gpu-cp/frost-cp4-a2a.case corpora/gpu-cp/frost-cp2-p2p.case corpora/gpu-cp/cudnn-frost-d512-a2a-cp4.case; do
  sed 's/^cp = .*/cp = 1/' $f > /tmp/f1/$(basename $f .case)-cp1.case
done
$B/attnfuzz run /tmp/f1/*.case corpora/gpu-cp/frost-cp4-a2a.case --backend worker:torch-sdpa --engine efficient --worker-cmd "python3 -m attnfuzz_worker.examples.torch_sdpa" > $R/frost-cp1.log 2>&1
grep '\]: ' $R/frost-cp1.log | cut -c1-300 >> $S
# 6. collect the background runs
W=$((570 - SECONDS)); [ $W -lt 10 ] && W=10; bash ci/device_long.sh collect /tmp/bg $R/long $W > /dev/null 2>&1; echo "collected after $SECONDS s" >> $S
cat $R/long/long.txt >> $S
cp $S $OUT/summary.txt
tar -C $OUT -czf $OUT/all.tgz r
