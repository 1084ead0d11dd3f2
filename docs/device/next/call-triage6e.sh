#!/usr/bin/env bash
# Device call (carry ["build-dev"]; about 3 min): the aligned candidates of the H200 campaign of
# 2026-12-06 (docs/device/run-2026-12-06e/cases/), each replayed twice in separate processes on
# each cuDNN version, probes on: which verdict, which rows, on which version.
source ci/device_preamble.sh
rows() { python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try: v = json.loads(line)
    except Exception: continue
    if "verdict" not in v: continue
    print("  %-22s %-10s %-28s %s" % (v["case"].split("/")[-1], v["verdict"], v.get("engine", ""),
          [(f["kind"], f["tensor"], f["b"], f["h"], f["row"], f["col"], round(f["ratio"], 2)) for f in v.get("findings", [])[:3]]))
' "$1"; }
for k in 1 2; do
  for lib in sys venv; do
    L=""; [ $lib = venv ] && { [ -n "$VENV_CUDNN" ] || continue; L="$VENV_CUDNN:"; }
    LD_LIBRARY_PATH="$L$LD_LIBRARY_PATH" stamp tri-$lib-$k timeout 120 $B/attnfuzz run docs/device/run-2026-12-06e/cases/*.case \
      --backend cudnn --deadline 60 --jobs 4 --json > $R/tri-$lib-$k.jsonl 2> $R/tri-$lib-$k.err
    echo "== run $k, cuDNN $lib" >> $S
    rows $R/tri-$lib-$k.jsonl >> $S
  done
done
tail -50 $S
device_pack
