#!/usr/bin/env bash
# Device call (about 4 min, carry ["build-dev"]): after the fix of the cuDNN description's
# feature extents (the bias' query rows and the ALiBi slopes' batch were read before the
# case's extents were set: 0, so a [1,1,s_q,s_kv] bias or per-batch slopes had no buffer):
#   - test_criterion_gpu (the row summaries' host reference now from the same budgets),
#     test_cudnn_features;
#   - the bias / ALiBi cases of the GPU corpus, the feature seeds and the bias-under-CP seeds
#     through cudnn on cuDNN 9.14 and 9.19;
#   - the query-broadcast bias backward mismatch (bf16-bias-bh1s-padding-bwd, dQ ratio 603 on
#     9.14): every engine, on both versions, and variants that each change one thing
#     (bias shape bhss / 111s / 1h1s, no padding, forward only, fp16) to say which part the
#     mismatch needs;
#   - the odd-stride gaps and thd-Q-over-padded-K/V corpus findings on every engine, both versions.
source ci/device_preamble.sh
for t in test_criterion_gpu test_cudnn_features; do
  stamp $t timeout 100 $B/$t > $R/$t.txt 2>&1
  grep -hE "bit for bit|checks passed|FAIL|CHECK failed|SKIP" $R/$t.txt | tail -8 >> $S
done
CASES="corpora/gpu/feat-bias-*.case corpora/gpu/feat-alibi-*.case corpora/seed-features/*bias*.case
  corpora/seed-features/*alibi*.case corpora/seed-cp/*-bias-*.case"
corpus() { # corpus LABEL [CUDNN_LIB_DIR]
  local lp=$LD_LIBRARY_PATH
  [ -n "${2:-}" ] && lp="$2:$lp"
  LD_LIBRARY_PATH=$lp stamp "corpus $1" timeout 100 $B/attnfuzz run $CASES --backend cudnn --jobs 8 > $R/corpus-$1.txt 2>&1
  tail -1 $R/corpus-$1.txt >> $S
  grep -vE ": pass|^run:" $R/corpus-$1.txt | cut -c1-260 >> $S
}
corpus 914
[ -n "$VENV_CUDNN" ] && corpus 919 "$VENV_CUDNN"
V=$R/v
mkdir -p $V
base=corpora/seed-features/bf16-bias-bh1s-padding-bwd.case
cp $base $V/a-as-is.case
sed 's/^bias = bh1s/bias = bhss/' $base > $V/b-bhss.case
sed 's/^bias = bh1s/bias = 111s/' $base > $V/c-111s.case
sed 's/^bias = bh1s/bias = 1h1s/' $base > $V/d-1h1s.case
grep -vE "^seqlens_|^mask" $base > $V/e-nopad.case
sed 's/^backward = yes/backward = no/' $base > $V/f-fwd.case
sed 's/^dtype = bf16/dtype = fp16/' $base > $V/g-fp16.case
grep -vE "^seqlens_" $base | sed 's/^mask = padding_causal/mask = causal/' > $V/h-causal-nopad.case
sed 's/^seqlen = 16/seqlen = 128/; /^seqlens_/d; s/^mask = .*/mask = none/' $base > $V/i-s128-nomask.case
for lib in 914 919; do
  lp=$LD_LIBRARY_PATH
  if [ $lib = 919 ]; then [ -n "$VENV_CUDNN" ] || continue; lp="$VENV_CUDNN:$lp"; fi
  LD_LIBRARY_PATH=$lp stamp "variants $lib" timeout 120 $B/attnfuzz run $V/*.case --backend cudnn --engine all --no-probes \
    > $R/variants-$lib.txt 2>&1
  echo "== variants on $lib" >> $S
  cut -c1-230 $R/variants-$lib.txt >> $S
done
# the two corpus findings on case kinds new to the corpus, every engine, both versions
for lib in 914 919; do
  lp=$LD_LIBRARY_PATH
  if [ $lib = 919 ]; then [ -n "$VENV_CUDNN" ] || continue; lp="$VENV_CUDNN:$lp"; fi
  LD_LIBRARY_PATH=$lp stamp "new kinds $lib" timeout 90 $B/attnfuzz run corpora/gpu/fp16-gaps-odd-bshd-fwd.case \
    corpora/gpu/bf16-thd-q-padded-kv-causal-br-bwd.case --backend cudnn \
    --engine all > $R/newkinds-$lib.txt 2>&1
  cut -c1-230 $R/newkinds-$lib.txt >> $S
done
stamp "variants cpu" timeout 60 $B/attnfuzz run $V/*.case --backend cpu --no-probes > $R/variants-cpu.txt 2>&1
tail -1 $R/variants-cpu.txt >> $S
tail -120 $S
device_pack
