#!/usr/bin/env bash
# device call 2 of 2026-12-07 (issues 12, 13): with the build of 5d5f2e1 (softcap tanh term,
# fp16 subnormal P inside dS, dQ/dK row mass share): the new tests, the GPU corpus on both
# cuDNN versions (ci/device_session.sh corpus), the torch finding cases again.
source ci/device_preamble.sh
for t in test_row_mass test_softcap_tanh; do
  stamp "$t" $B/$t > $R/$t.txt 2>&1; tail -1 $R/$t.txt >> $S
done
OUT=$R/s timeout 420 bash ci/device_session.sh $B corpus > $R/session.log 2>&1; echo "device_session corpus: exit $?" >> $S
cat $R/s/summary.txt >> $S 2>/dev/null
grep -rh ": FINDING" $R/s 2>/dev/null | cut -c1-260 | sort | uniq | head -30 >> $S
F=docs/device/run-2026-12-03/findings
timeout 120 $B/attnfuzz run $F/torch-sdpa-0da052e8c27f.case $F/torch-sdpa-4c4f2637f0b1.case $F/torch-sdpa-f9bd3853c090.case \
    --backend worker:torch-sdpa --engine all --worker-cmd "python3 -m attnfuzz_worker.examples.torch_sdpa" 2>&1 \
    | grep -v "UserWarning\|o = torch" > $R/torch-all.txt
echo "torch-sdpa finding cases, engine all: exit $?" >> $S; cut -c1-260 $R/torch-all.txt >> $S
device_pack
