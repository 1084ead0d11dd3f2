#!/usr/bin/env bash
# Device call 2 (carry [".whl/fe", "build-min", "build/cudnn_backend_thd_unaligned_hang"];
# about 5 min): the ALiBi batch question (call-bare3.sh) and H1 through cuDNN's backend API
# (call-h1-bare.sh), one pack.
export DEVICE_NO_PACK=1
B=build-min bash docs/device/next/call-bare3.sh > /dev/null 2>&1
bash docs/device/next/call-h1-bare.sh > /dev/null 2>&1
unset DEVICE_NO_PACK
source ci/device_preamble.sh
tail -120 $S
device_pack
