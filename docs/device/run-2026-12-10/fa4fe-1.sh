#!/usr/bin/env bash
# device call 1 of 2 for the fa4 / cudnn-fe worker targets (docs/targets.md, "fuzz FA4 or
# cuDNN's frontend on your own GPU"). carry: ["build-dev", ".whl/fa4fe/call1"] (call1 = the
# nvidia-cudnn-frontend wheel + part 00 of the CuTe DSL library, from
# FIRST_PART_MB=19 ci/wheels/fetch.sh, parts 01 and 02 + the FA4 wheels in call2; see
# docs/targets.md). It installs into /tmp/fa4fe (kept while the machine stays warm: call 2
# adds the other parts and the FA4 wheels there), then with cudnn-fe's backend engines alone (FROST
# and flex need the CuTe DSL, which comes with call 2):
#   - attnfuzz backends --worker-configs python/targets (fa4 unavailable naming its missing
#     module; cudnn-fe available),
#   - the GPU corpus (corpora/gpu) and corpora/gpu-targets through worker:cudnn-fe engine sdpa,
#   - a 60 s campaign on worker:cudnn-fe sdpa.
source ci/device_preamble.sh
FA=/tmp/fa4fe
CONF=python/targets
stamp install bash ci/wheels/install.sh $FA .whl/fa4fe/call1 > $R/install1.txt 2>&1
cat $R/install1.txt >> $S
# shellcheck disable=SC1091
. $FA/env.sh
python3 -c 'import torch, cudnn; print("torch", torch.__version__, "cudnn frontend", cudnn.__version__, "backend", cudnn.backend_version())' >> $S 2>&1
stamp backends timeout 120 $B/attnfuzz backends --worker-configs $CONF > $R/backends1.txt 2>&1
grep -E "^worker:" $R/backends1.txt | cut -c1-260 >> $S
stamp "corpus cudnn-fe sdpa" timeout 120 $B/attnfuzz run corpora/gpu/*.case corpora/gpu-targets/*.case \
  --backend worker:cudnn-fe --worker-config $CONF/cudnn-fe.conf --engine sdpa > $R/corpus-cudnn-fe-sdpa-1.txt 2>&1
tail -1 $R/corpus-cudnn-fe-sdpa-1.txt >> $S
grep -v ": pass" $R/corpus-cudnn-fe-sdpa-1.txt | grep -v "protocol 1 does not carry\|among the worker's dtypes" | cut -c1-300 >> $S
stamp "campaign cudnn-fe sdpa" timeout 95 $B/attnfuzz campaign corpora/gpu --backend worker:cudnn-fe \
  --worker-config $CONF/cudnn-fe.conf --engine sdpa --time 60 --total-time 90 --seed 20261210 \
  --out $R/camp-cudnn-fe-sdpa-1 > $R/camp-cudnn-fe-sdpa-1.txt 2>&1
tail -4 $R/camp-cudnn-fe-sdpa-1.txt >> $S
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print({k: s.get(k) for k in ("cases","declined","elapsed_s","findings","buckets","crashes","hangs")}, "s_kv", s.get("seqlen_kv_hist"))' \
  $R/camp-cudnn-fe-sdpa-1/stats.json >> $S 2>&1
ls $FA/parts >> $S
tail -60 $S
device_pack
