#!/usr/bin/env bash
# Device call (about 9 min; carry ["build-fe", ".whl/serving"]: build-fe as for call-fe.sh,
# .whl/serving from ci/stage_serving_wheels.sh, 32 MB; `B=build-fe bash
# docs/device/next/call-flashinfer.sh`): the FlashInfer worker target's campaign (issue: the
# serving targets). Installs the wheels, compiles FlashInfer's small menu (ci/flashinfer_menu.py,
# MENU_S seconds of nvcc, about 115 s on the H200), then a CAMP_S-second campaign (default 330)
# from corpora/gpu into /tmp/fi-camp; RESUME=1 on the still-warm machine resumes it for CAMP_S
# more (the menu and the wheels are still in /tmp). Stats (cases/s, buckets, s_kv histogram)
# and every bucket's minimised case replayed in a separate process.
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
PYLIB=/tmp/attnfuzz-serving-site
MENU=/tmp/attnfuzz-flashinfer-menu
MENU_S=${MENU_S:-150}
CAMP_S=${CAMP_S:-330}
if [ ! -d $PYLIB/flashinfer ]; then
  stamp install python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$PYLIB" .whl/serving/*.whl > $R/install.txt 2>&1
fi
export PYTHONPATH="$PYTHONPATH:$PYLIB" PATH="$PYLIB/bin:$PATH" ATTNFUZZ_FLASHINFER_MENU=$MENU
if [ ! -f $MENU/menu.json ]; then
  MAX_JOBS=$(nproc) FLASHINFER_NVCC_THREADS=1 stamp menu timeout $((MENU_S + 90)) python3 ci/flashinfer_menu.py \
    --cache $MENU --menu small --deadline $MENU_S > $R/menu.txt 2>&1
  tail -8 $R/menu.txt >> $S
fi
FI="--backend worker:flashinfer --worker-config python/targets/flashinfer.conf"
resume=""
if [ "${RESUME:-0}" = 1 ]; then
  if [ -d /tmp/fi-camp ]; then resume=--resume; else echo "RESUME=1 but /tmp/fi-camp is gone: a fresh campaign" >> $S; fi
fi
stamp "campaign $resume" timeout $((CAMP_S + 60)) $B/attnfuzz campaign corpora/gpu $FI $resume --time $CAMP_S \
  --total-time $((CAMP_S + 40)) --seed 20261205 --out /tmp/fi-camp > $R/campaign.txt 2>&1
tail -5 $R/campaign.txt >> $S
camp_report /tmp/fi-camp "flashinfer" $FI
tail -60 $S
device_pack
