#!/usr/bin/env bash
# Device call (carry ["build-min", "build-uf"]; 6 s, inline after call9): the campaign's
# underflow error (../run-2026-12-07r/call4-error-oracle-underflow.case) replayed twice with
# the build before the fp64 tiers' underflow allowance (build-min) and twice with it
# (build-uf/attnfuzz, Debug).
c=docs/device/run-2026-12-07r/call4-error-oracle-underflow.case
for b in build-min build-uf; do for k in 1 2; do
  echo "== $b run $k"
  LD_LIBRARY_PATH=$PWD/$b/lib timeout 120 $b/attnfuzz run $c --backend cudnn --json 2>&1 | cut -c1-600 | tail -3
done; done
