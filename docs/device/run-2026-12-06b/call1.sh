#!/usr/bin/env bash
# Device call 1 (carry ["build-dev"]; build-dev holds bench_oracle_gpu_base, the bench of the
# tree before the register micro-tiles):
#  1. test_oracle_gpu: the tier against MPFR within its bound; the magnitudes of the value
#     passes bit for bit those of the separate passes;
#  2. bench_oracle_gpu of both trees on the same problems: the outputs' hashes must be equal
#     (the micro-tiles keep every fma chain), the seconds per pass side by side;
#  3. the 32k case under pmp (docs/device/next/callB.sh);
#  4. when 1 and 2 hold: the cudnn campaign part 1 (call 2 resumes it on the warm machine).
export DEVICE_NO_PACK=1
source ci/device_preamble.sh
stamp test_oracle_gpu timeout 300 $B/test_oracle_gpu > $R/test_oracle_gpu.txt 2>&1
test_rc=$?
tail -3 $R/test_oracle_gpu.txt >> $S
stamp bench-base timeout 100 $B/bench_oracle_gpu_base 4096 16384 32768 > $R/bench-base.txt 2>&1
stamp bench-new timeout 100 $B/bench_oracle_gpu 4096 16384 32768 > $R/bench-new.txt 2>&1
cat $R/bench-base.txt $R/bench-new.txt >> $S
hb=$(grep -o "outputs' hash [0-9a-f]*" $R/bench-base.txt | tr '\n' ' ')
hn=$(grep -o "outputs' hash [0-9a-f]*" $R/bench-new.txt | tr '\n' ' ')
if [ -n "$hb" ] && [ "$hb" = "$hn" ]; then same=yes; else same=no; fi
echo "hashes base: $hb / new: $hn / equal: $same" >> $S
bash docs/device/next/callB.sh
if [ $test_rc -eq 0 ] && [ $same = yes ]; then
  CAMP1_S=${CAMP1_S:-200} bash docs/device/next/call2.sh
else
  echo "campaign not started: test_oracle_gpu rc $test_rc, hashes equal: $same" >> $S
fi
unset DEVICE_NO_PACK
tail -40 $S
device_pack
