#!/usr/bin/env bash
# Device call (carry ["build-min"]; about 3 min): where a mix case's CPU time goes when
# several workers share the machine's cores. The mix of 600 (gen_mix.py seed 2026), plans
# warm (ATTNFUZZ_CUDNN_PLAN_DIR filled by an untimed 40 s run), then fixed case counts
# that finish on their own (so /usr/bin/time sees every worker's CPU seconds): 120 cases
# at one worker and 400 at --jobs 8, each with probes on and with --no-probes. Prints
# user + system CPU seconds per case next to wall seconds per case, and the stages'
# medians (mix_stages.py) of the probes-on runs. Also says which profilers the machine has.
B=${B:-build-min}
source ci/device_preamble.sh
T0=$(date +%s)
echo "profilers: $(for t in perf nsys ncu gdb cuda-gdb; do command -v $t > /dev/null && printf '%s ' $t; done)" >> $S
echo "cores: $(nproc)" >> $S
mix=/tmp/mix
python3 ci/bench/gen_mix.py 600 $mix 2026 > /dev/null
export ATTNFUZZ_CUDNN_PLAN_DIR=/tmp/plans
timeout 45 $B/attnfuzz run $mix/*.case --backend cudnn --json > /dev/null 2>&1
echo "plan folder after the warm-up: $(ls /tmp/plans | wc -l) files" >> $S
cpu_run() { # LABEL JOBS COUNT EXTRA...
  local label=$1 jobs=$2 count=$3; shift 3
  local files; files=$(ls $mix/*.case | head -$count)
  # the CPU seconds of every process the run waited for (workers included), as /usr/bin/time says them
  python3 -c 'import resource, subprocess, sys, time
t = time.monotonic(); subprocess.run(sys.argv[2:], stdout=open(sys.argv[1] + ".jsonl", "w"), stderr=open(sys.argv[1] + ".err", "w"))
r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_utime, r.ru_stime, time.monotonic() - t)' \
    $R/mix-$label timeout 200 $B/attnfuzz run $files --backend cudnn --jobs $jobs --json "$@" > $R/time-$label.txt
  local n; n=$(grep -c '"verdict"' $R/mix-$label.jsonl)
  read -r u s e < <(tail -1 $R/time-$label.txt)
  python3 -c 'import sys; u,s,e,n=map(float,sys.argv[2:6]); print("%-14s %4d cases in %6.1f s wall: %6.1f ms wall/case, user %6.1f + sys %5.1f = %6.1f ms CPU/case (%.1f cores busy)" % (sys.argv[1], n, e, 1e3*e/n, 1e3*u/n, 1e3*s/n, 1e3*(u+s)/n, (u+s)/e))' \
    "$label" "$u" "$s" "$e" "$n" >> $S 2>&1
}
cpu_run j1-probes 1 120
cpu_run j1-noprobes 1 120 --no-probes
cpu_run j8-probes 8 400
cpu_run j8-noprobes 8 400 --no-probes
for l in j1-probes j8-probes; do
  echo "== stages $l" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$l.jsonl 2>&1 | grep -vE "^  probe (batch|history|metadata|scales)" | head -48 >> $S
done
echo "elapsed $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl
cat $S
device_pack
