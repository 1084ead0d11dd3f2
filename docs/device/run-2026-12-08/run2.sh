#!/usr/bin/env bash
# device call 2 of 2026-12-08: every GPU test binary (ci/device_session.sh tests, system cuDNN)
# now that test_cudnn_fp8 sets F8's runs apart (KNOWN F8); test_cudnn_fp8 again on the torch
# venv's cuDNN; test_row_mass (now prepared through fx_prepare).
source ci/device_preamble.sh
OUT=$R/session bash ci/device_session.sh $B tests > /dev/null 2>&1
echo "device_session tests: exit $?" >> $S; cat $R/session/summary.txt >> $S
grep -c "KNOWN F8" $R/session/tests.txt >> $S; grep "FAIL" $R/session/tests.txt | cut -c1-200 >> $S
LD_LIBRARY_PATH=$VENV_CUDNN:$LD_LIBRARY_PATH stamp "test_cudnn_fp8 venv" timeout 240 $B/test_cudnn_fp8 > $R/fp8-venv.txt 2>&1
grep -c "KNOWN F8" $R/fp8-venv.txt >> $S; grep "FAIL" $R/fp8-venv.txt | cut -c1-200 >> $S; tail -2 $R/fp8-venv.txt >> $S
stamp test_row_mass $B/test_row_mass > $R/test_row_mass.txt 2>&1; tail -1 $R/test_row_mass.txt >> $S
device_pack
