#!/usr/bin/env bash
# Device call (carry ["build-min"] with test_gpu_sync beside attnfuzz; about 5 min): how a
# waiting thread behaves (ATTNFUZZ_GPU_SYNC, kernels/gpu_buffers.cu) against the CPU seconds a
# mix case costs. CUDA's default spins on every wait while the process has fewer contexts
# than the machine has cores; at --jobs 8 the 16 cores were 13.4 busy (call5). test_gpu_sync
# first, then the mix of 600 with the plans warm: --jobs 8 over 400 cases and one worker over
# 120, each under auto, block and yield, with cases/s and CPU ms per case.
B=${B:-build-min}
source ci/device_preamble.sh
T0=$(date +%s)
[ -x $B/test_gpu_sync ] && { timeout 60 $B/test_gpu_sync > $R/test_gpu_sync.txt 2>&1; tail -8 $R/test_gpu_sync.txt >> $S; }
mix=/tmp/mix
python3 ci/bench/gen_mix.py 600 $mix 2026 > /dev/null
export ATTNFUZZ_CUDNN_PLAN_DIR=/tmp/plans
timeout 40 $B/attnfuzz run $mix/*.case --backend cudnn --jobs 8 --json > /dev/null 2>&1
for sync in auto block yield; do
  cpu_run mix-j8-$sync env ATTNFUZZ_GPU_SYNC=$sync timeout 90 $B/attnfuzz run $(ls $mix/*.case | head -400) --backend cudnn \
    --jobs 8 --json
done
for sync in auto block; do
  cpu_run mix-j1-$sync env ATTNFUZZ_GPU_SYNC=$sync timeout 90 $B/attnfuzz run $(ls $mix/*.case | head -120) --backend cudnn --json
done
echo "elapsed $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl
cat $S
device_pack
