#!/usr/bin/env bash
# Next device call 3, on the machine call 2 left warm: carry []. The cudnn campaign resumed
# for CAMP2_S s (part 2), then its stats (cases, buckets, the s_kv histogram's shares above
# 1024 and 16384) and every bucket's minimised case replayed in a separate process.
source ci/device_preamble.sh
if [ ! -x "$B/attnfuzz" ] || [ ! -d /tmp/camp ]; then
  echo "call3: the machine went cold since call 2 ($B/attnfuzz or /tmp/camp missing)" >> $S
  device_pack; exit 0
fi
CAMP2_S=${CAMP2_S:-270}
stamp campaign-2 timeout $((CAMP2_S + 60)) $B/attnfuzz campaign --backend cudnn --workers-per-gpu 8 --resume \
  --time $CAMP2_S --total-time $((CAMP2_S + 45)) --out /tmp/camp > $R/campaign-2.txt 2>&1
tail -6 $R/campaign-2.txt >> $S
cp /tmp/camp/stats.json $R/stats.json 2>/dev/null
python3 - /tmp/camp/stats.json >> $S 2>&1 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
h = s.get("seqlen_kv_hist", {}); n = s.get("cases", 0) or 1
def above(lo):  # power-of-two bins "a-b": the bins starting at or above lo
    return sum(v for k, v in h.items() if int(k.split("-")[0]) >= lo)
print("campaign: %d cases in %s s, s_kv >= 1024: %.1f %%, s_kv >= 16384: %.1f %%, buckets %s, findings %s" % (
    s.get("cases", 0), s.get("elapsed_s"), 100.0 * above(1024) / n, 100.0 * above(16384) / n, s.get("buckets"),
    s.get("findings")))
print("s_kv", h)
j = s.get("seqlen_kv_judged_hist") or {}
m = sum(j.values()) or 1
print("judged (not declined, no error): %d cases, s_kv >= 1024: %.1f %%, s_kv >= 16384: %.1f %%" % (sum(j.values()),
      100.0 * sum(v for k, v in j.items() if int(k.split("-")[0]) >= 1024) / m,
      100.0 * sum(v for k, v in j.items() if int(k.split("-")[0]) >= 16384) / m))
PY
for d in /tmp/camp/findings/*/; do
  [ -d "$d" ] || continue
  c=$d/finding.case
  echo "bucket $(basename $d): $(head -c 300 $d/verdict.json 2>/dev/null | tr '\n' ' ')" >> $S
  timeout 60 $B/attnfuzz run "$c" --backend cudnn > $R/replay-$(basename $d).txt 2>&1
  echo "  replay (separate process): exit $? $(tail -1 $R/replay-$(basename $d).txt | cut -c1-300)" >> $S
done
tar czf $R/camp-findings.tgz -C /tmp/camp findings 2>/dev/null
tail -90 $S
device_pack
