#!/usr/bin/env bash
# Device call (carry ["build-min"]; about 3 min): prepare-ahead's new default (on for GPU
# backends with one case at a time, off with --jobs N > 1): test_cudnn_ahead; the GPU corpus
# at one worker with the default and with ATTNFUZZ_PREPARE_AHEAD=0, verdicts compared
# (ci/verdict_compare.py) and the cases prepared ahead counted; the corpus at --jobs 8 with the
# default (none should be prepared ahead).
B=${B:-build-min}
source ci/device_preamble.sh
stamp test_cudnn_ahead build-min/test_cudnn_ahead > $R/test_cudnn_ahead.txt 2>&1
tail -3 $R/test_cudnn_ahead.txt >> $S
stamp "corpus default" build-min/attnfuzz run corpora/gpu/*.case --backend cudnn --json > $R/corpus-default.jsonl 2> $R/corpus-default.err
ATTNFUZZ_PREPARE_AHEAD=0 stamp "corpus ahead 0" build-min/attnfuzz run corpora/gpu/*.case --backend cudnn --json > $R/corpus-off.jsonl 2> $R/corpus-off.err
stamp "corpus jobs 8" build-min/attnfuzz run corpora/gpu/*.case --backend cudnn --jobs 8 --json > $R/corpus-j8.jsonl 2> $R/corpus-j8.err
python3 ci/verdict_compare.py $R/corpus-off.jsonl $R/corpus-default.jsonl > $R/compare.txt 2>&1
echo "verdict_compare off vs default: exit $? | $(tail -1 $R/compare.txt)" >> $S
for f in default off j8; do
  echo "$f: $(grep -c '^{' $R/corpus-$f.jsonl) verdicts, prepared ahead $(grep -c '"prepared_ahead": *true' $R/corpus-$f.jsonl); $(tail -1 $R/corpus-$f.err)" >> $S
done
gzip -f $R/*.jsonl
tail -14 $S
device_pack
