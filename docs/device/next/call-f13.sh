#!/usr/bin/env bash
# Device call (carry ["build-dev"]; at most 9 min): F13 (docs/cudnn-findings.md), the FP8
# forward whose O rows no key's weight explains. The campaign's case replayed twice in
# separate processes on each cuDNN version (the system 9.14, the torch venv's 9.19), without
# probes, each run's failing rows kept (they moved from run to run in the campaign); then a
# minimisation on the system cuDNN within 240 s of runs (does a smaller s_q keep the large
# logits?), its result replayed once on each version.
source ci/device_preamble.sh
c=docs/device/next/fp8-F13-54facadc6e3d.case
rows() { python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try: v = json.loads(line)
    except Exception: continue
    if "findings" not in v: continue
    print(v.get("verdict"), v.get("engine"), [(f["kind"], f["tensor"], f["b"], f["h"], f["row"], f["col"], round(f["ratio"], 2)) for f in v["findings"][:6]])
' "$1"; }
for k in 1 2; do
  stamp f13-914-$k timeout 60 $B/attnfuzz run $c --backend cudnn --no-probes --json > $R/f13-914-$k.jsonl 2>&1
  rows $R/f13-914-$k.jsonl >> $S
  if [ -n "$VENV_CUDNN" ]; then
    LD_LIBRARY_PATH="$VENV_CUDNN:$LD_LIBRARY_PATH" stamp f13-919-$k timeout 60 $B/attnfuzz run $c --backend cudnn \
      --no-probes --json > $R/f13-919-$k.jsonl 2>&1
    rows $R/f13-919-$k.jsonl >> $S
  fi
done
stamp f13-minimize timeout 180 $B/attnfuzz minimize $c -o $R/f13-min.case --backend cudnn --max-runs 60 \
  --deadline 60 > $R/f13-minimize.txt 2>&1
tail -3 $R/f13-minimize.txt >> $S
if [ -f $R/f13-min.case ]; then
  cat $R/f13-min.case >> $S
  stamp f13-min-914 timeout 60 $B/attnfuzz run $R/f13-min.case --backend cudnn --no-probes --json > $R/f13-min-914.jsonl 2>&1
  rows $R/f13-min-914.jsonl >> $S
  [ -n "$VENV_CUDNN" ] && LD_LIBRARY_PATH="$VENV_CUDNN:$LD_LIBRARY_PATH" stamp f13-min-919 timeout 60 $B/attnfuzz run \
    $R/f13-min.case --backend cudnn --no-probes --json > $R/f13-min-919.jsonl 2>&1 && rows $R/f13-min-919.jsonl >> $S
fi
tail -40 $S
device_pack
