#!/usr/bin/env bash
# Device call (carry [".whl/fe"]; at most 5 min): D1 outside attnfuzz,
# docs/research-scripts/cudnn_dropout_band_bias.py (two processes on the system cuDNN, two on the
# torch venv's), its output in the summary.
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
[ -f /tmp/fe/env.sh ] || stamp install-fe bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install-fe.txt 2>&1
( . /tmp/fe/env.sh && timeout 200 python3 docs/research-scripts/cudnn_dropout_band_bias.py ) > $R/bare-d1.txt 2>&1
echo "== cudnn_dropout_band_bias.py: exit $?" >> $S
grep -vE "Warning|warn" $R/bare-d1.txt | tail -60 >> $S
tail -70 $S
device_pack
