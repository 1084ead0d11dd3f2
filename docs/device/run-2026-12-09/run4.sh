#!/usr/bin/env bash
# device call 4 of 2026-12-09: a cudnn campaign from the default seeds with 8 workers on the
# one GPU (the GPU work budget: long cases drawn as a matter of course), then the shares of
# s_kv > 1024 and > 16384 from stats.json's histogram, the buckets, and each bucket's
# finding run again with `attnfuzz repro` in a separate process.
source ci/device_preamble.sh
CAMP_S=${CAMP_S:-200}
stamp campaign timeout $((CAMP_S + 110)) $B/attnfuzz campaign --backend cudnn --time $CAMP_S \
  --total-time $((CAMP_S + 90)) --workers-per-gpu 8 --seed 20261209 --out $R/camp > $R/campaign.txt 2>&1
tail -5 $R/campaign.txt >> $S
python3 - $R/camp/stats.json >> $S 2>&1 <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
h = st.get('seqlen_kv_hist', {})
print('cases', st.get('cases'), 'declined', st.get('declined'), 'findings', st.get('findings'), 'buckets', st.get('buckets'),
      'crashes', st.get('crashes'), 'hangs', st.get('hangs'))
print('seqlen_kv_hist', h)
over1k = sum(v for k, v in h.items() if int(k.split('-')[0]) >= 1024)
over16k = sum(v for k, v in h.items() if int(k.split('-')[0]) >= 16384)
tot = sum(h.values())
print('s_kv >= 1024: %d of %d (%.1f %%); s_kv >= 16384: %d (%.1f %%)' % (over1k, tot, 100.0 * over1k / max(tot, 1), over16k, 100.0 * over16k / max(tot, 1)))
PY
t_end=$(($(date +%s) + ${REPRO_S:-150}))
for f in $R/camp/findings/*/finding.case; do
  [ -f "$f" ] || continue
  [ $(date +%s) -lt $t_end ] || { echo "repro: out of time for $f" >> $S; continue; }
  timeout 60 $B/attnfuzz repro "$f" --backend cudnn > $R/repro-$(basename $(dirname $f)).txt 2>&1
  echo "repro $(basename $(dirname $f)): exit $? $(grep -m1 'FINDING\|pass' $R/repro-$(basename $(dirname $f)).txt | cut -c1-200)" >> $S
done
ls $R/camp/findings >> $S 2>&1
tail -40 $S
device_pack
