#!/usr/bin/env bash
# Device call (carry ["build-dev"] made from this tree, with test_oracle_gpu among its EXTRA_BINS;
# about 2 min): test_oracle_gpu whole (the fused magnitudes checked bit for bit), then the
# 32k case end to end (b1 h16 d128 causal fwd + bwd, --no-probes) with its stage seconds.
source ci/device_preamble.sh
stamp test_oracle_gpu timeout 200 $B/test_oracle_gpu > $R/test_oracle_gpu.txt 2>&1
tail -3 $R/test_oracle_gpu.txt >> $S
c=$R/long-32768.case
printf 'dtype = bf16\nbatch = 1\nheads = 16\nseqlen = 32768\nhead_dim = 128\nlayout = bhsd\nmask = causal\nbackward = yes\nseed = 7\n' > $c
stamp long-32768 timeout 150 $B/attnfuzz run $c --backend cudnn --no-probes --json > $R/long-32768.json 2> $R/long-32768.err
python3 ci/bench/judge_stages.py $R/long-32768.json >> $S 2>&1 || head -c 1500 $R/long-32768.json >> $S
tail -30 $S
device_pack
