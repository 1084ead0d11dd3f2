#!/usr/bin/env bash
# device call 1 of 2026-12-08 (issues 12, 13): every GPU test binary (ci/device_session.sh
# tests); the criterion tests on the GPU build (test_softcap_tanh now in both tiers,
# test_row_mass, test_cudnn_features); the two long softcap cases (above the element
# budgets: row floors only) with every cuDNN engine on both cuDNN versions.
source ci/device_preamble.sh
OUT=$R/session bash ci/device_session.sh $B tests > /dev/null 2>&1
echo "device_session tests: exit $?" >> $S; cat $R/session/summary.txt >> $S
for t in test_softcap_tanh test_row_mass test_cudnn_features; do
  stamp "$t" timeout 240 $B/$t > $R/$t.txt 2>&1; tail -2 $R/$t.txt >> $S
done
grep "large fp16" $R/test_softcap_tanh.txt >> $S
for tag in sys venv; do
  lp=$LD_LIBRARY_PATH; [ $tag = venv ] && lp="$VENV_CUDNN:$LD_LIBRARY_PATH"
  LD_LIBRARY_PATH=$lp stamp "long softcap $tag" timeout 200 $B/attnfuzz run corpora/gpu/feat-softcap-long-*.case \
      --backend cudnn --engine all > $R/long-$tag.txt 2>&1
  echo "long softcap $tag: pass $(grep -c ': pass' $R/long-$tag.txt) of $(grep -c ': ' $R/long-$tag.txt)" >> $S
  cut -c1-300 $R/long-$tag.txt >> $S
done
device_pack
