#!/usr/bin/env bash
# Device call 4 (carry ["build-min"], B=build-min; about 7 min): the cudnn campaign again with
# the build that stops on a lost backend (campaign/lost.c): call 3's GPU went away after about
# 150 s. nvidia-smi before and after; the campaign (CAMP_S, default 240) and its report
# (replays print the verdict's reason now); then the 32k long case (ci/bench_judge.sh's (b))
# when fewer than LONG_BEFORE_S (420) seconds have passed.
source ci/device_preamble.sh
T0=$(date +%s)
nvidia-smi --query-gpu=name,pci.bus_id,memory.used,temperature.gpu,clocks_throttle_reasons.active --format=csv >> $S 2>&1
export DEVICE_NO_PACK=1
CAMP_S=${CAMP_S:-240} REPLAY_S=${REPLAY_S:-90} bash docs/device/next/call-camp.sh > /dev/null 2>&1
echo "campaign exit (stats): $(python3 -c 'import json;s=json.load(open("/tmp/attnfuzz-camp/stats.json"));print(s.get("backend_lost"))' 2>&1)" >> $S
grep -E "became unavailable|lost/" $R/campaign.log | head -3 >> $S
ls /tmp/attnfuzz-camp/lost 2>/dev/null | head -3 >> $S
nvidia-smi --query-gpu=name,pci.bus_id,memory.used --format=csv >> $S 2>&1
unset DEVICE_NO_PACK
if [ $(($(date +%s) - T0)) -lt ${LONG_BEFORE_S:-420} ]; then
  OUT=$R/long MIX_TIME=0 LONG_S="32768" LONG_TIME=120 stamp long bash ci/bench_judge.sh $B > $R/long.txt 2>&1
  grep -vE "^\s*$" $R/long.txt | head -30 >> $S
  rm -rf $R/long/*.case
fi
echo "elapsed: $(($(date +%s) - T0)) s" >> $S
tail -80 $S
device_pack
