#!/usr/bin/env bash
# device call 2 of 2026-12-08: test_cudnn_fp8 with F8's runs set apart (KNOWN F8) on both
# cuDNN versions.
source ci/device_preamble.sh
for tag in sys venv; do
  lp=$LD_LIBRARY_PATH; [ $tag = venv ] && lp="$VENV_CUDNN:$LD_LIBRARY_PATH"
  LD_LIBRARY_PATH=$lp stamp "test_cudnn_fp8 $tag" timeout 240 $B/test_cudnn_fp8 > $R/fp8-$tag.txt 2>&1
  grep -c "KNOWN F8" $R/fp8-$tag.txt >> $S; grep "FAIL" $R/fp8-$tag.txt | cut -c1-200 >> $S; tail -2 $R/fp8-$tag.txt >> $S
done
device_pack
