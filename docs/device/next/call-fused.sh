#!/usr/bin/env bash
# Device call (carry ["build-dev"] made from this tree, with test_oracle_gpu, test_gpu_ref,
# bench_oracle_gpu and bench_ref_gpu among its EXTRA_BINS; about 3 min): test_oracle_gpu whole
# (the fused magnitudes checked bit for bit) and test_gpu_ref (the reference's one staging
# array: its values bit for bit as before), the two benches at 32k (the host arrays mapped
# beside the forward pass: compare the tier's seconds with 5.23 s; the reference's staging mapped
# once shows in the 32k case's reference stage, 3.75 s before), then the 32k case end
# to end (b1 h16 d128 causal fwd + bwd, --no-probes) with its stage seconds.
source ci/device_preamble.sh
stamp test_oracle_gpu timeout 200 $B/test_oracle_gpu > $R/test_oracle_gpu.txt 2>&1
tail -3 $R/test_oracle_gpu.txt >> $S
stamp test_gpu_ref timeout 200 $B/test_gpu_ref > $R/test_gpu_ref.txt 2>&1
tail -3 $R/test_gpu_ref.txt >> $S
stamp bench-oracle timeout 120 $B/bench_oracle_gpu 32768 > $R/bench-oracle.txt 2>&1
stamp bench-ref timeout 120 $B/bench_ref_gpu 32768 > $R/bench-ref.txt 2>&1
cat $R/bench-oracle.txt $R/bench-ref.txt >> $S
c=$R/long-32768.case
printf 'dtype = bf16\nbatch = 1\nheads = 16\nseqlen = 32768\nhead_dim = 128\nlayout = bhsd\nmask = causal\nbackward = yes\nseed = 7\n' > $c
stamp long-32768 timeout 150 $B/attnfuzz run $c --backend cudnn --no-probes --json > $R/long-32768.json 2> $R/long-32768.err
head -1 $R/long-32768.json > $R/long-32768-verdict.json # the verdict line (a summary line follows)
python3 ci/bench/judge_stages.py $R/long-32768-verdict.json >> $S 2>&1 || head -c 1500 $R/long-32768.json >> $S
tail -30 $S
device_pack
