#!/usr/bin/env bash
# device call 4 of 2026-12-03: the torch-sdpa cudnn leak buckets, each re-run twice in fresh
# processes (a new attnfuzz and a new worker each time)
set -u
B=build-dev
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python"
R=$OUT/r; mkdir -p $R; S=$R/summary.txt
F=docs/device/run-2026-12-03/findings
for c in $F/torch-sdpa-*.case; do
  for rep in 1 2; do
    timeout 100 $B/attnfuzz run $c --backend worker:torch-sdpa --worker-cmd "python3 -m attnfuzz_worker.examples.torch_sdpa" > $R/t.txt 2>&1
    echo "rep $rep exit $?: $(grep -E '\]: ' $R/t.txt | head -1 | cut -c1-330)" >> $S
  done
done
python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())' >> $S 2>&1
cd $OUT && tar czf all.tgz r && rm -rf r
