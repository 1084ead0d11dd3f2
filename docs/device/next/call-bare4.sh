#!/usr/bin/env bash
# Device call (carry [".whl/fe"]; at most 3 min): the cuDNN hang H1 in a bare script
# (docs/research-scripts/cudnn_thd_unaligned_hang.py, no attnfuzz): fp16 thd GQA 2:1 d 32,
# s 65 with lengths 1, 64 unused tokens, token rows one element longer than the heads,
# causal bottom-right band of one key, every ranked plan; then the same with aligned rows.
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
if [ ! -f /tmp/fe/env.sh ]; then
  stamp install-fe bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install-fe.txt 2>&1
fi
( . /tmp/fe/env.sh && timeout 150 python3 docs/research-scripts/cudnn_thd_unaligned_hang.py ) > $R/bare-hang.txt 2>&1
echo "== cudnn_thd_unaligned_hang.py: exit $?" >> $S
grep -vE "Warning|warn" $R/bare-hang.txt | tail -40 >> $S
tail -50 $S
device_pack
