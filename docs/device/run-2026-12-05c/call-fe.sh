#!/usr/bin/env bash
# Device call (`B=build-fe bash docs/device/next/call-fe.sh`, carry ["build-fe", ".whl/fe"]:
# build-fe holds build-dev's attnfuzz, lib and plugins; .whl/fe the nvidia-cudnn-frontend 1.32.0
# wheel from `ci/wheels/fetch.sh` (its cudnn-fe folder) with its SHA256SUMS): the cudnn-fe
# worker target's campaign, engine sdpa (cuDNN 9.19's Python frontend; without the CuTe DSL
# the d > 256 FROST kernels decline), seeds corpora/gpu + corpora/gpu-targets, CAMP_S seconds
# (default 470) into /tmp/fe-camp; with RESUME=1 on a machine still warm from the last call,
# the same campaign resumed for CAMP_S more. Then its stats (cases/s, buckets, the s_kv
# histogram) and every bucket's minimised case replayed in a separate process.
source ci/device_preamble.sh
FE=/tmp/fe
CAMP_S=${CAMP_S:-470}
if [ "${RESUME:-0}" = 1 ] && [ ! -d /tmp/fe-camp ]; then
  echo "call-fe: RESUME=1 but /tmp/fe-camp is gone (the machine went cold): a fresh campaign" >> $S
  RESUME=0
fi
if [ ! -f $FE/env.sh ]; then
  stamp install bash ci/wheels/install.sh $FE .whl/fe > $R/install.txt 2>&1
  grep -E "found|missing|wrote" $R/install.txt >> $S
fi
# shellcheck disable=SC1091
. $FE/env.sh
CONF=python/targets
stamp backends timeout 90 $B/attnfuzz backends --worker-configs $CONF > $R/backends.txt 2>&1
grep -E "^worker:cudnn-fe" $R/backends.txt | cut -c1-300 >> $S
resume=""
[ "${RESUME:-0}" = 1 ] && resume=--resume
stamp "campaign $resume" timeout $((CAMP_S + 60)) $B/attnfuzz campaign corpora/gpu corpora/gpu-targets \
  --backend worker:cudnn-fe --worker-config $CONF/cudnn-fe.conf --engine sdpa $resume \
  --time $CAMP_S --total-time $((CAMP_S + 40)) --seed 20261205 --out /tmp/fe-camp > $R/campaign.txt 2>&1
tail -5 $R/campaign.txt >> $S
cp /tmp/fe-camp/stats.json $R/stats.json 2>/dev/null
python3 - /tmp/fe-camp/stats.json >> $S 2>&1 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
n, e = s.get("cases", 0) or 0, s.get("elapsed_s") or 1
print("campaign cudnn-fe sdpa: %d cases in %.1f s = %.2f cases/s, declined %s, buckets %s, findings %s, crashes %s, hangs %s" % (
    n, e, n / e, s.get("declined"), s.get("buckets"), s.get("findings"), s.get("crashes"), s.get("hangs")))
print("s_kv", s.get("seqlen_kv_hist"))
PY
for d in /tmp/fe-camp/findings/*/; do
  [ -d "$d" ] || continue
  echo "bucket $(basename $d): $(head -c 300 $d/verdict.json 2>/dev/null | tr '\n' ' ')" >> $S
  timeout 90 $B/attnfuzz run $d/finding.case --backend worker:cudnn-fe --worker-config $CONF/cudnn-fe.conf \
    > $R/replay-$(basename $d).txt 2>&1
  echo "  replay (separate process): exit $? $(tail -1 $R/replay-$(basename $d).txt | cut -c1-300)" >> $S
done
tar czf $R/camp-findings.tgz -C /tmp/fe-camp findings 2>/dev/null
tail -60 $S
device_pack
