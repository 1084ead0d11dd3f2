#!/usr/bin/env bash
# device call 1 (2026-12-11): carry ["build-dev", ".whl/fa4fe/call1", ".whl/sage"].
#   1. SageAttention: the three minimised cases replayed by attnfuzz in two separate processes
#      (the engine annotation `dense+lse32` now stripped by the worker; the adapter watches its
#      inputs), and the bare script docs/research-scripts/sage_block_leak.py once more;
#   2. the first part of the CuTe DSL install for FA4 (call 2 adds the rest);
#   3. the cudnn campaign from the default seeds, part 1 (CAMP1_S s, 8 workers); call 2 resumes it.
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
SAGE_SITE=/tmp/sage-site
stamp sage-install python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target $SAGE_SITE \
  .whl/sage/*.whl > $R/sage-install.txt 2>&1
SAGE="--backend worker:sage --worker-config python/targets/sage.conf"
for p in 1 2; do
  PYTHONPATH="$PYTHONPATH:$SAGE_SITE" stamp "sage replay $p" timeout 90 $B/attnfuzz run \
    docs/device/run-2026-12-10/sage-finding-*.case $SAGE > $R/sage-replay-$p.txt 2>&1
  cut -c1-400 $R/sage-replay-$p.txt >> $S
done
PYTHONPATH="$PYTHONPATH:$SAGE_SITE" stamp "sage bare" timeout 90 python3 docs/research-scripts/sage_block_leak.py \
  > $R/sage-bare.txt 2>&1
tail -12 $R/sage-bare.txt >> $S
stamp fa4-install1 timeout 120 bash ci/wheels/install.sh /tmp/fa4fe .whl/fa4fe/call1 > $R/fa4-install1.txt 2>&1
tail -3 $R/fa4-install1.txt >> $S
CAMP1_S=${CAMP1_S:-330}
stamp campaign-1 timeout $((CAMP1_S + 60)) $B/attnfuzz campaign --backend cudnn --workers-per-gpu 8 \
  --time $CAMP1_S --total-time $((CAMP1_S + 45)) --out /tmp/camp > $R/campaign-1.txt 2>&1
tail -6 $R/campaign-1.txt >> $S
cp /tmp/camp/stats.json $R/stats-1.json 2>/dev/null
tail -60 $S
device_pack
