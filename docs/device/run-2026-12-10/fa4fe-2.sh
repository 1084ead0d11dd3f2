#!/usr/bin/env bash
# device call 2 of 2 for the fa4 / cudnn-fe worker targets, on the machine call 1 left warm
# (build-dev and /tmp/fa4fe are still there). carry: [".whl/fa4fe/call2"] (parts 01 and 02 of the CuTe
# DSL library and the FA4 wheels; add "build-dev" only if the machine went cold, and then run
# call 1 again first: part 00 lives in /tmp/fa4fe/parts). Installs the rest, then:
#   - the import time of flash_attn.cute, attnfuzz backends (fa4 and cudnn-fe available),
#   - corpora/gpu + corpora/gpu-targets through worker:fa4 (default) and worker:cudnn-fe
#     engines flex and sdpa (the d 512 FROST forward now has its CuTe DSL), at the same time,
#   - 60 s campaigns on fa4 and on cudnn-fe sdpa, at the same time,
#   - the CuTe DSL JIT caches packed as $R/jit-cache.tgz (put it at .whl/fa4fe/jit-cache.tgz
#     for a later run: this script unpacks it first when carried).
source ci/device_preamble.sh
FA=/tmp/fa4fe
CONF=python/targets
if [ ! -x "$B/attnfuzz" ] || [ ! -d $FA/parts ]; then
  echo "fa4fe-2: $B/attnfuzz or $FA/parts missing: the machine went cold since call 1; run fa4fe-1.sh first" >> $S
  ls -la $FA $FA/parts "$B" >> $S 2>&1
  device_pack
  exit 0
fi
[ -f .whl/fa4fe/jit-cache.tgz ] && mkdir -p $FA/jit-cache && tar xzf .whl/fa4fe/jit-cache.tgz -C $FA/jit-cache
stamp install bash ci/wheels/install.sh $FA .whl/fa4fe/call2 > $R/install2.txt 2>&1
cat $R/install2.txt >> $S
# shellcheck disable=SC1091
. $FA/env.sh
{ t0=$(date +%s%N); python3 -c 'from flash_attn.cute import flash_attn_func' && \
  echo "import flash_attn.cute: $(( ($(date +%s%N) - t0) / 1000000 )) ms"; } >> $S 2>&1
stamp backends timeout 120 $B/attnfuzz backends --worker-configs $CONF > $R/backends2.txt 2>&1
grep -E "^worker:" $R/backends2.txt | cut -c1-300 >> $S
CASES="corpora/gpu/*.case corpora/gpu-targets/*.case"
corpus() { # corpus TARGET ENGINE JOBS
  timeout 110 $B/attnfuzz run $CASES --backend worker:$1 --worker-config $CONF/$1.conf --engine $2 \
    > $R/corpus-$1-$2.txt 2>&1
  echo "corpus $1 $2: exit $?, $(tail -1 $R/corpus-$1-$2.txt)" >> $S
}
t0=$(date +%s)
corpus fa4 default 8 & corpus cudnn-fe flex 4 & corpus cudnn-fe sdpa 2 & wait
echo "corpora: $(($(date +%s) - t0)) s" >> $S
for f in $R/corpus-*.txt; do
  echo "== $(basename $f): not passing (declines by protocol / dtype left out)" >> $S
  grep -v ": pass" $f | grep -v "protocol 1 does not carry\|among the worker's dtypes\|^run:" | cut -c1-300 >> $S
done
camp() { # camp TARGET ENGINE
  timeout 95 $B/attnfuzz campaign corpora/gpu corpora/gpu-targets --backend worker:$1 --worker-config $CONF/$1.conf \
    --engine $2 --time 60 --total-time 90 --seed 20261210 --out $R/camp-$1-$2 > $R/camp-$1-$2.txt 2>&1
  echo "campaign $1 $2: exit $?" >> $S
}
t0=$(date +%s)
camp fa4 default & camp cudnn-fe sdpa & wait
echo "campaigns: $(($(date +%s) - t0)) s" >> $S
for d in $R/camp-*/; do
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); e=s.get("elapsed_s") or 1; print(sys.argv[2], {k: s.get(k) for k in ("cases","declined","elapsed_s","findings","buckets","crashes","hangs")}, "cases/s %.2f" % ((s.get("cases") or 0) / e), "s_kv", s.get("seqlen_kv_hist"))' \
    $d/stats.json "$(basename $d)" >> $S 2>&1
  ls $d/findings 2>/dev/null | head -20 >> $S
done
du -sh $FA/jit-cache >> $S 2>&1
tar czf $R/jit-cache.tgz -C $FA/jit-cache . 2>> $S
tail -80 $S
device_pack
