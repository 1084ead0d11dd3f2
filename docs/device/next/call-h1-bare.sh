#!/usr/bin/env bash
# Device call (carry ["build/cudnn_backend_thd_unaligned_hang"]; about 3 min): H1 without
# attnfuzz, through cuDNN's backend API (docs/research-scripts/cudnn_backend_thd_unaligned_hang.c,
# built here with the command in its header). Each run in its own process under a timeout: the
# misaligned graph's eng1_k24=2 with the truthful alignment and with --align16, then the
# aligned control, on the system cuDNN and on the torch venv's.
source ci/device_preamble.sh
X=build/cudnn_backend_thd_unaligned_hang
for lib in sys venv; do
  L=""; [ $lib = venv ] && { [ -n "$VENV_CUDNN" ] || continue; L="$VENV_CUDNN:"; }
  for args in "" "--align16" "--aligned" "--aligned --align16"; do
    echo "== cuDNN $lib, args '$args'" >> $S
    LD_LIBRARY_PATH="$L$LD_LIBRARY_PATH" timeout 40 $X $args > $R/h1-$lib-${args// /_}.txt 2>&1
    echo "exit $? (124: did not return within 40 s)" >> $S
    grep -E "cudnnGetVersion|version|^start|^done|error" $R/h1-$lib-${args// /_}.txt | head -12 >> $S
  done
done
tail -80 $S
device_pack
