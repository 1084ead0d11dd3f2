#!/usr/bin/env bash
# device call 2 (2026-12-11), on the machine call 1 left warm: carry [".whl/fa4fe/call2"].
#   1. the rest of the FA4 install; the bare script docs/research-scripts/fa4_findings.py in two
#      separate processes (seeds 1 and 2); the two minimised FA4 cases and the stale-padding
#      corpus case replayed by attnfuzz in two separate processes;
#   2. the cudnn campaign resumed for CAMP2_S s (part 2; part 1 in call 1), then its stats:
#      cases, buckets, the s_kv histogram (shares above 1024 and 16384), every bucket's
#      replay in a separate process (`attnfuzz run` of its minimised case).
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
if [ ! -x "$B/attnfuzz" ] || [ ! -d /tmp/camp ]; then
  echo "call2: the machine went cold since call 1 ($B/attnfuzz or /tmp/camp missing)" >> $S
  device_pack; exit 0
fi
stamp fa4-install2 timeout 150 bash ci/wheels/install.sh /tmp/fa4fe .whl/fa4fe/call2 > $R/fa4-install2.txt 2>&1
tail -3 $R/fa4-install2.txt >> $S
( . /tmp/fa4fe/env.sh
  for seed in 1 2; do
    stamp "fa4 bare seed $seed" timeout 150 python3 docs/research-scripts/fa4_findings.py $seed > $R/fa4-bare-$seed.txt 2>&1
    grep -v Warning $R/fa4-bare-$seed.txt | grep -v generate_mlir | tail -12 >> $S
  done
  for p in 1 2; do
    stamp "fa4 replay $p" timeout 150 $B/attnfuzz run docs/device/run-2026-12-10/fa4-finding-*.case \
      corpora/gpu/bf16-padding-causal-bwd.case --backend worker:fa4 --worker-config python/targets/fa4.conf \
      > $R/fa4-replay-$p.txt 2>&1
    grep -v Warning $R/fa4-replay-$p.txt | grep -v generate_mlir | cut -c1-400 >> $S
  done ) &
FA_PID=$!
CAMP2_S=${CAMP2_S:-270}
stamp campaign-2 timeout $((CAMP2_S + 60)) $B/attnfuzz campaign --backend cudnn --workers-per-gpu 8 --resume \
  --time $CAMP2_S --total-time $((CAMP2_S + 45)) --out /tmp/camp > $R/campaign-2.txt 2>&1
tail -6 $R/campaign-2.txt >> $S
wait $FA_PID
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
