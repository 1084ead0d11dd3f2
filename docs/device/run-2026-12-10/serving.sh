#!/usr/bin/env bash
# device call (serving targets, 2026-12-10; <= 5 min): SageAttention 1.0.6 and FlashInfer
# 0.7.2.post1 as worker targets (docs/targets.md). Carry ["build-dev", ".whl/serving"]
# (ci/make_devbuild.sh; ci/stage_serving_wheels.sh: 32 MB). Steps, each under its own timeout:
#   1. install the staged wheels into a folder on PYTHONPATH (not under $OUT), check imports;
#   2. in the background: compile FlashInfer's small menu (ci/flashinfer_menu.py, deadline
#      MENU_S of compiling) into $MENU, reporting seconds and bytes per module;
#   3. meanwhile sage: corpora/gpu, then a 60 s campaign from the default seeds (its causal
#      leak must be found: the buckets and the first finding's detail go to the summary);
#   4. after the menu: corpora/gpu through flashinfer (fa2 default engines, then paged and
#      decode explicitly), with the menu's figures and the cache size;
#   5. attnfuzz backends --worker-configs python/targets.
# Results under $R; the menu comes back as $OUT/flashinfer-menu.tgz(.part-*) (aot .so files
# and menu.json, no object files): carry it back (docs/targets.md, "Reusing the menu").
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
PYLIB=${PYLIB:-/tmp/attnfuzz-serving-site}
MENU=${MENU:-/tmp/attnfuzz-flashinfer-menu}
MENU_S=${MENU_S:-110}
CAMP_S=${CAMP_S:-60}
stamp install python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$PYLIB" \
  .whl/serving/*.whl > $R/install.txt 2>&1
export PYTHONPATH="$PYTHONPATH:$PYLIB" PATH="$PYLIB/bin:$PATH" ATTNFUZZ_FLASHINFER_MENU=$MENU
timeout 60 python3 -c "
import time; t = time.time()
import torch, triton, sageattention; print('torch', torch.__version__, 'triton', triton.__version__, 'sage ok', round(time.time() - t, 1), 's')
t = time.time(); import flashinfer; print('flashinfer', flashinfer.__version__, 'import', round(time.time() - t, 1), 's')
print(torch.cuda.get_device_name(0))" > $R/imports.txt 2>&1
echo "imports: exit $? $(tr '\n' ';' < $R/imports.txt | tail -c 400)" >> $S
# 2. the menu, in the background (CPU: nvcc through ninja)
( MAX_JOBS=$(nproc) FLASHINFER_NVCC_THREADS=1 timeout $((MENU_S + 90)) python3 ci/flashinfer_menu.py --cache $MENU \
    --menu small --deadline $MENU_S > $R/menu.txt 2>&1; echo "menu: exit $?" >> $R/menu.txt ) &
MENU_PID=$!
# 3. sage
SAGE="--backend worker:sage --worker-config python/targets/sage.conf"
stamp sage-gpu-corpus timeout 45 $B/attnfuzz run corpora/gpu/*.case $SAGE > $R/sage-gpu.txt 2>&1
tail -1 $R/sage-gpu.txt >> $S
grep -v "declined" $R/sage-gpu.txt | head -20 >> $S
grep -o "declined .*" $R/sage-gpu.txt | sed 's/[0-9]\+/N/g' | sort | uniq -c | sort -rn | head -8 >> $S
stamp sage-campaign timeout $((CAMP_S + 30)) $B/attnfuzz campaign $SAGE --time $CAMP_S --total-time $((CAMP_S + 15)) \
  --seed 20261210 --out $R/sage-camp > $R/sage-campaign.txt 2>&1
tail -4 $R/sage-campaign.txt >> $S
grep -E "new bucket" $R/sage-campaign.txt | head -5 >> $S
python3 - $R/sage-camp >> $S 2>&1 <<'PY'
import glob, json, sys
st = json.load(open(sys.argv[1] + '/stats.json'))
print('sage campaign: cases', st.get('cases'), 'declined', st.get('declined'), 'findings', st.get('findings'),
      'buckets', st.get('buckets'))
for path in sorted(glob.glob(sys.argv[1] + '/findings/*/verdict.json'))[:3]:
    for f in json.load(open(path)).get('findings', [])[:1]:
        print(' ', path.split('/')[-2], f.get('kind'), f.get('tensor'), f.get('detail', '')[:220])
PY
for f in $R/sage-camp/findings/*/finding.case; do
  [ -f "$f" ] && { echo "sage finding $(basename $(dirname $f)):"; grep -E "^(seqlen|head_dim|mask|batch|layout) " "$f"; } >> $S
done
# 4. flashinfer, once its menu is compiled
wait $MENU_PID
cat $R/menu.txt >> $S
FI="--backend worker:flashinfer --worker-config python/targets/flashinfer.conf"
stamp flashinfer-gpu-corpus timeout 45 $B/attnfuzz run corpora/gpu/*.case $FI > $R/fi-gpu.txt 2>&1
tail -1 $R/fi-gpu.txt >> $S
grep -v "declined" $R/fi-gpu.txt | head -20 >> $S
grep -o "declined .*" $R/fi-gpu.txt | sed 's/[0-9]\+/N/g' | sort | uniq -c | sort -rn | head -8 >> $S
for e in fa2-paged fa2-decode; do
  timeout 25 $B/attnfuzz run corpora/gpu/bf16-paged-64-gqa-padding-fwd.case corpora/gpu/bf16-decode-sq1-gqa-fwd.case \
    corpora/gpu/bf16-nomask-fwd-d128.case corpora/seed/bf16-d128.case $FI --engine $e > $R/fi-$e.txt 2>&1
  echo "flashinfer $e: exit $?"; cut -c1-220 $R/fi-$e.txt | head -5
done >> $S
du -sh $MENU $MENU/aot >> $S 2>&1
(cd $MENU && tar czf $OUT/flashinfer-menu.tgz --exclude=.cache menu.json aot) 2>> $S
if [ -f $OUT/flashinfer-menu.tgz ] && [ $(stat -c %s $OUT/flashinfer-menu.tgz) -gt 15000000 ]; then
  (cd $OUT && split -b 15000000 -d flashinfer-menu.tgz flashinfer-menu.tgz.part- && rm flashinfer-menu.tgz)
fi
ls -la $OUT >> $S
# 5. the listing
stamp backends timeout 30 $B/attnfuzz backends --worker-configs python/targets > $R/backends.txt 2>&1
grep -E "^worker:" $R/backends.txt | cut -c1-200 >> $S
tail -60 $S
device_pack
