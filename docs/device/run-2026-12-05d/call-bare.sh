#!/usr/bin/env bash
# Device call (about 3 min; `B=build-min bash docs/device/run-2026-12-05d/call-bare.sh`, carry ["build-min",
# ".whl/fe", ".whl/serving"]; build-min is build-fe without its plugins, to fit the 64 MiB): the
# thd Q over padded K/V candidate with the probes on (its NaN came from the stale-data probe),
# default and with ATTNFUZZ_CUDNN_KV_OFFSETS=padded, then the bare scripts of 2026-12-05's
# campaign findings, each seed its own process:
#   docs/research-scripts/cudnn_fe_padding_nan.py  (cudnn-fe: NaN in the padding reaching O)
#   docs/research-scripts/flashinfer_lse_prescale.py (flashinfer: LSE at 6.4x the allowance;
#     does the kernel round a scaled query to fp16?)
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
if [ ! -f /tmp/fe/env.sh ]; then
  stamp install-fe bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install-fe.txt 2>&1
fi
t=corpora/gpu/bf16-thd-q-padded-kv-causal-br-bwd.case
for kvo in "" padded; do
  for lib in "" "$VENV_CUDNN"; do
    env ${kvo:+ATTNFUZZ_CUDNN_KV_OFFSETS=$kvo} LD_LIBRARY_PATH="${lib:+$lib:}$LD_LIBRARY_PATH" timeout 60 $B/attnfuzz run $t \
      --backend cudnn 2>&1 | head -1 | cut -c1-300 | sed "s|^|kv_offsets=${kvo:-default} ${lib:+9.19 }|" >> $S
  done
done
for seed in 1 2; do
  ( . /tmp/fe/env.sh && timeout 100 python3 docs/research-scripts/cudnn_fe_padding_nan.py $seed ) > $R/pad-$seed.txt 2>&1
  echo "== cudnn_fe_padding_nan.py $seed: exit $?" >> $S
  grep -vE "^\s|Traceback|Warning" $R/pad-$seed.txt | tail -5 >> $S
done
PYLIB=/tmp/attnfuzz-serving-site
if [ ! -d $PYLIB/flashinfer ]; then
  stamp install-serving python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$PYLIB" .whl/serving/*.whl > $R/install-serving.txt 2>&1
fi
export PYTHONPATH="$PYTHONPATH:$PYLIB" PATH="$PYLIB/bin:$PATH" FLASHINFER_CUDA_ARCH_LIST=9.0a \
  FLASHINFER_WORKSPACE_BASE=/tmp/fi-bare MAX_JOBS=$(nproc)
for seed in 1 2; do
  timeout 200 python3 docs/research-scripts/flashinfer_lse_prescale.py $seed > $R/fi-$seed.txt 2>&1
  echo "== flashinfer_lse_prescale.py $seed: exit $?" >> $S
  grep -E "^q |^flashinfer|Error" $R/fi-$seed.txt | tail -5 >> $S
done
tail -40 $S
device_pack
