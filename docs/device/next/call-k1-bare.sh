#!/usr/bin/env bash
# Device call (carry [".whl/fe"]; about 2 min): K1 outside attnfuzz
# (docs/research-scripts/cudnn_kernel_cache_padded.py, seeds 1 and 2, each its own process, on
# the frontend wheel's cuDNN 9.19). Output: r/k1-bare-<seed>.txt, summarised in r/summary.txt.
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
[ -f /tmp/fe/env.sh ] || stamp install-fe bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install-fe.txt 2>&1
for seed in 1 2; do
  ( . /tmp/fe/env.sh && cd docs/research-scripts && timeout 150 python3 cudnn_kernel_cache_padded.py $seed ) \
    > $R/k1-bare-$seed.txt 2>&1
  echo "== cudnn_kernel_cache_padded.py $seed: exit $?" >> $S
  grep -vE "^\s|Traceback|Warning|warn|nanobind|refleaks" $R/k1-bare-$seed.txt | tail -12 >> $S
done
tail -40 $S
device_pack
