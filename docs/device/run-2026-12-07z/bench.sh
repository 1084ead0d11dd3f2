#!/usr/bin/env bash
# Device call (carry ["build-min"]; about 5.5 min): the judge bench (ci/bench_judge.sh, N 600,
# 40 s a side, one worker and --jobs 8, the torch loop beside each) twice in one call: the
# defaults, then the cudnn mirror (2 GiB) and prepare-ahead on, to decide the defaults. (In the
# 40 s mixes of call-ab.sh on an H100, both on judged 282 and 266 cases against 211 and 208.)
B=${B:-build-min}
source ci/device_preamble.sh
for v in off both; do
  m=0 a=0; [ $v = both ] && m=2147483648 a=gpu
  ATTNFUZZ_CUDNN_MIRROR=$m ATTNFUZZ_PREPARE_AHEAD=$a OUT=$R/bench-$v N=600 MIX_TIME=40 MIX_JOBS=8 LONG_S="" \
    stamp "bench $v" bash ci/bench_judge.sh $B > $R/bench-$v.txt 2>&1
  echo "== bench $v (mirror $m, ahead $a)" >> $S
  grep -E "cases/s|ratio|prepared|host time" $R/bench-$v.txt | cut -c1-300 >> $S
  rm -rf $R/bench-$v/mix
done
gzip -f $R/bench-*/*.jsonl 2>/dev/null
tail -40 $S
device_pack
