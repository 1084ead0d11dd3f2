#!/usr/bin/env bash
# Device call 6 (carry [".whl/fe"]; at most 2 min, the session's last device seconds): the
# ALiBi batch question's bare script, seed 1 only (call-bare3.sh runs both seeds and attnfuzz).
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
timeout 45 bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install-fe.txt 2>&1
echo "== install-fe: exit $?" >> $S
( . /tmp/fe/env.sh && timeout 60 python3 docs/research-scripts/cudnn_alibi_pointwise.py 1 ) > $R/alibi-pointwise-1.txt 2>&1
echo "== cudnn_alibi_pointwise.py 1: exit $?" >> $S
grep -vE "Warning|warn" $R/alibi-pointwise-1.txt | tail -40 >> $S
tail -60 $S
device_pack
