#!/usr/bin/env bash
# The cudnn campaign of 2026-12-05 (carry ["build-dev"]; run inline on a warm machine):
# the default seeds, 8 jobs, 420 s, each bucket replayed in its own process.
source ci/device_preamble.sh
B=build-dev
stamp campaign timeout 500 $B/attnfuzz campaign corpora/seed --backend cudnn --jobs 8 --time 420 --total-time 460 \
  --seed 20261205 --out /tmp/cd-camp > $R/campaign.txt 2>&1
tail -6 $R/campaign.txt >> $S
camp_report /tmp/cd-camp cudnn --backend cudnn
tail -40 $S
device_pack
