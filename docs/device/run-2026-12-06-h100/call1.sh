#!/usr/bin/env bash
# Next device call 1: carry ["build-dev"] (docs/device/next/README.md): the GPU tests, the GPU
# corpus on both cuDNN versions (the flex score_mod seeds passed on 2026-12-05e and are not rerun).
source ci/device_preamble.sh
for t in test_gpu_ref test_oracle_gpu test_gpu_gen test_criterion_gpu test_compare_gpu test_cudnn_sdpa \
         test_cudnn_feature_declines test_cudnn_features test_cudnn_layouts; do
  if [ -x $B/$t ]; then
    ATTNFUZZ_CUDNN_TEST_ENGINES=default stamp $t timeout 150 $B/$t > $R/$t.txt 2>&1
    grep -hE "bit for bit|worst|checks passed|FAIL|CHECK failed|SKIP" $R/$t.txt | tail -10 >> $S
  else
    echo "$t: not in $B" >> $S
  fi
done
NEW="corpora/seed-features/fp16-alibi-signed-batch-fwd.case corpora/seed-features/bf16-alibi-abs-heads6-bwd.case
  corpora/seed-features/fp16-bias-111s-fwd.case corpora/seed-features/bf16-bias-bh1s-padding-bwd.case
  corpora/seed/fp16-kv-fp8-e4m3.case
  corpora/seed/fp8-e4m3-descale-head.case corpora/seed/outputs-max-logit-bf16.case
  corpora/seed-cp/p2p-bias-1hss-causal-cp2.case corpora/seed-cp/ag-bias-111s-padding-cp2.case"
corpus() { # LABEL LIBDIR
  local label=$1 lib=$2
  LD_LIBRARY_PATH="$lib${lib:+:}$LD_LIBRARY_PATH" stamp "corpus-$label" timeout 200 $B/attnfuzz run corpora/gpu/*.case \
    $NEW --backend cudnn --jobs 8 --json > $R/corpus-$label.jsonl 2> $R/corpus-$label.err
  python3 - $R/corpus-$label.jsonl "$label" >> $S 2>&1 <<'PY'
import collections, json, sys
n = collections.Counter(); lines = []; worst = 0
for line in open(sys.argv[1]):
    if not line.startswith('{'): continue
    v = json.loads(line); n[v['verdict']] += 1
    worst = max(worst, (v.get('judge') or {}).get('cert_gap_over_bound') or 0)
    name = v['case'].split('/')[-1]
    if v['verdict'] != 'pass' or any(k in name for k in ('alibi', 'bias-1', 'bias-b', 'kv-h', 'padded-kv', 'qkv-h', 'kv-fp8', 'descale', 'outputs', 'cp2')):
        lines.append('%s %s %s' % (name, v['verdict'], ((v.get('findings') or [{}])[0].get('detail') or v.get('reason') or '')[:140]))
print('corpus', sys.argv[2], dict(n), 'worst MPFR gap / bound %.3g' % worst)
for f in lines: print('  ', f)
PY
}
corpus 914 ""
[ -n "$VENV_CUDNN" ] && corpus 919 "$VENV_CUDNN"
tail -80 $S
device_pack
