#!/usr/bin/env bash
# device call 4 (issue 12): the GPU corpus on both cuDNN versions (system 9.14, the torch
# venv's 9.19) with the judge of this run (ci/device_session.sh corpus).
source ci/device_preamble.sh
OUT=$R/s timeout 420 bash ci/device_session.sh $B corpus > $R/session.log 2>&1; echo "device_session corpus: exit $?" >> $S
cat $R/s/summary.txt >> $S 2>/dev/null
grep -rh ": FINDING" $R/s 2>/dev/null | cut -c1-260 | sort | uniq | head -20 >> $S
device_pack
