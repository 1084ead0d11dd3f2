#!/usr/bin/env bash
# Device call (carry ["build-dev"] with test_oracle_gpu, test_gpu_ref, test_compare_gpu among
# its EXTRA_BINS; about 10 min): the device-resident kernels' tests, then a cudnn campaign from the default seeds, 8
# workers, CAMP_S seconds (default 280; RESUME=1 continues the same campaign on the still-warm
# machine), then its report: cases/s, the s_kv shares of every case and of the judged cases
# alone (seqlen_kv_judged_hist: the device-judge issue's >= 20 % above 1024 and >= 1 % above
# 16384), and each bucket replayed in its own process within REPLAY_S (150) seconds. The
# stats and the summary are written before the replays, and the pack is one file.
source ci/device_preamble.sh
# the device-resident kernels' tests first (CAMP_NO_TESTS=1: not again)
[ -n "${CAMP_NO_TESTS:-}" ] || for t in test_gpu_gen test_gpu_ref test_compare_gpu test_oracle_gpu; do
  [ -x $B/$t ] && stamp $t timeout 120 $B/$t > $R/$t.txt 2>&1
  grep -hE "checks passed|FAIL|CHECK failed" $R/$t.txt 2>/dev/null | tail -2 >> $S
done
CAMP_S=${CAMP_S:-280}
dir=/tmp/attnfuzz-camp
[ -n "${RESUME:-}" ] || rm -rf $dir
stamp campaign timeout $((CAMP_S + 90)) $B/attnfuzz campaign --backend cudnn --workers-per-gpu 8 --time $CAMP_S \
  --total-time $((CAMP_S + 60)) --out $dir ${RESUME:+--resume} > $R/campaign.log 2>&1
tail -8 $R/campaign.log >> $S
REPLAY_S=${REPLAY_S:-150} camp_report $dir camp --backend cudnn
tail -60 $S
device_pack
