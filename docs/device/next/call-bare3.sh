#!/usr/bin/env bash
# Device call (about 2 min; carry [".whl/fe", "build-min"]; `B=build-min bash
# docs/device/next/call-bare3.sh`): is attnfuzz's pointwise ALiBi at batch 2 cuDNN's bug or
# this tree's description? cudnn_alibi_pointwise.py builds the same nodes as
# cudnn_graph_feat.c through the frontend (score modifier, no mask), batch 1 and 2, slopes per
# head and per (batch, head), signed and abs, with a materialised-bias control; seeds 1 and 2,
# each its own process. Then the failing seed through attnfuzz, both cuDNN versions, for the
# side-by-side figures.
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
if [ ! -f /tmp/fe/env.sh ]; then
  stamp install-fe bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install-fe.txt 2>&1
fi
for seed in 1 2; do
  ( . /tmp/fe/env.sh && timeout 120 python3 docs/research-scripts/cudnn_alibi_pointwise.py $seed ) \
    > $R/alibi-pointwise-$seed.txt 2>&1
  echo "== cudnn_alibi_pointwise.py $seed: exit $?" >> $S
  grep -vE "^\s|Traceback|Warning|warn" $R/alibi-pointwise-$seed.txt | tail -40 >> $S
done
CASE=corpora/seed-features/fp16-alibi-signed-batch-fwd.case
timeout 120 $B/attnfuzz run $CASE --backend cudnn --no-probes > $R/attnfuzz-914.txt 2>&1
echo "== attnfuzz (system cuDNN): exit $? $(head -3 $R/attnfuzz-914.txt | cut -c1-300)" >> $S
if [ -n "$VENV_CUDNN" ]; then
  LD_LIBRARY_PATH="$VENV_CUDNN:$LD_LIBRARY_PATH" timeout 120 $B/attnfuzz run $CASE --backend cudnn --no-probes \
    > $R/attnfuzz-919.txt 2>&1
  echo "== attnfuzz (cuDNN 9.19): exit $? $(head -3 $R/attnfuzz-919.txt | cut -c1-300)" >> $S
fi
tail -100 $S
device_pack
