#!/usr/bin/env bash
# Device call (carry ["build-kc"], B=build-kc; about 6 min): cuDNN's kernel cache as attnfuzz's opt-in
# mode (ATTNFUZZ_CUDNN_KERNEL_CACHE=1: dynamic-shape graphs, one kernel cache per graph
# topology; written on 2026-12-06 and never run on a GPU before this call). First whether
# cuDNN takes it (one forward and one backward corpus case, stderr kept), then the GPU
# corpus with the mode on against the default (verdict_compare: which verdicts move, and
# why), then the mix one worker default / cache (30 s each) with the builds
# by phase (mix_stages.py), then the same cache run under compute-sanitizer memcheck on five
# mix cases (a kernel cache outliving the graph it was made from).
source ci/device_preamble.sh
A=$B/attnfuzz
for c in corpora/gpu/bf16-causal-b1h4s256d128-bwd.case corpora/gpu/bf16-bhsd-bwd.case; do
  ATTNFUZZ_CUDNN_KERNEL_CACHE=1 timeout 60 $A run $c --backend cudnn --json > $R/kc-first.jsonl 2> $R/kc-first.err
  echo "== kernel cache, $(basename $c): exit $? | $(head -c 400 $R/kc-first.jsonl) | $(tail -2 $R/kc-first.err | tr '\n' ' ')" >> $S
done
for m in 0 1; do
  ATTNFUZZ_CUDNN_KERNEL_CACHE=$m stamp corpus-kc$m timeout 200 $A run corpora/gpu/*.case --backend cudnn --jobs 8 \
    --json > $R/corpus-kc$m.jsonl 2> $R/corpus-kc$m.err
done
python3 ci/verdict_compare.py $R/corpus-kc0.jsonl $R/corpus-kc1.jsonl > $R/corpus-kc-compare.txt 2>&1
echo "== corpus default vs kernel cache: verdict_compare exit $?" >> $S
head -40 $R/corpus-kc-compare.txt >> $S
mix=/tmp/mix
python3 ci/bench/gen_mix.py 100 $mix 2026 > /dev/null
for b in kc0 kc1; do
  m=${b:2:1}
  ATTNFUZZ_CUDNN_KERNEL_CACHE=$m timeout 30 $A run $mix/case-*.case --backend cudnn --json > $R/mix-$b.jsonl 2> $R/mix-$b.err
  echo "== mix $b: $(grep -c '^{' $R/mix-$b.jsonl) cases in 30 s" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$b.jsonl >> $S 2>&1
done
ATTNFUZZ_CUDNN_KERNEL_CACHE=1 timeout 90 compute-sanitizer --tool memcheck --print-limit 5 \
  $A run $mix/case-000{1,2,3,4,5}.case --backend cudnn --no-probes > $R/kc-memcheck.txt 2>&1
echo "== memcheck, kernel cache: exit $? | $(grep -E 'ERROR SUMMARY|run:' $R/kc-memcheck.txt | tr '\n' ' ')" >> $S
gzip -f $R/*.jsonl
tail -150 $S
device_pack
