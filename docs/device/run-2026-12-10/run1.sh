#!/usr/bin/env bash
# device call 1 of 2026-12-10 (the judge on the device): the GPU unit tests on the Release
# build (test_criterion_gpu with the element rule's 0.98x / 1.02x edge above 2^25 with the
# GPU budgets; test_compare_gpu, test_repeats, test_runner_pipeline, test_cudnn_features,
# test_row_mass, test_softcap_tanh), corpora/gpu and corpora/gpu-terms through cudnn on the
# system cuDNN (9.14) and the torch venv's (9.19) with the GPU element budgets, then
# ci/bench_judge.sh: the mix (1 and 8 workers, torch loop, per-stage medians with the host
# time outside every backend run) and the long case at 32k without probes.
source ci/device_preamble.sh
for t in test_criterion_gpu test_compare_gpu test_repeats test_runner_pipeline test_cudnn_features test_row_mass \
         test_softcap_tanh; do
  stamp $t timeout 150 $B/$t > $R/$t.txt 2>&1
  grep -h "edge\|worst\|long case\|checks passed\|FAIL\|SKIP" $R/$t.txt | head -8 >> $S
done
corpus() { # LABEL LIBDIR
  local label=$1 lib=$2
  LD_LIBRARY_PATH="$lib${lib:+:}$LD_LIBRARY_PATH" stamp "corpus-$label" timeout 240 $B/attnfuzz run corpora/gpu/*.case \
    corpora/gpu-terms/*.case --backend cudnn --jobs 8 --json > $R/corpus-$label.jsonl 2> $R/corpus-$label.err
  python3 - $R/corpus-$label.jsonl "$label" >> $S 2>&1 <<'PY'
import collections, json, sys
n = collections.Counter(); fail = []; terms = 0; worst = 0
for line in open(sys.argv[1]):
    if not line.startswith('{'): continue
    v = json.loads(line); n[v['verdict']] += 1
    j = v.get('judge', {}); terms += bool(j.get('element_terms'))
    worst = max(worst, j.get('cert_gap_over_bound') or 0)
    if v['verdict'] not in ('pass', 'declined'):
        fail.append('%s %s %s' % (v['case'].split('/')[-1], v['verdict'], (v.get('findings') or [{}])[0].get('detail', '')[:120]))
print('corpus', sys.argv[2], dict(n), 'element budgets on', terms, 'worst MPFR gap / bound %.3g' % worst)
for f in fail: print('  ', f)
PY
}
corpus 914 ""
corpus 919 "$VENV_CUDNN"
OUT=$R/bench N=300 MIX_TIME=60 MIX_JOBS=8 LONG_S="32768" LONG_TIME=100 LONG_FLAGS=--no-probes \
  stamp bench timeout 330 bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
cat $R/bench.txt >> $S
tail -80 $S
device_pack
