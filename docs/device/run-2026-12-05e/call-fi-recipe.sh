#!/usr/bin/env bash
# Device call (about 9 min; `B=build-fe bash docs/device/next/call-fi-recipe.sh`, carry
# ["build-fe", ".whl/serving"]; build-fe rebuilt from this tree first: the recipe is new): the
# FlashInfer LSE rows with the recipe lse_rowsum_dtype_p (docs/criterion.md "A row sum of
# rounded P"), each its own process: the three LSE buckets of 2026-12-05 (fp16) and the
# corpora/gpu cases whose LSE rows failed on 2026-12-10 (bf16, ratios 7.9-21.5); then a
# CAMP_S-second campaign (default 300) from corpora/gpu with its buckets replayed.
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
PYLIB=/tmp/attnfuzz-serving-site
MENU=/tmp/attnfuzz-flashinfer-menu
CAMP_S=${CAMP_S:-300}
if [ ! -d $PYLIB/flashinfer ]; then
  stamp install python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$PYLIB" .whl/serving/*.whl > $R/install.txt 2>&1
fi
export PYTHONPATH="$PYTHONPATH:$PYLIB" PATH="$PYLIB/bin:$PATH" ATTNFUZZ_FLASHINFER_MENU=$MENU
if [ ! -f $MENU/menu.json ]; then
  MAX_JOBS=$(nproc) FLASHINFER_NVCC_THREADS=1 stamp menu timeout 240 python3 ci/flashinfer_menu.py \
    --cache $MENU --menu small --deadline 150 > $R/menu.txt 2>&1
  tail -3 $R/menu.txt >> $S
fi
FI="--backend worker:flashinfer --worker-config python/targets/flashinfer.conf"
for f in docs/device/run-2026-12-05d/findings/flashinfer-1ec04389ec4a.case \
         docs/device/run-2026-12-05d/findings/flashinfer-97a892bdc5e0.case \
         docs/device/run-2026-12-05d/findings/flashinfer-f7c4b2330de2.case \
         corpora/gpu/bf16-nomask-fwd-d128.case corpora/gpu/bf16-paged-64-gqa-padding-fwd.case \
         corpora/gpu/bf16-decode-sq1-gqa-fwd.case; do
  for e in fa2-single fa2-ragged fa2-paged fa2-decode; do
    timeout 120 $B/attnfuzz run $f $FI --engine $e 2>&1 | head -1 | cut -c1-260 >> $S
  done
done
stamp campaign timeout $((CAMP_S + 60)) $B/attnfuzz campaign corpora/gpu $FI --time $CAMP_S \
  --total-time $((CAMP_S + 40)) --seed 20261206 --out /tmp/fi-camp > $R/campaign.txt 2>&1
tail -5 $R/campaign.txt >> $S
camp_report /tmp/fi-camp "flashinfer" $FI
tail -60 $S
device_pack
