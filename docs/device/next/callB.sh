#!/usr/bin/env bash
# Device call (carry ["build-dev"], about 1 min): the 32k case (b1 h16 d128 causal fwd + bwd,
# --no-probes, as ci/bench_judge.sh writes it) under ci/bench/pmp.sh: every thread's stack of
# attnfuzz and its case child every 1.5 s, folded into shares by pmp_fold.py.
source ci/device_preamble.sh
c=$R/long-32768.case
printf 'dtype = bf16\nbatch = 1\nheads = 16\nseqlen = 32768\nhead_dim = 128\nlayout = bhsd\nmask = causal\nbackward = yes\nseed = 7\n' > $c
stamp "pmp 32k" timeout 200 bash ci/bench/pmp.sh $R/pmp-32k.txt 1.5 $B/attnfuzz run $c --backend cudnn --no-probes --json \
  > $R/pmp-32k.json 2>&1
python3 ci/bench/pmp_fold.py $R/pmp-32k.txt 70 > $R/pmp-32k-fold.txt 2>&1
head -60 $R/pmp-32k-fold.txt >> $S
gzip -f $R/pmp-32k.txt
tail -64 $S
device_pack
