#!/usr/bin/env bash
# Device call 2 (carry ["build-min", ".whl/fe"], B=build-min; about 6 min): K1's bare script
# (docs/device/next/call-k1-bare.sh) then every peer kind through cudnn on both versions
# (docs/device/next/call-kinds.sh), one pack.
export DEVICE_NO_PACK=1
bash docs/device/next/call-k1-bare.sh > /dev/null 2>&1
bash docs/device/next/call-kinds.sh > /dev/null 2>&1
unset DEVICE_NO_PACK
source ci/device_preamble.sh
tail -90 $S
device_pack
