#!/usr/bin/env bash
# Device call (carry ["build-dev"]; at most 4 min): bucket 9d325e1a036c of the campaign of
# 2026-12-06 (fp16 thd b1 s1x1, window 0,-1, scale 0.01, eng1_k24=2: LSE unwritten) failed
# in the campaign in 1.6 s but its replay ran past `timeout 60`. Replayed with a deadline
# of its own, so the stage marks say where the time goes, then without the probes.
source ci/device_preamble.sh
c=docs/device/next/replay-timeout-9d325e1a036c.case
stamp replay-deadline100 timeout 130 $B/attnfuzz run $c --backend cudnn --json --deadline 100 > $R/r1.txt 2>&1
cut -c1-700 $R/r1.txt | head -4 >> $S
stamp replay-noprobes timeout 90 $B/attnfuzz run $c --backend cudnn --json --no-probes --deadline 60 > $R/r2.txt 2>&1
cut -c1-700 $R/r2.txt | head -4 >> $S
stamp replay-again timeout 130 $B/attnfuzz run $c --backend cudnn --json --deadline 100 > $R/r3.txt 2>&1
cut -c1-400 $R/r3.txt | head -3 >> $S
tail -30 $S
device_pack
