#!/usr/bin/env bash
# Device call (carry ["build-min"]; about 9 min): (1) the judge bench's mix (N 600, 40 s a
# side) at one worker and at --jobs 8, 12 and 16, the torch loop before and after the jobs
# (the anchor's own spread in one call); (2) a cudnn campaign from the default seeds at one
# worker (--workers-per-gpu 1), 150 s: the campaign path of prepare-ahead's default (stats.json
# prepared_ahead); (3) bench_oracle_gpu at s = 32768: the oracle tier's passes one by one.
B=${B:-build-min}
source ci/device_preamble.sh
T0=$(date +%s)
N=600 MIX_TIME=40 LONG_S="" MIX_JOBS="8 12 16" OUT=$R/bench stamp bench bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
grep -E "^attnfuzz run|^torch loop|^ratio|host time outside|prepared ahead" $R/bench.txt >> $S
echo "torch loop again: $(python3 ci/bench/torch_loop.py $R/bench/mix/mix.jsonl 40 2>&1 | tail -1)" >> $S
dir=/tmp/attnfuzz-camp1
rm -rf $dir
stamp "campaign 1 worker" timeout 240 $B/attnfuzz campaign --backend cudnn --workers-per-gpu 1 --time 150 \
  --total-time 200 --out $dir > $R/campaign.log 2>&1
tail -8 $R/campaign.log >> $S
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("stats:", {k: s.get(k) for k in ("cases","elapsed_s","prepared_ahead","declined","buckets","findings","jobs")})' $dir/stats.json >> $S 2>&1
grep -o '"prepared_ahead[^,]*' $dir/stats.json | head -3 >> $S
REPLAY_S=40 camp_report $dir camp1 --backend cudnn
[ -x $B/bench_oracle_gpu ] && stamp bench_oracle_gpu timeout 120 $B/bench_oracle_gpu 32768 > $R/bench_oracle_gpu.txt 2>&1
cat $R/bench_oracle_gpu.txt >> $S
echo "elapsed $(($(date +%s) - T0)) s" >> $S
rm -rf $R/bench/mix
gzip -f $R/bench/*.jsonl
tail -60 $S
device_pack
