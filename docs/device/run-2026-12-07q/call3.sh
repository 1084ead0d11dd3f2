#!/usr/bin/env bash
# Device call (carry ["build-q3"]; about 7 min): the GPU oracle's lean tiles (half the rows or
# keys per block for DMAX 64 / 128, <= 128 registers, two blocks an SM; dK and dV of d 128 in
# two launches). build-q3/old holds the binaries of the tree before (8dc4eb1).
# (1) test_oracle_gpu (the new tier against MPFR and the CPU tier); (2) bench_oracle_gpu old and
# new, b1 h16 causal: d 128 at 4096 16384 32768 (outputs' hash must be equal: causal tiles
# start where they did), d 64 and d 256 at 16384; (3) the 32k case without probes, old and
# new, and the 128k case new (ci/bench_judge.sh); (4) the GPU corpus through cudnn, old and
# new, verdicts compared (ci/verdict_compare.py).
B=${B:-build-q3}
source ci/device_preamble.sh
T0=$(date +%s)
stamp test_oracle_gpu timeout 120 $B/test_oracle_gpu > $R/test_oracle_gpu.txt 2>&1
grep -hE "checks passed|FAIL|CHECK failed|worst" $R/test_oracle_gpu.txt | tail -4 >> $S
for v in old new; do
  bin=$B/bench_oracle_gpu; [ $v = old ] && bin=$B/old/bench_oracle_gpu
  echo "== bench_oracle_gpu $v" >> $S
  timeout 120 $bin 4096 16384 32768 2>&1 | grep "gpu tier" >> $S
  timeout 60 $bin --dim 64 16384 2>&1 | grep "gpu tier" >> $S
  timeout 60 $bin --dim 256 16384 2>&1 | grep "gpu tier" >> $S
done
for v in old new; do
  A=$B; [ $v = old ] && A=$B/old
  MIX_TIME=0 LONG_S="32768" LONG_TIME=120 LONG_FLAGS=--no-probes OUT=$R/long-$v bash ci/bench_judge.sh $A > $R/long-$v.txt 2>&1
  echo "== 32k $v" >> $S
  grep -E "^attnfuzz s=|judge stages" $R/long-$v.txt | cut -c1-400 >> $S
done
MIX_TIME=0 LONG_S="131072" LONG_TIME=200 LONG_FLAGS=--no-probes OUT=$R/long128 bash ci/bench_judge.sh $B > $R/long128.txt 2>&1
echo "== 128k new" >> $S
grep -E "^attnfuzz s=|judge stages" $R/long128.txt | cut -c1-400 >> $S
for v in new old; do
  A=$B/attnfuzz; [ $v = old ] && A=$B/old/attnfuzz
  stamp "corpus $v" timeout 200 $A run corpora/gpu/*.case --backend cudnn --json > $R/corpus-$v.jsonl 2> $R/corpus-$v.err
  echo "corpus $v: $(grep -c '^{' $R/corpus-$v.jsonl) verdicts; $(tail -1 $R/corpus-$v.err)" >> $S
  [ $(($(date +%s) - T0)) -lt 420 ] || break
done
python3 ci/verdict_compare.py $R/corpus-old.jsonl $R/corpus-new.jsonl > $R/compare.txt 2>&1
echo "verdict_compare old vs new: exit $? | $(tail -3 $R/compare.txt | tr '\n' ' ')" >> $S
echo "elapsed $(($(date +%s) - T0)) s" >> $S
rm -f $R/long*/*.case
gzip -f $R/*.jsonl
tail -40 $S
device_pack
