#!/usr/bin/env bash
# Next device call 2: carry ["build-dev"]; the 10-minute cudnn campaign from the default
# seeds, part 1 (CAMP1_S s, 8 workers); call 3 resumes it on the warm machine.
source ci/device_preamble.sh
CAMP1_S=${CAMP1_S:-330}
stamp campaign-1 timeout $((CAMP1_S + 60)) $B/attnfuzz campaign --backend cudnn --workers-per-gpu 8 \
  --time $CAMP1_S --total-time $((CAMP1_S + 45)) --out /tmp/camp > $R/campaign-1.txt 2>&1
tail -6 $R/campaign-1.txt >> $S
cp /tmp/camp/stats.json $R/stats-1.json 2>/dev/null
tail -30 $S
device_pack
