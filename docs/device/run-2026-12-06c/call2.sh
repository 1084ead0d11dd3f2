#!/usr/bin/env bash
# Device call 2 (carry ["build-dev"] with test_oracle_gpu, test_gpu_ref, test_compare_gpu and
# test_gpu_gen; about 8 min): the device-resident long cases' tests (the GPU generator's exact
# inputs, the kernel's values read from its stored buffer, the kept copies), then the long cases
# b1 h16 d128 causal fwd + bwd at 32k, 64k and 128k end to end (--no-probes) with their stage
# seconds and peak GPU memory.
source ci/device_preamble.sh
for t in test_gpu_gen test_compare_gpu test_oracle_gpu test_gpu_ref; do
  stamp $t timeout 200 $B/$t > $R/$t.txt 2>&1
  grep -hE "checks passed|FAIL|CHECK failed|exact inputs|from the stored" $R/$t.txt | tail -4 >> $S
done
OUT=$R/bench-long MIX_TIME=0 LONG_S="32768 65536 131072" LONG_TIME=330 LONG_FLAGS=--no-probes \
  stamp "bench long" timeout 540 bash ci/bench_judge.sh $B > $R/bench-long.txt 2>&1
cat $R/bench-long.txt >> $S
for s in 32768 65536 131072; do cp $R/bench-long/long-$s.json $R/ 2>/dev/null; tail -5 $R/bench-long/long-$s.err > $R/long-$s.err 2>/dev/null; done
rm -rf $R/bench-long
tail -40 $S
device_pack
