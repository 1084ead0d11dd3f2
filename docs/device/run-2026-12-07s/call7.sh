#!/usr/bin/env bash
# Device call (carry ["build-min", "build-33a", "build-33b"]; about 4 min; call6.sh cut to the
# device time left, most needed first, the pack remade after each part so a call stopped
# at its limit still brings back what it finished):
#  1. ../run-2026-12-07r/call3.sh: the GPU corpus before and after the case-field table.
#  2. The 32k case (b1 h16 d128 causal fwd + bwd, --no-probes) on the build with the MPFR
#     tier's weighted sums in integers: its certification beside the case was 12.0 s.
#  3. CPU seconds per mix case at --jobs 8, probes on (548 ms before), plans warmed for 30 s.
export DEVICE_NO_PACK=1
B=build-min
bash docs/device/run-2026-12-07r/call3.sh > /dev/null 2>&1
source ci/device_preamble.sh
pack() { (cd "$OUT" && tar czf all.tgz r); }
pack
MIX_TIME=0 LONG_S="32768" LONG_TIME=90 LONG_FLAGS=--no-probes OUT=$R/bench \
  stamp long timeout 110 bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
grep -E "^attnfuzz s=|judge stages" $R/bench.txt | cut -c1-400 >> $S
rm -f $R/bench/long/*.case
pack
mix=/tmp/mix
python3 ci/bench/gen_mix.py 600 $mix 2026 > /dev/null
export ATTNFUZZ_CUDNN_PLAN_DIR=/tmp/plans
timeout 30 $B/attnfuzz run $mix/*.case --backend cudnn --jobs 8 --json > /dev/null 2>&1
python3 -c 'import resource, subprocess, sys, time
t = time.monotonic(); subprocess.run(sys.argv[2:], stdout=open(sys.argv[1] + ".jsonl", "w"), stderr=open(sys.argv[1] + ".err", "w"))
r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_utime, r.ru_stime, time.monotonic() - t)' \
  $R/mix-j8 timeout 60 $B/attnfuzz run $(ls $mix/*.case | head -400) --backend cudnn --jobs 8 --json > $R/time-j8.txt
read -r u s e < <(tail -1 $R/time-j8.txt)
n=$(grep -c '"verdict"' $R/mix-j8.jsonl)
python3 -c 'import sys; u,s,e,n=map(float,sys.argv[1:5]); print("j8-probes %4d cases in %6.1f s wall: %6.1f ms wall/case, user %6.1f + sys %5.1f = %6.1f ms CPU/case (%.1f cores busy)" % (n, e, 1e3*e/n, 1e3*u/n, 1e3*s/n, 1e3*(u+s)/n, (u+s)/e))' \
  "$u" "$s" "$e" "$n" >> $S 2>&1
gzip -f $R/*.jsonl
cat $S
pack
rm -rf $R
