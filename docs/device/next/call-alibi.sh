#!/usr/bin/env bash
# Device call (about 2 min; carry [".whl/fe"], no attnfuzz build): the ALiBi batch question
# (docs/cudnn-findings.md, after F10): the bare script at seeds 1 and 2, each its own process.
source ci/device_preamble.sh
if [ ! -f /tmp/fe/env.sh ]; then
  stamp install-fe bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install-fe.txt 2>&1
fi
for seed in 1 2; do
  ( . /tmp/fe/env.sh && timeout 100 python3 docs/research-scripts/cudnn_alibi_batch.py $seed ) > $R/alibi-$seed.txt 2>&1
  echo "== cudnn_alibi_batch.py $seed: exit $?" >> $S
  grep -E "^batch|^cudnn|Error" $R/alibi-$seed.txt | tail -8 >> $S
done
tail -30 $S
device_pack
