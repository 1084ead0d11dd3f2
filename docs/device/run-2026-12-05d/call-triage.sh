#!/usr/bin/env bash
# Device call (about 4 min; `B=build-fe bash docs/device/run-2026-12-05d/call-triage.sh`, carry ["build-fe",
# ".whl/fe"] as for call-fe.sh): triage of three findings of 2026-12-05 that
# every engine of cuDNN 9.14 and 9.19 gives alike (docs/cudnn-findings.md, "Candidates of
# 2026-12-05"), each case in its own attnfuzz process, --no-probes:
#   1. query-broadcast bias backward (dQ ratio 603 on bh1s): the variants of call-bias.sh with
#      ATTNFUZZ_CUDNN_BIAS_ROW=stride0 (the bias row declared as s_q rows at stride 0, as torch
#      expands an attn_mask); if they pass, the extent-1 form is what the backward misreads;
#   2. ALiBi signed with per-batch slopes, s_q 8 < s_kv 24 (O ratio 2691): per-head slopes,
#      abs with per-batch slopes, s_q = s_kv, batch 1;
#   3. thd Q over padded bshd K/V, causal bottom-right (NaN in K/V's padding reaches O): K/V thd
#      too, forward only, no mask, top-left causal; and with ATTNFUZZ_CUDNN_KV_OFFSETS=padded (K/V
#      given ragged offsets at each sequence's padded start, no mixed ragged / non-ragged graph);
#   4. the bare script docs/research-scripts/cudnn_bias_row_bwd.py (no attnfuzz: cudnn-frontend's
#      pygraph with the bias row as extent 1, as stride 0, materialised, and torch's cuDNN SDPA),
#      seeds 1 and 2, each its own process.
source ci/device_preamble.sh
if [ ! -f /tmp/fe/env.sh ]; then
  stamp install bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install.txt 2>&1
fi
for seed in 1 2; do
  ( . /tmp/fe/env.sh && timeout 120 python3 docs/research-scripts/cudnn_bias_row_bwd.py $seed ) > $R/bare-$seed.txt 2>&1
  echo "== bare script, seed $seed: exit $?" >> $S
  tail -6 $R/bare-$seed.txt >> $S
done
V=$R/v
mkdir -p $V
b=corpora/seed-features/bf16-bias-bh1s-padding-bwd.case
cp $b $V/bias-a-bh1s.case
sed 's/^bias = bh1s/bias = 111s/' $b > $V/bias-c-111s.case
grep -vE "^seqlens_|^mask" $b > $V/bias-e-nopad.case
sed 's/^dtype = bf16/dtype = fp16/' $b > $V/bias-g-fp16.case
a=corpora/seed-features/fp16-alibi-signed-batch-fwd.case
cp $a $V/alibi-a.case
sed 's/^alibi_slopes = random_batch/alibi_slopes = random/' $a > $V/alibi-b-perhead.case
sed 's/^alibi = signed/alibi = abs/' $a > $V/alibi-c-abs.case
sed 's/^seqlen_q = 8/seqlen_q = 24/' $a > $V/alibi-d-sq-eq-skv.case
sed 's/^batch = 2/batch = 1/' $a > $V/alibi-e-batch1.case
sed 's/^alibi_slopes = random_batch/alibi_slopes = standard/' $a > $V/alibi-f-standard.case
t=corpora/gpu/bf16-thd-q-padded-kv-causal-br-bwd.case
cp $t $V/thd-a.case
sed 's/^layout_kv = bshd/layout_kv = same/' $t > $V/thd-b-kv-thd.case
sed 's/^backward = yes/backward = no/' $t > $V/thd-c-fwd.case
sed 's/^mask = causal_bottom_right/mask = none/' $t > $V/thd-d-nomask.case
sed 's/^mask = causal_bottom_right/mask = causal/' $t > $V/thd-e-causal-tl.case
one() { # LABEL ENV... : every case of the folder, one process each
  local label=$1; shift
  echo "== $label" >> $S
  for f in $V/*.case; do
    env "$@" timeout 40 $B/attnfuzz run $f --backend cudnn --no-probes 2>&1 | head -1 | cut -c1-240 >> $S
  done
}
one "9.14 default"
[ -n "$VENV_CUDNN" ] && one "9.19 default" LD_LIBRARY_PATH="$VENV_CUDNN:$LD_LIBRARY_PATH"
echo "== 9.14 ATTNFUZZ_CUDNN_BIAS_ROW=stride0, bias cases" >> $S
for f in $V/bias-*.case corpora/seed-features/fp16-bias-111s-fwd.case corpora/seed-cp/ag-bias-111s-padding-cp2.case; do
  ATTNFUZZ_CUDNN_BIAS_ROW=stride0 timeout 60 $B/attnfuzz run $f --backend cudnn --no-probes 2>&1 | head -1 | cut -c1-240 >> $S
done
echo "== 9.14 ATTNFUZZ_CUDNN_KV_OFFSETS=padded, thd cases (K/V offsets at each sequence's padded start)" >> $S
for f in $V/thd-a.case $V/thd-c-fwd.case $V/thd-d-nomask.case corpora/seed/fp16-thd-q-padded-kv.case; do
  ATTNFUZZ_CUDNN_KV_OFFSETS=padded timeout 60 $B/attnfuzz run $f --backend cudnn --no-probes 2>&1 | head -1 | cut -c1-240 >> $S
done
stamp "cpu" timeout 60 $B/attnfuzz run $V/*.case --backend cpu --no-probes > $R/cpu.txt 2>&1
tail -1 $R/cpu.txt >> $S
tail -80 $S
device_pack
