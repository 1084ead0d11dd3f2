#!/usr/bin/env bash
# Device call (carry ["build-dev"], about 8 min): call1.sh's GPU tests and corpus, then
# call-gen-long.sh's long cases, in one call (starts are scarce: one start for both).
# Both write into the same results folder; one all.tgz comes back.
DEVICE_NO_PACK=1 bash docs/device/next/call1.sh
DEVICE_NO_PACK=1 bash docs/device/next/call-gen-long.sh
source ci/device_preamble.sh
device_pack
