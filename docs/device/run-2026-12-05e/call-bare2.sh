#!/usr/bin/env bash
# Device call (about 3 min; carry [".whl/fe"], no attnfuzz build): the three bare scripts
# prepared on 2026-12-05 for the open cuDNN questions, each seed its own process:
#   cudnn_alibi_batch.py       ALiBi at batch 1 and 2 (the frontend's own, and a bias control)
#   cudnn_gqa_dk_partials.py   is a GQA dK the fp16 sum of fp16 per-head partials?
#   cudnn_fe_thd_gqa_lse.py    the thd GQA LSE of the group's second head
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
if [ ! -f /tmp/fe/env.sh ]; then
  stamp install-fe bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install-fe.txt 2>&1
fi
for s in cudnn_alibi_batch cudnn_gqa_dk_partials cudnn_fe_thd_gqa_lse; do
  for seed in 1 2; do
    ( . /tmp/fe/env.sh && timeout 100 python3 docs/research-scripts/$s.py $seed ) > $R/$s-$seed.txt 2>&1
    echo "== $s.py $seed: exit $?" >> $S
    grep -vE "^\s|Traceback|Warning|warn" $R/$s-$seed.txt | tail -8 >> $S
  done
done
tail -60 $S
device_pack
