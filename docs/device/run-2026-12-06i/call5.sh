#!/usr/bin/env bash
# Device call 5 (carry ["build-min", "build-min-old"]; about 4 min): the inputs made on the host in
# one pass and the buffer screen on bits (437d5a1) against the build before (c6f8433, build-min-old):
# test_gpu_gen (the GPU generator still gives the host's bits: gen_core.h changed), then
# the mix of 300 one worker, MIX_S (25) s each, old / new / old / new, with the stages.
source ci/device_preamble.sh
T0=$(date +%s)
timeout 120 $B/test_gpu_gen > $R/test_gpu_gen.txt 2>&1
echo "== test_gpu_gen: exit $? | $(tail -1 $R/test_gpu_gen.txt)" >> $S
mix=/tmp/mix
python3 ci/bench/gen_mix.py 300 $mix 2026 > /dev/null
for b in old new oldb newb; do
  bin=build-min/attnfuzz; [ ${b:0:3} = old ] && bin=build-min-old/attnfuzz
  timeout ${MIX_S:-25} $bin run $mix/case-*.case --backend cudnn --json > $R/mix-$b.jsonl 2> $R/mix-$b.err
  echo "== mix $b ($bin): $(grep -c '^{' $R/mix-$b.jsonl) cases in ${MIX_S:-25} s" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$b.jsonl 2>&1 | grep -vE "^  (probe|checks|builds) " >> $S
done
echo "elapsed: $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl
tail -80 $S
device_pack
