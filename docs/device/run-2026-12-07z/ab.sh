#!/usr/bin/env bash
# Device call (carry ["build-min", "build-min-old"]; about 9.5 min): a clean A/B of the host
# changes of 2026-12-07 on one machine, long enough to see past the spread. build-min-old is
# 90f9ad2's attnfuzz (before util/heap.h and the pool of copies, judge/clone.h):
#   git worktree add /tmp/old 90f9ad2 && cmake -S /tmp/old -B /tmp/old/build-gpu
#     -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/old/build-gpu -j2 --target attnfuzz
#   mkdir -p build-min-old && strip --strip-debug -o build-min-old/attnfuzz /tmp/old/build-gpu/attnfuzz
# (1) the judge bench's mix, one worker, 40 s each, interleaved: old / new / new with the
#     mirror and prepare-ahead on / old / new / both; (2) the 32k case (b1 h16 s32768 d128
#     causal fwd+bwd): old, new, new with ATTNFUZZ_HEAP_KEEP=0, new with the mirror at
#     256 MiB (the case is not mirrored) and at 2 GiB, new with prepare-ahead.
B=${B:-build-min}
source ci/device_preamble.sh
T0=$(date +%s)
mix=/tmp/mix
python3 ci/bench/gen_mix.py 300 $mix 2026 > /dev/null
for v in old new both old2 new2 both2; do
  A=build-min/attnfuzz; m=0; a=0
  case $v in old*) A=build-min-old/attnfuzz ;; both*) m=2147483648; a=gpu ;; esac
  ATTNFUZZ_CUDNN_MIRROR=$m ATTNFUZZ_PREPARE_AHEAD=$a timeout ${MIX_S:-40} $A run $mix/case-*.case --backend cudnn --json \
    > $R/mix-$v.jsonl 2> $R/mix-$v.err
  echo "== mix $v: $(grep -c '^{' $R/mix-$v.jsonl) cases in ${MIX_S:-40} s" >> $S
  python3 ci/bench/mix_stages.py $R/mix-$v.jsonl 2>&1 | grep -E "^  (run |compare|probes|host|prepared|run 0 copy)" >> $S
done
c=$R/long-32768.case
printf 'dtype = bf16\nbatch = 1\nheads = 16\nseqlen = 32768\nhead_dim = 128\nlayout = bhsd\nmask = causal\nbackward = yes\nseed = 7\n' > $c
for v in old new heap0 mirror256 mirror2g ahead; do
  A=build-min/attnfuzz; m=0; a=0; k=536870912
  case $v in old) A=build-min-old/attnfuzz ;; heap0) k=0 ;; mirror256) m=268435456 ;; mirror2g) m=2147483648 ;; ahead) a=gpu ;; esac
  t0=$(date +%s.%N)
  ATTNFUZZ_HEAP_KEEP=$k ATTNFUZZ_CUDNN_MIRROR=$m ATTNFUZZ_PREPARE_AHEAD=$a timeout 90 $A run $c --backend cudnn --json \
    > $R/long-$v.json 2> $R/long-$v.err
  echo "== 32k $v: exit $?, $(python3 -c "import time; print('%.1f s' % (time.time() - $t0))")" >> $S
  python3 ci/bench/judge_stages.py $R/long-$v.json "32k $v" >> $S 2>&1
  [ $(($(date +%s) - T0)) -lt ${STOP_S:-540} ] || break
done
gzip -f $R/*.jsonl
tail -60 $S
device_pack
