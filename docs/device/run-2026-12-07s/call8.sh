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
cpu_run() { # LABEL JOBS COUNT SYNC
  local label=$1 jobs=$2 count=$3
  ATTNFUZZ_GPU_SYNC=$4 python3 -c 'import resource, subprocess, sys, time
t = time.monotonic(); subprocess.run(sys.argv[2:], stdout=open(sys.argv[1] + ".jsonl", "w"), stderr=open(sys.argv[1] + ".err", "w"))
r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_utime, r.ru_stime, time.monotonic() - t)' \
    $R/mix-$label timeout 90 $B/attnfuzz run $(ls $mix/*.case | head -$count) --backend cudnn --jobs $jobs --json > $R/time-$label.txt
  local n; n=$(grep -c '"verdict"' $R/mix-$label.jsonl)
  read -r u s e < <(tail -1 $R/time-$label.txt)
  python3 -c 'import sys; u,s,e,n=map(float,sys.argv[2:6]); print("%-14s %4d cases in %6.1f s: %5.2f cases/s, user %6.1f + sys %5.1f = %6.1f ms CPU/case (%.1f cores busy)" % (sys.argv[1], n, e, n/e, 1e3*u/n, 1e3*s/n, 1e3*(u+s)/n, (u+s)/e))' \
    "$label" "$u" "$s" "$e" "$n" >> $S 2>&1
}
for sync in auto block yield; do cpu_run j8-$sync 8 400 $sync; done
for sync in auto block; do cpu_run j1-$sync 1 120 $sync; done
echo "elapsed $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl
cat $S
device_pack
