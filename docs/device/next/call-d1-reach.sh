#!/usr/bin/env bash
# Device call (carry [".whl/fe"]; at most 6 min): D1's reach outside attnfuzz,
# `cudnn_dropout_band_bias.py --reach` (the forward over p, fp16 / bf16, d 32 / 128 and the
# backward check; processes on the system cuDNN and on the torch venv's, the script's own
# driver picks them). Output: r/bare-d1-reach.txt; its summary goes into r/summary.txt.
# (call-bare-py.sh passes no arguments to its script, hence these lines.)
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
out=$R/bare-d1-reach.txt
[ -f /tmp/fe/env.sh ] || stamp install-fe bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install-fe.txt 2>&1
( . /tmp/fe/env.sh && timeout 330 python3 docs/research-scripts/cudnn_dropout_band_bias.py --reach ) > $out 2>&1
echo "== d1-reach: exit $?" >> $S
if grep -q '^=== reach summary' $out; then
    sed -n '/^=== reach summary/,$p' $out >> $S
else # cut before its summary: the tail says where
    grep -vE "Warning|warn" $out | tail -60 >> $S
fi
tail -70 $S
device_pack
