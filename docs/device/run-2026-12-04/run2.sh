#!/usr/bin/env bash
# device call 2: where a 10 s MXFP8 ordinary campaign's time goes (the worker's request
# trace, ATTNFUZZ_WORKER_TRACE, against the campaign's start), the bare-torch cuDNN mask
# script (large hidden scores), and CP over cudnn (virtual ranks, both cuDNN versions).
set -u
B=build-dev
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python"
R=$OUT/r; mkdir -p $R; S=$R/summary.txt
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
MX="python3 -m attnfuzz_worker.examples.triton_mxfp8 --device cuda --recipe"
pc=ci/tests/pytargets_cases
mkdir -p /tmp/mxall /tmp/mxtwo
cp $pc/mxfp8-*.case corpora/seed/mxfp8-causal.case /tmp/mxall/
cp $pc/mxfp8-block-range-s64-d16.case corpora/seed/mxfp8-causal.case /tmp/mxtwo/
# warm Triton's cache (a fresh machine)
$B/attnfuzz run /tmp/mxall/*.case --backend worker:mx-ordinary --worker-cmd "$MX ordinary" > /dev/null 2>&1
for run in mxall:2 mxall:1 mxtwo:1 mxall:4 mxall:5; do
  corpus=${run%%:*} seed=${run##*:} d=$R/c-$corpus-$seed
  t0=$(date +%s%N)
  ATTNFUZZ_WORKER_TRACE=$R/trace-$corpus-$seed.txt $B/attnfuzz campaign /tmp/$corpus --time 10 --seed $seed \
      --backend worker:mx-ordinary --worker-cmd "$MX ordinary" --out $d > $d.log 2>&1
  echo "10 s campaign $corpus seed $seed: exit $? wall $(ms $t0) ms" >> $S
  python3 - $d/stats.json $R/trace-$corpus-$seed.txt >> $S 2>&1 <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
t0 = s["start_time_unix"]
print({k: s.get(k) for k in ("cases", "declined", "elapsed_s", "buckets", "findings", "time_to_first_finding_s")})
try:
    for line in open(sys.argv[2]):
        f = line.split(" ", 3)
        print("   +%.2f s  %s s  %s" % (float(f[0]) - t0, f[1], f[3].strip()[:150] if len(f) > 3 else f[2]))
except OSError as e:
    print("   no trace:", e)
PY
  for f in $d/findings/*/; do [ -d "$f" ] && { echo "  $(basename $f): $(head -3 $f/leak.txt 2>/dev/null | tr '\n' ' ' | cut -c1-300)"; grep -E '^(seqlen|head_dim|mask|window|align|data)' $f/finding.case | tr '\n' ' '; echo; } >> $S; done
done
timeout 150 python3 docs/device/run-2026-12-04/torch_cudnn_mask.py > $R/torchmask.txt 2>&1; echo "torch_cudnn_mask: exit $?" >> $S
OUT=$R/cpcudnn timeout 200 bash ci/device_session.sh $B cp > $R/cpcudnn.log 2>&1; echo "device_session cp: exit $?" >> $S
cat $R/cpcudnn/summary.txt >> $S 2>/dev/null
cd $OUT && rm -rf r/c-*/corpus r/c-*/current && tar czf all.tgz r && rm -rf r
