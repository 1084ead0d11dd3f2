#!/usr/bin/env bash
# device call 3 of 2026-12-03: wait for the 10-minute campaigns run2.sh started, collect
set -u
bash ci/device_long.sh collect /tmp/bg $OUT ${WAIT_S:-560} > /dev/null 2>&1
ls $OUT
