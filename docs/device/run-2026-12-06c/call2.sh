#!/usr/bin/env bash
# Device call 2 (carry ["build-dev"] with test_oracle_gpu, test_gpu_ref, test_compare_gpu and
# test_gpu_gen; about 8 min): the device-resident long cases' tests (the GPU generator's exact
# inputs, the kernel's values read from its stored buffer, the kept copies), then the long cases
# b1 h16 d128 causal fwd + bwd at 32k, 64k and 128k end to end (--no-probes) with their stage
# seconds and peak GPU memory; the campaign's dQ candidate 439c66ae09ea with the element budgets.
source ci/device_preamble.sh
for t in test_gpu_gen test_compare_gpu test_oracle_gpu test_gpu_ref; do
  stamp $t timeout 200 $B/$t > $R/$t.txt 2>&1
  grep -hE "checks passed|FAIL|CHECK failed|exact inputs|from the stored" $R/$t.txt | tail -4 >> $S
done
# the campaign's dQ candidate 439c66ae09ea (window 1,1 over 54k keys), now judged with the
# element budgets (the visible pairs' work): both cuDNN versions, separate processes
for lib in "" "$VENV_CUDNN"; do
  LD_LIBRARY_PATH="$lib${lib:+:}$LD_LIBRARY_PATH" stamp "cand-439c66 ${lib:+venv}" timeout 120 $B/attnfuzz run \
    docs/device/run-2026-12-06c/cand-439c66ae09ea.case --backend cudnn --no-probes --json > $R/cand-439c66${lib:+-venv}.json 2>&1
  head -c 1500 $R/cand-439c66${lib:+-venv}.json >> $S; echo >> $S
done
OUT=$R/bench-long MIX_TIME=0 LONG_S="32768 65536 131072" LONG_TIME=280 LONG_FLAGS=--no-probes \
  stamp "bench long" timeout 460 bash ci/bench_judge.sh $B > $R/bench-long.txt 2>&1
cat $R/bench-long.txt >> $S
for s in 32768 65536 131072; do cp $R/bench-long/long-$s.json $R/ 2>/dev/null; tail -5 $R/bench-long/long-$s.err > $R/long-$s.err 2>/dev/null; done
rm -rf $R/bench-long
tail -40 $S
device_pack
