#!/usr/bin/env bash
# Device call (carry ["build-dev"]; about 2 min): every kind of ci/tests/peer_kinds.txt (the
# configurations the peer test suites test) through the cudnn backend on both cuDNN versions,
# probes on: each runs (its verdict) or declines (its reason).
source ci/device_preamble.sh
cases=$(awk -F' [|] ' '!/^#/ && NF >= 3 && $2 != "-" { print $2 }' ci/tests/peer_kinds.txt | sort -u)
for lib in sys venv; do
  L=""; [ $lib = venv ] && { [ -n "$VENV_CUDNN" ] || continue; L="$VENV_CUDNN:"; }
  LD_LIBRARY_PATH="$L$LD_LIBRARY_PATH" stamp kinds-$lib timeout 240 $B/attnfuzz run $cases --backend cudnn --jobs 8 \
    --deadline 120 --json > $R/kinds-$lib.jsonl 2> $R/kinds-$lib.err
  echo "== kinds, cuDNN $lib" >> $S
  python3 - ci/tests/peer_kinds.txt $R/kinds-$lib.jsonl >> $S <<'PY'
import json, sys
v = {}
for line in open(sys.argv[2]):
    try: x = json.loads(line)
    except Exception: continue
    if "verdict" in x: v[x["case"]] = x
for line in open(sys.argv[1]):
    if line.startswith("#") or line.count(" | ") < 2: continue
    kind, case, _ = line.rstrip("\n").split(" | ", 2)
    if case == "-": continue
    x = v.get(case)
    if not x: print("%-48s (no verdict)" % kind[:48]); continue
    r = (x.get("reason") or "")[:120] if x["verdict"] in ("declined", "error") else ""
    f = x.get("findings") or []
    print("%-48s %-10s %s%s" % (kind[:48], x["verdict"], r, (" " + f[0]["tensor"] + " " + f[0]["detail"][:80]) if f else ""))
PY
done
tail -100 $S
device_pack
