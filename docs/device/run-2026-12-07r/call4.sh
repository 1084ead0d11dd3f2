#!/usr/bin/env bash
# Device call, the next session's first (carry ["build-min"]: attnfuzz and lib/ of this tree's
# GPU build, ci/make_devbuild.sh; about 8 min): the device judge's figures as a nightly campaign
# meets them, and the certification after the MPFR tier's integer dots.
#  1. ci/bench_judge.sh with PLANS_WARM=1 (N 600, 30 s a side, --jobs 8 and 12, the torch loop
#     once) and the 32k case without probes (its certification was 18.3 s beside the case).
#  2. A cudnn campaign from the default seeds at --jobs 8 with its plan folder in the campaign
#     folder, 100 s, then resumed for 100 s: stats.json's plans_from_disk / plans_to_disk after
#     each half (how often fuzzed cases meet a plan kept before).
B=${B:-build-min}
source ci/device_preamble.sh
T0=$(date +%s)
PLANS_WARM=1 N=600 MIX_TIME=30 MIX_JOBS="8 12" TORCH_RUNS=1 LONG_S="32768" LONG_TIME=120 \
  LONG_FLAGS=--no-probes OUT=$R/bench bash ci/bench_judge.sh $B > $R/bench.txt 2>&1
grep -E "^(plan folder|attnfuzz|torch loop|ratio)|judge stages|host time outside" $R/bench.txt | cut -c1-400 >> $S
rm -rf $R/bench/mix $R/bench/plans $R/bench/long/*.case
camp=/tmp/camp
rm -rf $camp
for half in 1 2; do
  resume=""; [ $half = 2 ] && resume=--resume
  ATTNFUZZ_CUDNN_PLAN_DIR=$camp/cudnn-plans stamp "campaign half $half" timeout 160 $B/attnfuzz campaign \
    --time 100 --total-time 130 --backend cudnn --jobs 8 $resume --out $camp > $R/camp$half.log 2>&1
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("  half %s: cases %s, plans_from_disk %s, plans_to_disk %s, buckets %s, findings %s" % (sys.argv[2], s.get("cases"), s.get("plans_from_disk"), s.get("plans_to_disk"), s.get("buckets"), s.get("findings")))' \
    $camp/stats.json $half >> $S 2>&1
done
echo "  plan folder: $(ls $camp/cudnn-plans | wc -l) files, $(du -sh $camp/cudnn-plans | cut -f1)" >> $S
REPLAY_S=30 camp_report $camp "jobs 8, 2 x 100 s, plan folder" --backend cudnn
echo "elapsed $(($(date +%s) - T0)) s" >> $S
gzip -f $R/bench/*.jsonl 2>/dev/null
tail -40 $S
device_pack
