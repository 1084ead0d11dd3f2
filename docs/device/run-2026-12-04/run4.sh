#!/usr/bin/env bash
# device call 4: CP over cudnn with virtual ranks on both cuDNN versions, whole
# (ci/device_session.sh cp), after the large-case LSE row budgets; then test_cudnn_fp8
# on the system cuDNN (F8's state); dq_gpu.py on the exact inputs of three torch finding cases.
set -u
B=build-dev
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python"
R=$OUT/r; mkdir -p $R; S=$R/summary.txt
OUT=$R/cp timeout 480 bash ci/device_session.sh $B cp > $R/cp.log 2>&1; echo "device_session cp: exit $?" >> $S
cat $R/cp/summary.txt >> $S 2>/dev/null
awk '/^### cuDNN/{v++} /\]: pass/{p[v]++} /\]: declined/{d[v]++} /\]: FINDING/{f[v]++} END{for(i=1;i<=v;i++) print "cuDNN run",i,"pass",p[i]+0,"declined",d[i]+0,"findings",f[i]+0}' $R/cp/cp.txt >> $S
grep -m2 "cudnn.*9\.\|version" $R/cp/cp.txt | cut -c1-160 >> $S
timeout 90 $B/test_cudnn_fp8 > $R/fp8.txt 2>&1; echo "test_cudnn_fp8 (system cuDNN): exit $?" >> $S; tail -8 $R/fp8.txt | cut -c1-300 >> $S
D=docs/device/run-2026-12-04
for c in 4c4f2637f0b1:2,15,2 0da052e8c27f:0,0,0 f9bd3853c090:1,24,2; do
  timeout 60 python3 $D/dq_gpu.py $D/dq-${c%%:*}.npz ${c##*:} > $R/dq-${c%%:*}.txt 2>&1
  echo "dq_gpu ${c%%:*}: exit $?" >> $S; grep -v Warning $R/dq-${c%%:*}.txt | grep -v "^  " | cut -c1-260 >> $S
done
cd $OUT && tar czf all.tgz r && rm -rf r
