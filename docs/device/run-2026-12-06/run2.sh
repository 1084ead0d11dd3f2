#!/usr/bin/env bash
# device call 2 (issue 14): FlexAttention forward copies of the CP cases that call 1 did not
# reach in its 200 s (compiles per sub-case shape), then JAX xla forward copies of all 25
# (JAX offers no backward from given O and LSE).
source ci/device_preamble.sh
rest=()
for c in corpora/gpu-cp/cudnn-p2p-*.case corpora/gpu-cp/frost-*.case corpora/seed-cp/frost-shapes-cp2.case; do
  rest+=("$c")
done
OUT=$R/cp CP_TARGET=flex-attention CP_FORWARD=1 CP_TRANSPORTS=auto CP_TIMEOUT=200 \
  stamp "cp flex forward (rest)" bash ci/device_cp.sh $B "${rest[@]}"
OUT=$R/cp CP_TARGET=jax-dpa CP_ENGINE=xla CP_FORWARD=1 CP_TRANSPORTS=auto CP_TIMEOUT=370 \
  stamp "cp jax xla forward" bash ci/device_cp.sh $B
cat $R/cp/cp.txt >> $S
grep -h ": FINDING" $R/cp/*.out | cut -c1-300 | head -30 >> $S
grep -h ": declined" $R/cp/*.out | sed 's/^.*\]: //' | cut -c1-200 | sort | uniq -c | sort -rn | head -20 >> $S
device_pack
