#!/usr/bin/env bash
# Device call (carry ["build-new"]: a stripped Release attnfuzz of 38f0c30 or later (the
# staging pool and its margin map), whose verdicts carry
# each part's thread CPU, judge.seconds.cpu; about 2 min): the 80 mix cases of call14 at one
# worker and 400 at --jobs 8, plans warm: the process's CPU per case (cpu_run) beside the
# threads' CPU per part (ci/bench/mix_stages.py's cpu lines), to find the ~340 ms per case
# that call14 could not take away (neither the probes, the certification, the wait mode nor
# the oracle's threads).
B=build-new
source ci/device_preamble.sh
mix=/tmp/mix
python3 ci/bench/gen_mix.py 600 $mix 2026 > /dev/null
export ATTNFUZZ_CUDNN_PLAN_DIR=/tmp/plans
timeout 30 $B/attnfuzz run $mix/*.case --backend cudnn --jobs 8 --json > /dev/null 2>&1
cpu_run j1 timeout 100 $B/attnfuzz run $(ls $mix/*.case | head -80) --backend cudnn --json
cpu_run j8 timeout 100 $B/attnfuzz run $(ls $mix/*.case | head -400) --backend cudnn --jobs 8 --json
for l in j1 j8; do
  echo "== $l $(tail -n 1 $R/$l.err)" >> $S
  python3 ci/bench/mix_stages.py $R/$l.jsonl 2>&1 | grep -E "^  (gen|oracle|magnitudes|reference|run|compare|probes|cert) |cpu " >> $S
  gzip -f $R/$l.jsonl
done
cat $S
device_pack
