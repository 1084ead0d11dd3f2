#!/usr/bin/env bash
# Device call 2 (carry [".whl/fe", "build-min"], B=build-min; about 7 min): K1
# (docs/cudnn-findings.md) outside attnfuzz: docs/research-scripts/cudnn_kernel_cache_padded.py
# seeds 1 and 2, each its own process, on the frontend wheel's cuDNN 9.19; then the two mix
# cases through attnfuzz with ATTNFUZZ_CUDNN_KERNEL_CACHE=1 on the torch venv's cuDNN 9.19
# (plain, twice each, then under compute-sanitizer memcheck); then the mix through the
# torch-sdpa worker's flash engine (the kernel the torch loop runs: nothing compiled per
# shape), 45 s.
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
T0=$(date +%s)
A=$B/attnfuzz
[ -f /tmp/fe/env.sh ] || stamp install-fe bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install-fe.txt 2>&1
for seed in 1 2; do
  ( . /tmp/fe/env.sh && cd docs/research-scripts && timeout 150 python3 cudnn_kernel_cache_padded.py $seed ) \
    > $R/k1-bare-$seed.txt 2>&1
  echo "== cudnn_kernel_cache_padded.py $seed: exit $?" >> $S
  grep -vE "^\s|Traceback|Warning|warn|nanobind|refleaks" $R/k1-bare-$seed.txt | tail -14 >> $S
done
for c in docs/device/next/k1-mix-case-0005.case docs/device/next/k1-mix-case-0013.case; do
  n=$(basename $c .case)
  for rep in 1 2; do
    LD_LIBRARY_PATH="$VENV_CUDNN:$LD_LIBRARY_PATH" ATTNFUZZ_CUDNN_KERNEL_CACHE=1 timeout 60 $A run $c --backend cudnn --json \
      > $R/k1-$n-$rep.jsonl 2> $R/k1-$n-$rep.err
    echo "== K1 9.19 kernel cache $n run $rep: exit $? | $(head -c 600 $R/k1-$n-$rep.jsonl | tr '\n' ' ')" >> $S
  done
  LD_LIBRARY_PATH="$VENV_CUDNN:$LD_LIBRARY_PATH" ATTNFUZZ_CUDNN_KERNEL_CACHE=1 timeout 110 \
    compute-sanitizer --tool memcheck --print-limit 5 $A run $c --backend cudnn --json > $R/k1-memcheck-$n.txt 2>&1
  echo "== K1 memcheck 9.19 $n: exit $? | $(grep -E 'ERROR SUMMARY' $R/k1-memcheck-$n.txt | tr '\n' ' ')" >> $S
  grep -m3 -E "Invalid|out of bounds" $R/k1-memcheck-$n.txt | cut -c1-300 >> $S
done
echo "elapsed before the torch worker: $(($(date +%s) - T0)) s" >> $S
mix=/tmp/mix
python3 ci/bench/gen_mix.py 300 $mix 2026 > /dev/null
timeout 45 $A run $mix/case-*.case --backend worker:torch-sdpa --engine flash --json > $R/mix-torchflash.jsonl 2> $R/mix-torchflash.err
echo "== mix through worker:torch-sdpa --engine flash: $(grep -c '^{' $R/mix-torchflash.jsonl) verdict lines in 45 s (with the worker's start) | $(tail -2 $R/mix-torchflash.err | tr '\n' ' ' | cut -c1-300)" >> $S
python3 ci/bench/mix_stages.py $R/mix-torchflash.jsonl >> $S 2>&1
python3 - $R/mix-torchflash.jsonl >> $S <<'PY'
import collections, json, sys
v = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("torch flash verdicts:", dict(collections.Counter(x.get("verdict", "?") for x in v)))
for x in v[:400]:
    if x.get("verdict") not in ("pass", "declined"):
        print("  ", x.get("case"), x.get("verdict"), str(x.get("findings", ""))[:200])
        break
PY
echo "elapsed: $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl
tail -80 $S
device_pack
