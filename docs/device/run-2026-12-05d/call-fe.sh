#!/usr/bin/env bash
# Device call (`B=build-fe bash docs/device/next/call-fe.sh`, carry ["build-fe", ".whl/fe"]:
# build-fe holds build-dev's attnfuzz, lib and plugins; .whl/fe the nvidia-cudnn-frontend 1.32.0
# wheel from `ci/wheels/fetch.sh` (its cudnn-fe folder) with its SHA256SUMS): the cudnn-fe
# worker target's campaign, engine sdpa (cuDNN 9.19's Python frontend; without the CuTe DSL
# the d > 256 FROST kernels decline), seeds corpora/gpu + corpora/gpu-targets, CAMP_S seconds
# (default 470) into /tmp/fe-camp; with RESUME=1 on a machine still warm from the last call,
# the same campaign resumed for CAMP_S more. Then its stats (cases/s, buckets, the s_kv
# histogram) and every bucket's minimised case replayed in a separate process.
source ci/device_preamble.sh
FE=/tmp/fe
CAMP_S=${CAMP_S:-470}
if [ "${RESUME:-0}" = 1 ] && [ ! -d /tmp/fe-camp ]; then
  echo "call-fe: RESUME=1 but /tmp/fe-camp is gone (the machine went cold): a fresh campaign" >> $S
  RESUME=0
fi
if [ ! -f $FE/env.sh ]; then
  stamp install bash ci/wheels/install.sh $FE .whl/fe > $R/install.txt 2>&1
  grep -E "found|missing|wrote" $R/install.txt >> $S
fi
# shellcheck disable=SC1091
. $FE/env.sh
CONF=python/targets
stamp backends timeout 90 $B/attnfuzz backends --worker-configs $CONF > $R/backends.txt 2>&1
grep -E "^worker:cudnn-fe" $R/backends.txt | cut -c1-300 >> $S
resume=""
[ "${RESUME:-0}" = 1 ] && resume=--resume
stamp "campaign $resume" timeout $((CAMP_S + 60)) $B/attnfuzz campaign corpora/gpu corpora/gpu-targets \
  --backend worker:cudnn-fe --worker-config $CONF/cudnn-fe.conf --engine sdpa $resume \
  --time $CAMP_S --total-time $((CAMP_S + 40)) --seed 20261205 --out /tmp/fe-camp > $R/campaign.txt 2>&1
tail -5 $R/campaign.txt >> $S
camp_report /tmp/fe-camp "cudnn-fe sdpa" --backend worker:cudnn-fe --worker-config $CONF/cudnn-fe.conf
tail -60 $S
device_pack
