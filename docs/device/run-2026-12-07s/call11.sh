#!/usr/bin/env bash
# Device call (carry ["build-min"]; about 4 min): where a mix case's CPU goes at one worker.
# The weighted sums in integers did not lower CPU ms per mix case on the GPU machine (call6:
# 533.8 at one worker, 552.1 at --jobs 8; call5 524.3 / 547.8), while the verdicts' cert
# seconds stayed at 10.8 s over 120 cases (wall, on its threads). A sampling profile
# (ci/bench/pmp.sh, every 0.5 s) of the first 120 mix cases at one worker, plans warm, folded
# by ci/bench/pmp_fold.py (the host pass threads come and go, so /proc's per-thread times
# cannot split it).
B=${B:-build-min}
source ci/device_preamble.sh
mix=/tmp/mix
python3 ci/bench/gen_mix.py 600 $mix 2026 > /dev/null
export ATTNFUZZ_CUDNN_PLAN_DIR=/tmp/plans
timeout 40 $B/attnfuzz run $mix/*.case --backend cudnn --jobs 8 --json > /dev/null 2>&1
timeout 150 bash ci/bench/pmp.sh $R/pmp-j1.txt 0.5 $B/attnfuzz run $(ls $mix/*.case | head -120) --backend cudnn --json > $R/pmp-j1.jsonl 2> $R/pmp-j1.err
echo "pmp samples: $(grep -c '^== sample' $R/pmp-j1.txt)" >> $S
python3 ci/bench/pmp_fold.py $R/pmp-j1.txt 45 >> $S 2>&1
gzip -f $R/pmp-j1.txt $R/pmp-j1.jsonl
cat $S
device_pack
