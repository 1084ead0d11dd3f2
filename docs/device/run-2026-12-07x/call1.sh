#!/usr/bin/env bash
# Device call 1 (carry ["build-dev", "build-min-old"]; about 9 min): the build of ebf588a
# (inputs made on the host in one pass, the buffer screen on bits, one conversion path per
# storage type, the lost-backend stop) first on a GPU. Every GPU test (test_gpu_gen first:
# gen_core.h changed); the mix of 300, one worker, MIX_S (25) s each, old (c6f8433,
# build-min-old) / new / old / new, with the stages; the judge bench (torch loop, 1 worker,
# --jobs 8) when fewer than BENCH_BEFORE_S (330) s have passed.
source ci/device_preamble.sh
T0=$(date +%s)
A=$B/attnfuzz
for t in test_gpu_gen test_cudnn_ahead test_cudnn_sdpa test_gpu_ref test_oracle_gpu test_compare_gpu test_criterion_gpu test_cudnn_features test_cudnn_layouts; do
  t1=$(date +%s)
  timeout 120 $B/$t > $R/$t.txt 2>&1
  echo "== $t: exit $?, $(($(date +%s) - t1)) s | $(tail -1 $R/$t.txt)" >> $S
done
mix=/tmp/mix
python3 ci/bench/gen_mix.py 300 $mix 2026 > /dev/null
for b in old new oldb newb; do
  bin=$A; [ ${b:0:3} = old ] && bin=build-min-old/attnfuzz
  timeout ${MIX_S:-25} $bin run $mix/case-*.case --backend cudnn --json > $R/mix-$b.jsonl 2> $R/mix-$b.err
  echo "== mix $b ($bin): $(grep -c '^{' $R/mix-$b.jsonl) cases in ${MIX_S:-25} s" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$b.jsonl 2>&1 | grep -vE "^  builds " >> $S
done
echo "elapsed before bench: $(($(date +%s) - T0)) s" >> $S
if [ $(($(date +%s) - T0)) -lt ${BENCH_BEFORE_S:-330} ]; then
  OUT=$R/bench N=600 MIX_TIME=40 MIX_JOBS="8" LONG_S="" stamp bench bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
else
  echo "bench: not run (time)" > $R/bench.txt
fi
grep -vE "^\s*$" $R/bench.txt | grep -vE "^  (probe|checks) " | head -60 >> $S
rm -rf $R/bench/mix
echo "elapsed: $(($(date +%s) - T0)) s" >> $S
gzip -f $R/*.jsonl
tail -130 $S
device_pack
