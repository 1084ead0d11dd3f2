#!/usr/bin/env bash
# device call 1 (issue 14), after the stored O's share of large cases' gradient row floors
# (harness/judge/criterion_large.c): its edge test on the H200 (the magnitude pass runs on
# the GPU there), CP with virtual ranks over torch-sdpa's math engine (4 dQ findings before,
# run-2026-12-05) and efficient engine, FlexAttention forward copies (no backward_given).
source ci/device_preamble.sh
for t in test_stored_o_rows test_compare_floors; do
  stamp "$t" timeout 60 $B/$t > $R/$t.txt 2>&1; tail -7 $R/$t.txt >> $S
done
for e in math:150 efficient:150; do
  OUT=$R/cp CP_ENGINE=${e%%:*} CP_TRANSPORTS=auto CP_TIMEOUT=${e##*:} stamp "cp torch-sdpa ${e%%:*}" bash ci/device_cp.sh $B
done
OUT=$R/cp CP_TARGET=flex-attention CP_FORWARD=1 CP_TRANSPORTS=auto CP_TIMEOUT=200 \
  stamp "cp flex forward" bash ci/device_cp.sh $B
cat $R/cp/cp.txt >> $S
grep -h ": FINDING" $R/cp/*.out | cut -c1-300 | head -30 >> $S
grep -h ": declined" $R/cp/*.out | sed 's/^.*\]: //' | cut -c1-200 | sort | uniq -c | sort -rn | head -20 >> $S
device_pack
