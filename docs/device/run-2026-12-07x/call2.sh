#!/usr/bin/env bash
# Device calls 2 and 3 (carry ["build-dev"]; about 6 min each, back to back on one warm
# machine): the 10-minute cudnn campaign from the default seeds in two halves, with the
# build that stops on a lost backend. Call 2: CAMP_S=270, REPLAY_S=20 (the first half's
# report); call 3: RESUME=1 CAMP_S=270 REPLAY_S=150 (the second half continues the same
# campaign folder, then its report replays every bucket in its own process). nvidia-smi
# before and after, and whether the campaign stopped on a lost backend.
source ci/device_preamble.sh
T0=$(date +%s)
nvidia-smi --query-gpu=name,pci.bus_id,memory.used,temperature.gpu,clocks_throttle_reasons.active --format=csv >> $S 2>&1
export DEVICE_NO_PACK=1
CAMP_NO_TESTS=1 CAMP_S=${CAMP_S:-270} REPLAY_S=${REPLAY_S:-20} bash docs/device/next/call-camp.sh > /dev/null 2>&1
echo "backend_lost (stats): $(python3 -c 'import json;s=json.load(open("/tmp/attnfuzz-camp/stats.json"));print(s.get("backend_lost"), s.get("elapsed_s"), s.get("cases"))' 2>&1)" >> $S
grep -E "became unavailable|lost/" $R/campaign.log | head -3 >> $S
ls /tmp/attnfuzz-camp/lost 2>/dev/null | head -3 >> $S
nvidia-smi --query-gpu=name,pci.bus_id,memory.used --format=csv >> $S 2>&1
unset DEVICE_NO_PACK
echo "elapsed: $(($(date +%s) - T0)) s" >> $S
tail -80 $S
device_pack
