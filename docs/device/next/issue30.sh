#!/usr/bin/env bash
# The next device call for the judge on the device (prepared 2026-12-10, not yet run):
# the threaded host passes (util/parfor.h: reads, row summaries, input generation) measured
# on the H200 with the mix bench, the long cases 32k and 128k, then the 10-minute cudnn
# campaign from the default seeds with its s_kv histogram. Carry ["build-dev"]; about 9 min:
# split it at the campaign (CAMPAIGN=0 skips it; CAMPAIGN_ONLY=1 runs only it).
source ci/device_preamble.sh
if [ "${CAMPAIGN_ONLY:-0}" != 1 ]; then
  OUT=$R/bench N=300 MIX_TIME=60 MIX_JOBS=8 LONG_S="32768 131072" LONG_TIME=120 LONG_FLAGS=--no-probes \
    stamp bench timeout 540 bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
  cat $R/bench.txt >> $S
fi
if [ "${CAMPAIGN:-1}" != 0 ]; then
  stamp campaign timeout 660 $B/attnfuzz campaign --backend cudnn --workers-per-gpu 8 --time 600 --total-time 640 \
    --out $R/camp > $R/campaign.txt 2>&1
  tail -6 $R/campaign.txt >> $S
  python3 - $R/camp/stats.json >> $S 2>&1 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
h = s.get("seqlen_kv_hist", {}); n = s.get("cases", 0) or 1
def above(lo):  # power-of-two bins "a-b": count bins starting at or above lo
    return sum(v for k, v in h.items() if int(k.split("-")[0]) >= lo)
print("campaign: %d cases, s_kv >= 1024: %.1f %%, s_kv >= 16384: %.1f %%, buckets %s" % (
    s.get("cases", 0), 100.0 * above(1024) / n, 100.0 * above(16384) / n, s.get("buckets")))
PY
fi
tail -60 $S
device_pack
