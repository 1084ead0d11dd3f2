#!/usr/bin/env bash
# device call 1 of 2026-12-03: tensor-core score error; F9 with the EXP-form softcap; the
# flex eager finding without cuBLAS reduced-precision reductions; background survival probe
set -u
B=build-dev
export LD_LIBRARY_PATH="$PWD/$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$PWD/python"
R=$OUT/r; mkdir -p $R; S=$R/summary.txt
D=docs/device/run-2026-12-03
# 0. does a setsid'd process outlive this call? (checked by the next call)
setsid bash -c 'echo $$ > /tmp/bg-probe.pid; sleep 1500' < /dev/null > /dev/null 2>&1 &
date +%s > /tmp/bg-probe.start
# 1. F9: softcap cases, FE's TANH form and the EXP form, both cuDNN versions
venv=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))')
for tag in sys venv; do
  lp=$LD_LIBRARY_PATH; [ $tag = venv ] && lp="$venv:$LD_LIBRARY_PATH"
  for form in tanh exp; do
    LD_LIBRARY_PATH=$lp ATTNFUZZ_CUDNN_SOFTCAP=$form timeout 200 $B/attnfuzz run corpora/gpu/feat-softcap-*.case \
      --backend cudnn --engine all > $R/f9-$tag-$form.txt 2>&1
    echo "F9 $tag $form: exit $? pass $(grep -c ': pass' $R/f9-$tag-$form.txt) lines $(wc -l < $R/f9-$tag-$form.txt)" >> $S
    grep -v ': pass' $R/f9-$tag-$form.txt | head -8 | cut -c1-300 >> $S
  done
done
# 2. flex eager, default and without reduced-precision reductions
c=corpora/gpu/bf16-swa-causal-tl-64-bwd.case
for w in default rpr-off; do
  cmd="python3 -m attnfuzz_worker.examples.flex_attention --device cuda"
  [ $w = rpr-off ] && cmd="python3 $D/flex_rpr.py --device cuda"
  timeout 200 $B/attnfuzz run $c --backend worker:flex-attention --engine eager --worker-cmd "$cmd" > $R/flex-$w.txt 2>&1
  echo "flex eager $w: exit $?" >> $S; head -5 $R/flex-$w.txt | cut -c1-300 >> $S
done
# 3. tensor-core score error
timeout 240 python3 $D/tc_score.py > $R/tc.txt 2>&1; echo "tc_score exit $?" >> $S
cat $R/tc.txt >> $S
nvidia-smi --query-gpu=name,driver_version --format=csv >> $S
cd $OUT && tar czf all.tgz r && rm -rf r
