#!/usr/bin/env bash
# device call 3 (issue 14): JAX cudnn forward copies of the 25 CP cases.
source ci/device_preamble.sh
OUT=$R/cp CP_TARGET=jax-dpa CP_ENGINE=cudnn CP_FORWARD=1 CP_TRANSPORTS=auto CP_TIMEOUT=300 \
  stamp "cp jax cudnn forward" bash ci/device_cp.sh $B
cat $R/cp/cp.txt >> $S
grep -h ": FINDING" $R/cp/*.out | cut -c1-300 | head -30 >> $S
grep -h ": declined" $R/cp/*.out | sed 's/^.*\]: //' | cut -c1-200 | sort | uniq -c | sort -rn | head -20 >> $S
device_pack
