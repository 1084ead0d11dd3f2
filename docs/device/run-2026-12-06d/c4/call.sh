#!/usr/bin/env bash
# Device call (carry ["build-dev"]; at most 3 min): which probe's rerun of bucket
# 9d325e1a036c hangs in cuDNN (the stage mark's step), then the capacity probe's enlarged
# case (s_q = s_kv = 65 with lengths 1, thd gap 64) run alone without probes, twice.
source ci/device_preamble.sh
c=docs/device/next/replay-timeout-9d325e1a036c
stamp replay-deadline40 timeout 70 $B/attnfuzz run $c.case --backend cudnn --json --deadline 40 > $R/r1.txt 2>&1
cut -c1-400 $R/r1.txt | head -2 >> $S
for k in 1 2; do
  stamp capacity-case-$k timeout 60 $B/attnfuzz run $c-capacity.case --backend cudnn --json --no-probes --deadline 40 > $R/r2-$k.txt 2>&1
  cut -c1-400 $R/r2-$k.txt | head -2 >> $S
done
tail -20 $S
device_pack
