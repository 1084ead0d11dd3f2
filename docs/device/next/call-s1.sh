#!/usr/bin/env bash
# Device call (B=build-fe, carry ["build-fe", ".whl/fe"]; at most 9 min): call-bare4.sh (the
# cuDNN hang H1 in a bare script, then the attnfuzz replay of its case on both cuDNN
# versions when no bare plan hangs) and call-f13.sh (F13's replays and minimisation), one pack.
export DEVICE_NO_PACK=1
source ci/device_preamble.sh
bash docs/device/next/call-bare4.sh > $R/call-bare4.out 2>&1
c=docs/device/next/replay-timeout-9d325e1a036c-capacity.case
if ! grep -q HUNG $R/bare-hang.txt 2>/dev/null; then
  stamp h1-914 timeout 60 $B/attnfuzz run $c --backend cudnn --no-probes --deadline 40 --json > $R/h1-914.jsonl 2>&1
  tail -c 600 $R/h1-914.jsonl >> $S
  [ -n "$VENV_CUDNN" ] && LD_LIBRARY_PATH="$VENV_CUDNN:$LD_LIBRARY_PATH" stamp h1-919 timeout 60 $B/attnfuzz run $c \
    --backend cudnn --no-probes --deadline 40 --json > $R/h1-919.jsonl 2>&1 && tail -c 600 $R/h1-919.jsonl >> $S
fi
bash docs/device/next/call-f13.sh > $R/call-f13.out 2>&1
unset DEVICE_NO_PACK
tail -60 $S
device_pack
