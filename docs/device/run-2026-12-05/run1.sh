#!/usr/bin/env bash
# device call 1 (issue 14): CP with virtual ranks over the worker targets other than
# torch-sdpa efficient (run 2026-12-04 has that one): torch-sdpa's math, flash and cudnn
# engines forward + backward over the FROST seed and corpora/gpu-cp (25 cases); JAX xla and
# cudnn forward copies of the same cases (JAX offers no backward from given O and LSE), and
# one backward case each to show the decline.
source ci/device_preamble.sh
for e in math:150 flash:90 cudnn:90; do
  OUT=$R/cp CP_ENGINE=${e%%:*} CP_TRANSPORTS=auto CP_TIMEOUT=${e##*:} stamp "cp torch-sdpa ${e%%:*}" bash ci/device_cp.sh $B
done
for e in xla:80 cudnn:60; do
  OUT=$R/cp CP_TARGET=jax-dpa CP_ENGINE=${e%%:*} CP_FORWARD=1 CP_TRANSPORTS=auto CP_TIMEOUT=${e##*:} \
    stamp "cp jax ${e%%:*} forward" bash ci/device_cp.sh $B
done
OUT=$R/cp-bwd CP_TARGET=jax-dpa CP_ENGINE=xla CP_TRANSPORTS=auto CP_TIMEOUT=40 \
  stamp "cp jax xla backward" bash ci/device_cp.sh $B corpora/gpu-cp/cudnn-p2p-causal-cp2-fp16.case
cat $R/cp/cp.txt $R/cp-bwd/cp.txt >> $S
grep -h ": FINDING" $R/cp/*.out $R/cp-bwd/*.out | cut -c1-300 | head -30 >> $S
grep -h ": declined" $R/cp/*.out $R/cp-bwd/*.out | sed 's/^.*\]: //' | cut -c1-200 | sort | uniq -c | sort -rn | head -20 >> $S
device_pack
