#!/usr/bin/env bash
# device call 3 of 2026-12-10: (1) SageAttention's leak confirmed outside attnfuzz
# (docs/research-scripts/sage_block_leak.py, two processes, two seeds) and the campaign's
# minimised leak case re-run twice in separate attnfuzz processes; (2) the torch worker's
# input-mutation test on cuda; (3) ci/bench_judge.sh after the per-buffer repeats and the
# probes' row fast path, with the judge's check breakdown (N 150, 45 s per side, 8 jobs, 32k).
# Carry ["build-dev", ".whl/sage"].
source ci/device_preamble.sh
PYLIB=/tmp/attnfuzz-sage-site
python3 -m pip install -q --no-index --no-deps --target "$PYLIB" .whl/sage/*.whl > $R/install.txt 2>&1
export PYTHONPATH="$PYTHONPATH:$PYLIB"
for s in 1 2; do
  stamp "sage bare seed $s" timeout 90 python3 docs/research-scripts/sage_block_leak.py $s > $R/sage-bare-$s.txt 2>&1
  grep -v Warning $R/sage-bare-$s.txt | tail -4 >> $S
done
for k in 1 2; do
  stamp "sage leak case, process $k" timeout 60 $B/attnfuzz run docs/device/run-2026-12-10/sage-finding-ef7e2c368570.case \
    --backend worker:sage --worker-config python/targets/sage.conf > $R/sage-repro-$k.txt 2>&1
  cut -c1-400 $R/sage-repro-$k.txt | head -3 >> $S
done
stamp torch-mutation-cuda timeout 120 env TORCH_DEVICE=cuda bash ci/tests/test_worker_torch_mutation.sh $B/attnfuzz \
  > $R/torch-cuda.txt 2>&1
tail -4 $R/torch-cuda.txt >> $S
OUT=$R/bench N=150 MIX_TIME=45 MIX_JOBS=8 LONG_S="32768" LONG_TIME=80 LONG_FLAGS=--no-probes \
  stamp bench timeout 300 bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
cat $R/bench.txt >> $S
tail -70 $S
device_pack
