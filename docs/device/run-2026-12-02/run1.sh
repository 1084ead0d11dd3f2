#!/usr/bin/env bash
# device call 1 of 2026-12-02
set -u
B=build-dev
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python"
export XLA_PYTHON_CLIENT_PREALLOCATE=false
R=$OUT/r; mkdir -p $R
S=$R/summary.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' >> $R/gpu.txt 2>&1
# 1. MXFP8 ordinary: 10 s campaign, cold Triton cache
export TRITON_CACHE_DIR=/tmp/tcache; rm -rf /tmp/tcache
pc=ci/tests/pytargets_cases
mkdir -p /tmp/mxseed; cp $pc/mxfp8-causal-s64-d16.case $pc/mxfp8-block-range-s64-d16.case corpora/seed/mxfp8-causal.case /tmp/mxseed/
MX="python3 -m attnfuzz_worker.examples.triton_mxfp8 --device cuda --recipe"
for rep in cold warm; do
  t0=$(date +%s%N)
  $B/attnfuzz campaign /tmp/mxseed --time 10 --seed 1 --backend worker:mx-ordinary --worker-cmd "$MX ordinary" --out $R/mx-ord-$rep > $R/mx-ord-$rep.log 2>&1
  echo "mx ordinary 10s $rep: exit $? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" >> $S
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print({k: s.get(k) for k in ("cases","elapsed_s","buckets","findings","declined","time_to_first_finding_s")})' $R/mx-ord-$rep/stats.json >> $S 2>&1
  ls $R/mx-ord-$rep/findings >> $S 2>&1
done
# 2. transport cost: 19 forward cases of corpora/gpu, torch efficient, no probes, shm vs cuda_ipc
for tr in shm cuda_ipc; do
  printf 'command = python3 -m attnfuzz_worker.examples.torch_sdpa\nname = torch-sdpa\ntimeout = 120\nstart_timeout = 120\ntransport = %s\n' $tr > /tmp/t-$tr.conf
  t0=$(date +%s%N)
  $B/attnfuzz run corpora/gpu/*fwd*.case --backend worker:torch-sdpa --engine efficient --no-probes --worker-config /tmp/t-$tr.conf > $R/tr-$tr.log 2>&1
  echo "transport $tr: exit $? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms, $(grep -c ': pass' $R/tr-$tr.log) pass $(grep -c ': declined' $R/tr-$tr.log) declined $(grep -c FINDING $R/tr-$tr.log) findings" >> $S
done
t0=$(date +%s%N); python3 -c 'import torch; torch.zeros(1,device="cuda")'; echo "python torch cuda init: $(( ($(date +%s%N) - t0) / 1000000 )) ms" >> $S
# 3. background: own-block 10 min, corpora through the three targets
LONG_RUNS="mx-own-block corpus-torch-sdpa corpus-flex corpus-jax" LONG_S=600 bash ci/device_long.sh start $B /tmp/bg >> $S 2>&1
# 4. CP FROST shapes over torch efficient, both transports
OUT=$R/cp CP_TIMEOUT=150 bash ci/device_cp.sh $B >> $S 2>&1
# 5. jax finding twice
for rep in 1 2; do
  $B/attnfuzz run corpora/gpu/bf16-thd-causal-bwd.case --backend worker:jax --engine xla --worker-cmd "python3 -m attnfuzz_worker.examples.jax_dpa --device cuda" > $R/jaxconf-$rep.log 2>&1
  echo "jax confirm $rep: exit $?: $(grep '\]: ' $R/jaxconf-$rep.log | cut -c1-250)" >> $S
done
# 6. mx ordinary 60 s (warm cache)
$B/attnfuzz campaign /tmp/mxseed --time 60 --seed 2 --backend worker:mx-ordinary --worker-cmd "$MX ordinary" --out $R/mx-ord-60 > $R/mx-ord-60.log 2>&1
echo "mx ordinary 60s: exit $?" >> $S
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print({k: s.get(k) for k in ("cases","elapsed_s","buckets","findings","declined","time_to_first_finding_s")})' $R/mx-ord-60/stats.json >> $S 2>&1
ls $R/mx-ord-60/findings >> $S 2>&1
cp $S $OUT/summary.txt
tar -C $OUT -czf $OUT/all.tgz r
