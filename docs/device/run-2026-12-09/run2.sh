#!/usr/bin/env bash
# device call 2 of 2026-12-09 (the judge on the device): test_criterion_gpu (now with the
# stored O's share of dK on the device), the TE-shaped backward cases of corpora/gpu-terms with
# the device pass's element budgets (cudnn, system cuDNN), then ci/bench_judge.sh: the config
# mix (1 and 8 workers, the torch loop, per-stage and per-probe medians) and the long cases
# 4k / 8k / 16k without probes.
source ci/device_preamble.sh
stamp test_criterion_gpu timeout 120 $B/test_criterion_gpu > $R/test_criterion_gpu.txt 2>&1
grep "stored O\|worst\|checks passed\|FAIL" $R/test_criterion_gpu.txt >> $S
stamp gpu-terms timeout 150 $B/attnfuzz run corpora/gpu-terms/*.case --backend cudnn --json > $R/gpu-terms.jsonl 2> $R/gpu-terms.err
python3 - $R/gpu-terms.jsonl >> $S 2>&1 <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith('{'): continue
    v = json.loads(line); j = v.get('judge', {})
    print(v['case'].split('/')[-1], v['verdict'], {k: round(t['ratio'], 3) for k, t in v.get('tensors', {}).items()},
          'terms_gpu', j.get('terms_gpu'), 'element_terms', j.get('element_terms'), 'terms_s', j.get('seconds', {}).get('terms_gpu'))
PY
tail -3 $R/gpu-terms.err >> $S
OUT=$R/bench N=300 MIX_TIME=60 MIX_JOBS=8 LONG_S="4096 8192 16384" LONG_TIME=60 LONG_FLAGS=--no-probes \
  stamp bench timeout 300 bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
cat $R/bench.txt >> $S
tail -60 $S
device_pack
