#!/usr/bin/env bash
# Device call (carry ["build-dev"]; about 5 min): ATTNFUZZ_CUDNN_ALIGN=frontend. The odd-stride
# reproducers and the odd-gaps corpus case (declined, with the frontend's reason), then a
# CAMP_S (150) s cudnn campaign from the default seeds with it: which buckets remain when the
# odd-stride class is declined.
source ci/device_preamble.sh
export ATTNFUZZ_CUDNN_ALIGN=frontend
stamp odd-frontend timeout 60 $B/attnfuzz run corpora/regression/cudnn-odd-stride-*.case corpora/gpu/fp16-gaps-odd-bshd-fwd.case \
  corpora/gpu/bf16-gaps-aligned-bhsd-bwd.case --backend cudnn --no-probes --jobs 4 --json > $R/odd-frontend.jsonl 2>&1
python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try: v = json.loads(line)
    except Exception: continue
    if "verdict" in v: print("  %-44s %-9s %s" % (v["case"].split("/")[-1], v["verdict"], (v.get("reason") or "")[:140]))
' $R/odd-frontend.jsonl >> $S
CAMP_S=${CAMP_S:-150}
dir=/tmp/attnfuzz-camp-fe
rm -rf $dir
stamp campaign timeout $((CAMP_S + 60)) $B/attnfuzz campaign --backend cudnn --workers-per-gpu 8 --time $CAMP_S \
  --total-time $((CAMP_S + 40)) --out $dir > $R/campaign.log 2>&1
tail -6 $R/campaign.log >> $S
REPLAY_S=${REPLAY_S:-45} camp_report $dir camp-frontend --backend cudnn
tail -60 $S
device_pack
