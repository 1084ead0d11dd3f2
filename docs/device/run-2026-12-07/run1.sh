#!/usr/bin/env bash
# device call 1 of 2026-12-07 (issues 12, 13): the new criterion tests on the GPU build;
# tanh.approx.f32's relative error over every fp32 input; F9 (softcap, FE's TANH form) and
# F8 (fp8 backward causal; also with CUDNN_RESCALE_THRESHOLD=0, which cudnn-frontend's
# tests set on SM90) on both cuDNN versions; the unexplained worker finding cases again.
source ci/device_preamble.sh
for t in test_row_mass test_softcap_tanh; do
  stamp "$t" $B/$t > $R/$t.txt 2>&1; tail -2 $R/$t.txt >> $S
done
stamp "tanh_approx_err" $B/tanh_approx_err > $R/tanh.txt 2>&1; cat $R/tanh.txt >> $S
for tag in sys venv; do
  lp=$LD_LIBRARY_PATH; [ $tag = venv ] && lp="$VENV_CUDNN:$LD_LIBRARY_PATH"
  LD_LIBRARY_PATH=$lp timeout 200 $B/attnfuzz run corpora/gpu/feat-softcap-*.case --backend cudnn --engine all \
      > $R/f9-$tag.txt 2>&1
  echo "F9 $tag TANH: exit $? pass $(grep -c ': pass' $R/f9-$tag.txt) of $(grep -c ': ' $R/f9-$tag.txt)" >> $S
  grep -v ': pass' $R/f9-$tag.txt | head -6 | cut -c1-300 >> $S
  for th in unset 0; do
    env=(); [ $th = 0 ] && env=(CUDNN_RESCALE_THRESHOLD=0)
    env LD_LIBRARY_PATH=$lp "${env[@]}" timeout 150 $B/attnfuzz run corpora/gpu/fp8-causal-b2h4s256d128-bwd.case \
        corpora/gpu/fp8-gqa-4to2-causal-sbhd-d128-bwd.case --backend cudnn --engine all > $R/f8-$tag-$th.txt 2>&1
    echo "F8 $tag rescale_threshold=$th: exit $? pass $(grep -c ': pass' $R/f8-$tag-$th.txt) of $(grep -c ': ' $R/f8-$tag-$th.txt)" >> $S
    grep -v ': pass' $R/f8-$tag-$th.txt | head -4 | cut -c1-260 >> $S
  done
done
F=docs/device/run-2026-12-03/findings
TS="python3 -m attnfuzz_worker.examples.torch_sdpa"
timeout 200 $B/attnfuzz run $F/torch-sdpa-0da052e8c27f.case $F/torch-sdpa-d37396643d4d.case $F/torch-sdpa-4c4f2637f0b1.case \
    $F/torch-sdpa-f9bd3853c090.case $F/torch-sdpa-08ff3f6165aa.case $F/torch-sdpa-845bb7e972ba.case \
    --backend worker:torch-sdpa --engine all --worker-cmd "$TS" > $R/torch-all.txt 2>&1
echo "torch-sdpa finding cases, engine all: exit $?" >> $S; cut -c1-300 $R/torch-all.txt >> $S
timeout 150 $B/attnfuzz run $F/flex-*.case --backend worker:flex --engine all \
    --worker-cmd "python3 -m attnfuzz_worker.examples.flex_attention --device cuda" > $R/flex-all.txt 2>&1
echo "flex finding cases, engine all: exit $?" >> $S; cut -c1-300 $R/flex-all.txt >> $S
timeout 120 $B/attnfuzz run $F/jax-*.case --backend worker:jax --engine all \
    --worker-cmd "python3 -m attnfuzz_worker.examples.jax_dpa --device cuda" > $R/jax-all.txt 2>&1
echo "jax finding cases, engine all: exit $?" >> $S; cut -c1-300 $R/jax-all.txt >> $S
device_pack
