#!/usr/bin/env bash
# device call 4 (2026-12-11, the session's last): carry ["build-dev", ".whl/sage"].
#   1. the GPU tests of this session's changes: test_cudnn_sdpa (default engines; its reuse
#      families now also run a twin with another score scale, which must hit the graph cache
#      and match its own reference), test_cudnn_feature_declines, test_criterion_gpu;
#   2. SageAttention with key counts around its 64-key block (docs/research-scripts/
#      sage_short_kv.py, seeds 1 and 2: two processes, no attnfuzz);
#   3. the judge bench (mix N=120, 40 s a side, --jobs 8; 32k) with the capacity probe
#      that keeps the padded graph and the scale that goes by value;
#   4. the triage replays of the campaign's candidate buckets (triage.sh) for what time is
#      left (TRIAGE_S, default 150 s of starting new commands).
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
export ATTNFUZZ_CUDNN_TEST_ENGINES=default
for t in test_cudnn_sdpa test_cudnn_feature_declines test_criterion_gpu; do
  if [ -x $B/$t ]; then
    stamp $t timeout 150 $B/$t > $R/$t.txt 2>&1
    grep -E "reuse family|checks passed|FAIL|CHECK failed|SKIP" $R/$t.txt | tail -12 >> $S
  else
    echo "$t: not in $B" >> $S
  fi
done
unset ATTNFUZZ_CUDNN_TEST_ENGINES
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/sage-site .whl/sage/*.whl \
  > $R/sage-install.txt 2>&1
for seed in 1 2; do
  PYTHONPATH="$PYTHONPATH:/tmp/sage-site" stamp "sage short kv seed $seed" timeout 90 \
    python3 docs/research-scripts/sage_short_kv.py $seed > $R/sage-short-kv-$seed.txt 2>&1
  cat $R/sage-short-kv-$seed.txt | tail -12 >> $S
done
OUT=$R/bench N=120 MIX_TIME=40 MIX_JOBS=8 LONG_S=32768 LONG_TIME=90 LONG_FLAGS=--no-probes \
  stamp bench timeout 330 bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
cat $R/bench.txt >> $S
rm -rf $R/bench/mix $R/bench/mix-jobs8.jsonl
( OUT=$R/triage TRIAGE_S=${TRIAGE_S:-150} timeout 200 bash docs/device/run-2026-12-11/triage.sh > /dev/null 2>&1 )
[ -f $R/triage/all.tgz ] && tar xzf $R/triage/all.tgz -O r/summary.txt 2>/dev/null | tail -60 > $R/triage-summary.txt
tail -100 $S
device_pack
