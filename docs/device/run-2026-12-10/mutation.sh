#!/usr/bin/env bash
# device call of branch mutation (2026-12-10): the input-mutation check (judge/mutation.h) on
# the H200. Build: cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release && cmake --build
# build-gpu -j2 && ci/make_devbuild.sh build-gpu build-dev; carry ["build-dev"]. About 3 min.
#  1. the worker side (reply "inputs_written", python/attnfuzz_worker/input_check.py), never
#     run before: test_worker_torch_mutation.sh with torch on the CPU and on cuda ("none"
#     clean; "arg" and "watched": input_mutation K);
#  2. the check over the GPU backends: cudnn over 40 cases of corpora/gpu without probes (the
#     buffers come back by download; the side tables are now read back and compared: no
#     input_mutation expected, and the run time beside the old figures), and
#     planted:writes_k / planted:none in the CUDA build.
source ci/device_preamble.sh
for dev in cpu cuda; do
  stamp "torch-$dev" timeout 150 env TORCH_DEVICE=$dev bash ci/tests/test_worker_torch_mutation.sh $B/attnfuzz \
    > $R/torch-$dev.txt 2>&1
  tail -4 $R/torch-$dev.txt >> $S
done
stamp cudnn timeout 200 $B/attnfuzz run $(ls corpora/gpu/*.case | head -40) --backend cudnn --no-probes --json \
  > $R/cudnn.jsonl 2> $R/cudnn.err
python3 - $R/cudnn.jsonl >> $S 2>&1 <<'PY'
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
print('cudnn: %d cases, verdicts %s' % (len(rows), dict(collections.Counter(r['verdict'] for r in rows))))
for r in rows:
    for f in r.get('findings', []):
        if f['kind'] == 'input_mutation':
            print('  input_mutation', r['case'], f['tensor'], f['detail'][:200])
PY
tail -2 $R/cudnn.err >> $S
for be in planted:writes_k planted:none; do
  stamp "$be" timeout 60 $B/attnfuzz run corpora/seed/fp16-padding.case corpora/seed/bf16-paged-kv-gqa.case \
    --backend $be > $R/$be.txt 2>&1
  cut -c1-220 $R/$be.txt >> $S
done
tail -40 $S
device_pack
