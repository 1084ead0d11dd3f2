#!/usr/bin/env bash
# Device call, the short form of call1.sh + call-gen-long.sh when little device time is left
# (about 7 min; carry ["build-dev"]): the GPU tests that check this tree's new device code
# (test_criterion_gpu's row summaries against the host's, field by field; test_cudnn_sdpa;
# test_cudnn_layouts), the GPU corpus and the new kinds through cudnn 9.14, and the judge
# bench's mix three times in one call: row summaries on the host (ATTNFUZZ_ROWS_ON_GPU=0),
# on the device (the default), and on the device with every input's values from the GPU
# generator (ATTNFUZZ_GEN_GPU_MIN_ELEMS=0); then b1 h16 d128 causal fwd + bwd at 32k.
source ci/device_preamble.sh
# time_left N: true while fewer than 540 - N seconds have passed (the call's limit is 600 s;
# what would not fit is skipped and said, so the results are always packed)
time_left() { [ $((SECONDS + $1)) -lt 540 ] || { echo "skipped (time): $2" >> $S; return 1; }; }
for t in test_criterion_gpu test_cudnn_sdpa test_cudnn_layouts; do
  ATTNFUZZ_CUDNN_TEST_ENGINES=default stamp $t timeout 100 $B/$t > $R/$t.txt 2>&1
  grep -hE "bit for bit|worst|checks passed|FAIL|CHECK failed|SKIP" $R/$t.txt | tail -6 >> $S
done
NEW="corpora/seed-features/fp16-alibi-signed-batch-fwd.case corpora/seed-features/bf16-alibi-abs-heads6-bwd.case
  corpora/seed-features/fp16-bias-111s-fwd.case corpora/seed-features/bf16-bias-bh1s-padding-bwd.case
  corpora/seed-cp/p2p-bias-1hss-causal-cp2.case corpora/seed-cp/ag-bias-111s-padding-cp2.case"
stamp corpus-914 timeout 120 $B/attnfuzz run corpora/gpu/*.case $NEW --backend cudnn --jobs 8 > $R/corpus-914.txt 2>&1
tail -1 $R/corpus-914.txt >> $S
grep -E "FINDING|error" $R/corpus-914.txt | cut -c1-220 | head -12 >> $S
grep -E "alibi|bias" $R/corpus-914.txt | cut -c1-200 >> $S
bench() { # LABEL ENV...
  local label=$1; shift
  time_left 110 "bench $label" || return
  env "$@" OUT=$R/bench-$label N=80 MIX_TIME=25 MIX_JOBS="8" LONG_S="" \
    timeout 110 bash ci/bench_judge.sh $B > $R/bench-$label.txt 2>&1
  echo "== bench $label ($*): exit $?" >> $S
  grep -E "cases/s|median|criterion|  gen|magnitudes" $R/bench-$label.txt | head -14 >> $S
  rm -rf $R/bench-$label/mix
}
bench rows0 ATTNFUZZ_ROWS_ON_GPU=0
bench rows1 ATTNFUZZ_ROWS_ON_GPU=1
bench gen0 ATTNFUZZ_GEN_GPU_MIN_ELEMS=0
time_left 100 "bench long" && OUT=$R/bench-long MIX_TIME=0 LONG_S="32768" LONG_TIME=80 LONG_FLAGS=--no-probes \
  stamp "bench long" timeout 120 bash ci/bench_judge.sh $B > $R/bench-long.txt 2>&1
tail -16 $R/bench-long.txt >> $S
tail -90 $S
device_pack
