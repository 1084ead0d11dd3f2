#!/usr/bin/env bash
# Device call 2, on the machine call 1 left warm (carry []): the cudnn campaign resumed for
# CAMP2_S s (with call 1's 240 s: the 10-minute campaign from the default seeds), its stats
# (cases, buckets, the s_kv shares above 1024 and 16384), then each bucket's minimised case
# replayed in a separate process until the call's deadline (DEADLINE_S after its start).
source ci/device_preamble.sh
t_start=$(date +%s)
DEADLINE_S=${DEADLINE_S:-560}
if [ ! -x "$B/attnfuzz" ] || [ ! -d /tmp/camp ]; then
  echo "call2: the machine went cold since call 1 ($B/attnfuzz or /tmp/camp missing)" >> $S
  device_pack; exit 0
fi
CAMP2_S=${CAMP2_S:-400}
stamp campaign-2 timeout $((CAMP2_S + 60)) $B/attnfuzz campaign --backend cudnn --workers-per-gpu 8 --resume \
  --time $CAMP2_S --total-time $((CAMP2_S + 45)) --out /tmp/camp > $R/campaign-2.txt 2>&1
tail -6 $R/campaign-2.txt >> $S
cp /tmp/camp/stats.json $R/stats.json 2>/dev/null
python3 - /tmp/camp/stats.json >> $S 2>&1 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
h = s.get("seqlen_kv_hist", {}); n = s.get("cases", 0) or 1
def above(lo):  # bins "a-b": those starting at or above lo
    return sum(v for k, v in h.items() if int(k.split("-")[0]) >= lo)
print("campaign: %d cases in %s s, s_kv >= 1024: %.1f %%, s_kv >= 16384: %.1f %%, buckets %s, findings %s, hangs %s" % (
    s.get("cases", 0), s.get("elapsed_s"), 100.0 * above(1024) / n, 100.0 * above(16384) / n, s.get("buckets"),
    s.get("findings"), s.get("hangs")))
print("s_kv", h)
PY
tar czf $R/camp-findings.tgz -C /tmp/camp findings 2>/dev/null
for d in /tmp/camp/findings/*/; do
  [ -d "$d" ] || continue
  left=$((DEADLINE_S - ($(date +%s) - t_start)))
  if [ $left -lt 20 ]; then echo "replays stopped at the call's deadline before $(basename $d)" >> $S; break; fi
  echo "bucket $(basename $d): $(head -c 300 $d/verdict.json 2>/dev/null | tr '\n' ' ')" >> $S
  timeout $((left < 60 ? left - 5 : 60)) $B/attnfuzz run "$d/finding.case" --backend cudnn > $R/replay-$(basename $d).txt 2>&1
  echo "  replay (separate process): exit $? $(tail -1 $R/replay-$(basename $d).txt | cut -c1-300)" >> $S
done
tail -90 $S
device_pack
