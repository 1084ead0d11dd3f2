#!/usr/bin/env bash
# Device call 2 (carry ["build-min"]; about 4 min): the tenth set's two unclassified FP8
# buckets (docs/cudnn-findings.md: O rows failing with a low log-sum-exp), each case replayed
# twice in separate processes on each cuDNN version (the system 9.14, the torch venv's 9.19),
# without probes, each run's failing rows kept; then one minimisation of the first within
# 90 s, its result replayed once on each version; then a sampling profile of the host side
# (about 1.5 min).
source ci/device_preamble.sh
B=${B:-build-min}
rows() { python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try: v = json.loads(line)
    except Exception: continue
    if "findings" not in v: continue
    print(" ", v.get("verdict"), v.get("engine"), [(f["kind"], f["tensor"], f["b"], f["h"], f["row"], f["col"], round(f["ratio"], 2)) for f in v["findings"][:6]])
' "$1"; }
for id in 2a52e7f230a9 c3dd6ebda312; do
  c=docs/device/next/fp8-lowlse-$id.case
  for k in 1 2; do
    stamp $id-914-$k timeout 60 $B/attnfuzz run $c --backend cudnn --no-probes --json > $R/$id-914-$k.jsonl 2>&1
    rows $R/$id-914-$k.jsonl >> $S
    if [ -n "$VENV_CUDNN" ]; then
      LD_LIBRARY_PATH="$VENV_CUDNN:$LD_LIBRARY_PATH" stamp $id-919-$k timeout 60 $B/attnfuzz run $c --backend cudnn \
        --no-probes --json > $R/$id-919-$k.jsonl 2>&1
      rows $R/$id-919-$k.jsonl >> $S
    fi
  done
done
c=docs/device/next/fp8-lowlse-2a52e7f230a9.case
stamp minimize timeout 120 $B/attnfuzz minimize $c -o $R/min.case --backend cudnn --max-runs 40 \
  --deadline 90 > $R/minimize.txt 2>&1
tail -3 $R/minimize.txt >> $S
if [ -f $R/min.case ]; then
  cat $R/min.case >> $S
  stamp min-914 timeout 60 $B/attnfuzz run $R/min.case --backend cudnn --no-probes --json > $R/min-914.jsonl 2>&1
  rows $R/min-914.jsonl >> $S
  [ -n "$VENV_CUDNN" ] && LD_LIBRARY_PATH="$VENV_CUDNN:$LD_LIBRARY_PATH" stamp min-919 timeout 60 $B/attnfuzz run \
    $R/min.case --backend cudnn --no-probes --json > $R/min-919.jsonl 2>&1 && rows $R/min-919.jsonl >> $S
fi
# a sampling profile of the judge's host side on the GPU path: the mix, one worker in
# process, mirror and prepare-ahead on, 60 s, a stack every 0.5 s (ci/bench/pmp.sh)
python3 ci/bench/gen_mix.py 300 /tmp/mix 2026 > /dev/null
ATTNFUZZ_CUDNN_MIRROR=2147483648 ATTNFUZZ_PREPARE_AHEAD=gpu stamp pmp timeout 75 bash ci/bench/pmp.sh $R/pmp.txt 0.5 \
  timeout 60 $B/attnfuzz run /tmp/mix/case-*.case --backend cudnn --in-process --json > $R/pmp-verdicts.jsonl 2> /dev/null
python3 ci/bench/pmp_fold.py $R/pmp.txt 60 > $R/pmp-fold.txt 2>&1
head -45 $R/pmp-fold.txt >> $S
python3 ci/bench/mix_stages.py $R/pmp-verdicts.jsonl >> $S 2>&1
gzip -f $R/pmp.txt
tail -40 $S
device_pack
