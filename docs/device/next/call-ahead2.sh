#!/usr/bin/env bash
# Device call (carry ["build-min"]; about 2.5 min): call-ahead.sh's corpus timing again in the
# other order. There the default (prepare-ahead on) ran first on a fresh machine and took 103 s
# against 19 s off, 55 s of it cuDNN graph builds that the later runs found cached. Here a
# warm-up run (at most 60 s, ahead off) first, then the default, then off.
B=${B:-build-min}
source ci/device_preamble.sh
ATTNFUZZ_PREPARE_AHEAD=0 stamp "warm-up" timeout 60 build-min/attnfuzz run corpora/gpu/*.case --backend cudnn > /dev/null 2>&1
stamp "corpus default" build-min/attnfuzz run corpora/gpu/*.case --backend cudnn --json > $R/corpus-default.jsonl 2> $R/corpus-default.err
ATTNFUZZ_PREPARE_AHEAD=0 stamp "corpus ahead 0" build-min/attnfuzz run corpora/gpu/*.case --backend cudnn --json > $R/corpus-off.jsonl 2> $R/corpus-off.err
python3 ci/verdict_compare.py $R/corpus-off.jsonl $R/corpus-default.jsonl > $R/compare.txt 2>&1
echo "verdict_compare off vs default: exit $? | $(tail -1 $R/compare.txt)" >> $S
gzip -f $R/*.jsonl
tail -8 $S
device_pack
