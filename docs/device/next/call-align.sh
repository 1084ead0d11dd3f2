#!/usr/bin/env bash
# Device call (carry ["build-dev"]; about 4 min): the declared alignment
# (ATTNFUZZ_CUDNN_ALIGN, docs/cudnn-findings.md "Declared alignment"). The odd-stride
# reproducers of F2 / F3, the odd-gaps corpus case and H1's case, each under the default
# (every tensor declares the alignment its pointer and strides keep) and under
# ATTNFUZZ_CUDNN_ALIGN=16 (16 whatever the strides: the earlier graphs), on both cuDNN
# versions: does cuDNN decline a smaller declared alignment, or run and fail? Then the GPU
# corpus on both versions with the default (aligned cases must keep their verdicts).
source ci/device_preamble.sh
kinds() { python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try: v = json.loads(line)
    except Exception: continue
    if "verdict" not in v: continue
    r = (v.get("reason") or "")[:150]
    print("  %-48s %-10s %-22s %s" % (v["case"].split("/")[-1], v["verdict"], v.get("engine", ""), r))
' "$1"; }
odd="corpora/regression/cudnn-odd-stride-*.case corpora/gpu/fp16-gaps-odd-bshd-fwd.case docs/device/next/replay-timeout-9d325e1a036c-capacity.case"
for lib in sys venv; do
  L=""; [ $lib = venv ] && { [ -n "$VENV_CUDNN" ] || continue; L="$VENV_CUDNN:"; }
  for a in strides 16; do
    LD_LIBRARY_PATH="$L$LD_LIBRARY_PATH" ATTNFUZZ_CUDNN_ALIGN=$a stamp odd-$lib-$a timeout 150 $B/attnfuzz run $odd \
      --backend cudnn --engine all --no-probes --deadline 30 --jobs 4 --json > $R/odd-$lib-$a.jsonl 2> $R/odd-$lib-$a.err
    echo "== odd strides, cuDNN $lib, ATTNFUZZ_CUDNN_ALIGN=$a" >> $S
    kinds $R/odd-$lib-$a.jsonl >> $S
  done
done
corpus() { # LABEL LIBDIR
  local label=$1 lib=$2
  LD_LIBRARY_PATH="$lib${lib:+:}$LD_LIBRARY_PATH" stamp "corpus-$label" timeout 200 $B/attnfuzz run corpora/gpu/*.case \
    --backend cudnn --jobs 8 --json > $R/corpus-$label.jsonl 2> $R/corpus-$label.err
  python3 - $R/corpus-$label.jsonl "$label" >> $S 2>&1 <<'PY'
import collections, json, sys
n = collections.Counter()
for line in open(sys.argv[1]):
    try: v = json.loads(line)
    except Exception: continue
    if "verdict" in v: n[v["verdict"]] += 1
print("corpus", sys.argv[2], dict(n))
PY
}
corpus 914 ""
[ -n "$VENV_CUDNN" ] && corpus 919 "$VENV_CUDNN"
gzip -f $R/corpus-*.jsonl
tail -80 $S
device_pack
