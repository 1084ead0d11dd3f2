#!/usr/bin/env bash
# device call 1 (session of 2026-12-02, evening): what the MXFP8 ordinary campaign spends
# its first 10 s on, 10 s campaigns with a warm Triton cache; test_criterion_acc on the
# GPU build (large case: score magnitudes on the device); FROST CP over torch efficient
# with the LSE row budgets of large cases; the bare-torch cuDNN mask script.
set -u
B=build-dev
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python"
R=$OUT/r; mkdir -p $R; S=$R/summary.txt
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
MX="python3 -m attnfuzz_worker.examples.triton_mxfp8 --device cuda --recipe"
pc=ci/tests/pytargets_cases
mkdir -p /tmp/mxall /tmp/mxtwo
cp $pc/mxfp8-*.case corpora/seed/mxfp8-causal.case /tmp/mxall/
cp $pc/mxfp8-block-range-s64-d16.case corpora/seed/mxfp8-causal.case /tmp/mxtwo/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $S
# 0. what starting the worker's libraries costs
t0=$(date +%s%N); python3 -c 'import torch; torch.zeros(1, device="cuda")'; echo "import torch + cuda init: $(ms $t0) ms" >> $S
t0=$(date +%s%N); python3 -c 'import torch, triton; torch.zeros(1, device="cuda")'; echo "import torch, triton + cuda init: $(ms $t0) ms" >> $S
# 1. cold cache: every MXFP8 seed once (compiles each head-dim bucket), then again warm
for pass in cold warm; do
  t0=$(date +%s%N)
  $B/attnfuzz run /tmp/mxall/*.case --backend worker:mx-ordinary --worker-cmd "$MX ordinary" > $R/mx-run-$pass.txt 2>&1
  echo "mx ordinary run of 7 seeds ($pass Triton cache): exit $? wall $(ms $t0) ms" >> $S
  cut -c1-220 $R/mx-run-$pass.txt >> $S
done
# 2. 10 s campaigns, warm cache: all seeds, and the two leaking seeds
for corpus in mxall mxtwo; do
  for seed in 1 2 3; do
    d=$R/c-$corpus-$seed
    t0=$(date +%s%N)
    $B/attnfuzz campaign /tmp/$corpus --time 10 --seed $seed --backend worker:mx-ordinary --worker-cmd "$MX ordinary" --out $d > $d.log 2>&1
    echo "10 s campaign $corpus seed $seed: exit $? wall $(ms $t0) ms" >> $S
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print({k: s.get(k) for k in ("cases","declined","elapsed_s","buckets","findings","time_to_first_finding_s","mode")})' $d/stats.json >> $S 2>&1
    for f in $d/findings/*/; do [ -d "$f" ] && { echo "  $(basename $f): $(head -3 $f/leak.txt 2>/dev/null | tr '\n' ' ' | cut -c1-400)"; grep -E '^(seqlen|head_dim|mask|window|align|data)' $f/finding.case | tr '\n' ' '; echo; } >> $S; done
  done
done
# 3. the criterion test on the GPU build (score magnitudes of the large case on the device)
$B/test_criterion_acc > $R/acc.txt 2>&1; echo "test_criterion_acc: exit $?" >> $S; tail -3 $R/acc.txt >> $S
# 4. FROST CP over torch efficient, transport auto, and the bare torch mask script
OUT=$R/cp CP_TIMEOUT=240 CP_TRANSPORTS=auto timeout 300 bash ci/device_cp.sh $B > /dev/null 2>&1; echo "device_cp exit $?" >> $S
cat $R/cp/cp.txt >> $S 2>/dev/null; grep -v ': pass' $R/cp/cp-auto.out 2>/dev/null | cut -c1-260 | head -12 >> $S
grep ': pass' $R/cp/cp-auto.out 2>/dev/null | grep -i frost | cut -c1-200 >> $S
timeout 120 python3 docs/device/run-2026-12-04/torch_cudnn_mask.py > $R/torchmask.txt 2>&1; echo "torch_cudnn_mask: exit $?" >> $S
cd $OUT && rm -rf r/c-*/corpus r/c-*/current r/c-*/workers && tar czf all.tgz r && rm -rf r
