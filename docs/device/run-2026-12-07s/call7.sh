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
cpu_run mix-j8 timeout 60 $B/attnfuzz run $(ls $mix/*.case | head -400) --backend cudnn --jobs 8 --json
gzip -f $R/*.jsonl
cat $S
pack
rm -rf $R
