#!/usr/bin/env bash
# Device call (carry ["build-33a", "build-33b"]; about 2 min): the GPU corpus's verdicts before
# and after the case-field table (455f709, model/case_fields.h: the parse, print and defaults
# of every case field from one table), the architecture change that every case passes through.
# Both binaries (build-33a: 455f709^, build-33b: 455f709, each with its plugins/) run the
# corpus of 455f709^ (carried as build-33a/corpus-gpu) at the same time; ci/verdict_compare.py compares them here.
source ci/device_preamble.sh
T0=$(date +%s)
for b in build-33a build-33b; do
  (LD_LIBRARY_PATH=$PWD/$b/lib:${LD_LIBRARY_PATH:-} timeout 200 $b/attnfuzz run build-33a/corpus-gpu/*.case --backend cudnn --json > $R/corpus-$b.jsonl 2> $R/corpus-$b.err; echo "$b: exit $? $(grep -c '^{' $R/corpus-$b.jsonl) verdicts" >> $S) &
done
wait
tail -1 $R/corpus-build-33a.err >> $S
tail -1 $R/corpus-build-33b.err >> $S
echo "elapsed $(($(date +%s) - T0)) s" >> $S
cat $S
device_pack
