#!/usr/bin/env bash
# Device call (carry ["build-33a", "build-33b"]; about 2 min): the GPU corpus's verdicts before
# and after the case-field table (455f709, model/case_fields.h: the parse, print and defaults
# of every case field from one table), the architecture change that every case passes through.
# Both binaries (build-33a: 455f709^, build-33b: 455f709, each with its plugins/) run the
# corpus of 455f709^ (carried as build-33a/corpus-gpu) at the same time; ci/verdict_compare.py compares them here.
# Make the two builds here first (about 5 min on 2 cores):
#   git worktree add /tmp/wt33 455f709^ && cd /tmp/wt33 &&
#   cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j2 --target attnfuzz attnfuzz_plugins
#   (in the checkout) mkdir -p build-33a/lib build-33a/corpus-gpu; strip -o build-33a/attnfuzz /tmp/wt33/build-gpu/attnfuzz;
#   cp -r /tmp/wt33/build-gpu/plugins build-33a/; cp /tmp/wt33/corpora/gpu/*.case build-33a/corpus-gpu/; lib/ as build-min's
#   then `git -C /tmp/wt33 checkout 455f709`, build again, and build-33b the same way (no corpus).
# On this machine both binaries print the 66 corpus cases identically (attnfuzz print, 1368 lines).
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
