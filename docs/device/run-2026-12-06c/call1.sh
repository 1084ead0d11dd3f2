#!/usr/bin/env bash
# Device call 1 (carry ["build-dev"] with test_oracle_gpu, test_gpu_ref, bench_oracle_gpu,
# bench_ref_gpu, test_criterion_gpu and test_compare_gpu among its EXTRA_BINS; about 6 min): call-fused.sh (the
# fused magnitudes' test whole, the reference's staging, the benches and the 32k case end to
# end), the GPU corpus's JSON verdicts on both cuDNN versions (compared here with
# docs/device/run-2026-12-06-h100/'s by ci/verdict_compare.py), then the judge bench's mix.
DEVICE_NO_PACK=1 bash docs/device/next/call-fused.sh
source ci/device_preamble.sh
# the 32k case again with nothing kept on the device (the host-only transfers of before)
ATTNFUZZ_KEEP_ON_DEVICE=0 stamp long-32768-nokeep timeout 150 $B/attnfuzz run $R/long-32768.case --backend cudnn \
  --no-probes --json > $R/long-32768-nokeep.json 2> $R/long-32768-nokeep.err
head -1 $R/long-32768-nokeep.json > $R/long-32768-nokeep-verdict.json
echo "nothing kept:" >> $S
python3 ci/bench/judge_stages.py $R/long-32768-nokeep-verdict.json >> $S 2>&1
stamp test_criterion_gpu timeout 120 $B/test_criterion_gpu > $R/test_criterion_gpu.txt 2>&1
stamp test_compare_gpu timeout 120 $B/test_compare_gpu > $R/test_compare_gpu.txt 2>&1
tail -2 $R/test_compare_gpu.txt >> $S
tail -2 $R/test_criterion_gpu.txt >> $S
NEW="corpora/seed-features/fp16-alibi-signed-batch-fwd.case corpora/seed-features/bf16-alibi-abs-heads6-bwd.case
  corpora/seed-features/fp16-bias-111s-fwd.case corpora/seed-features/bf16-bias-bh1s-padding-bwd.case
  corpora/seed/fp16-kv-fp8-e4m3.case
  corpora/seed/fp8-e4m3-descale-head.case corpora/seed/outputs-max-logit-bf16.case
  corpora/seed-cp/p2p-bias-1hss-causal-cp2.case corpora/seed-cp/ag-bias-111s-padding-cp2.case"
for lab in 914 919; do
  lib=""; [ $lab = 919 ] && lib=$VENV_CUDNN
  [ $lab = 919 ] && [ -z "$lib" ] && continue
  LD_LIBRARY_PATH="$lib${lib:+:}$LD_LIBRARY_PATH" stamp "corpus-$lab" timeout 200 $B/attnfuzz run corpora/gpu/*.case \
    $NEW --backend cudnn --jobs 8 --json > $R/corpus-$lab.jsonl 2> $R/corpus-$lab.err
  grep -c '"verdict"' $R/corpus-$lab.jsonl >> $S
done
gzip $R/corpus-*.jsonl
N=100 MIX_TIME=40 MIX_JOBS=8 LONG_S="" OUT=$R/bench timeout 200 bash ci/bench_judge.sh $B > $R/mix-bench.txt 2>&1
echo "mix bench: exit $?" >> $S
tail -40 $R/mix-bench.txt >> $S
gzip -c $R/bench/mix-attnfuzz.jsonl > $R/mix-attnfuzz.jsonl.gz; rm -rf $R/bench
tail -60 $S
device_pack
