#!/usr/bin/env bash
# device call (falsealarm branch): the three false alarms of attnfuzz's own judge.
#  1. cuDNN on cases with sinks and fully masked rows: the masked rows' LSE is the sink logit
#     (FE's composite softmax: max = sink, sum = 1), which the judge now expects; each case
#     on the system cuDNN (9.14) and the venv's (9.19). Expected: no `convention` finding on
#     LSE (other findings, if any, are cuDNN's own and are listed).
#  2. the tests whose code the change touches and that need the device build: test_compare_gpu
#     (the row summary struct gained a field, zero on the device), test_criterion_gpu, and
#     the two new host tests from the same build.
# Build: cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j2 &&
#        EXTRA_BINS="test_criterion_gpu test_masked_sink_lse test_criterion_subnormal" \
#        ci/make_devbuild.sh build-gpu build-dev      carry: ["build-dev"]   (< 5 min)
source ci/device_preamble.sh
C=$R/cases
mkdir -p $C
# the shape: bhsd, a band window, a stride gap, d 136 / 40, forward, a sink; rows
# past the band's reach see no key (causal top-left, s_q > s_kv)
base='layout = bhsd\nheads = 2\nseqlen_q = 64\nseqlen_kv = 32\nhead_dim_qk = 136\nhead_dim_v = 40\nstride_gap = 8\nseed = 11\n'
printf "dtype = fp16\n${base}mask = causal\nwindow = 7,0\nsoftmax = learnable\n" > $C/sink-band-fwd.case
printf "dtype = bf16\n${base}mask = causal\nwindow = 7,0\nsoftmax = off_by_one\n" > $C/sink-offbyone-band-fwd.case
printf "dtype = fp16\n${base}mask = causal\nwindow = 7,0\nsoftmax = learnable\nbackward = yes\n" > $C/sink-band-bwd.case
printf "dtype = bf16\n${base}mask = causal\nalign = bottom_right\nsoftmax = learnable\n" > $C/sink-br-fwd.case
for tag in system venv; do
  lp=$LD_LIBRARY_PATH; [ $tag = venv ] && lp="$VENV_CUDNN:$LD_LIBRARY_PATH"
  [ $tag = venv ] && [ -z "$VENV_CUDNN" ] && { echo "venv: no cuDNN" >> $S; continue; }
  LD_LIBRARY_PATH=$lp stamp "cudnn sinks, masked rows ($tag)" timeout 120 $B/attnfuzz run $C/*.case --backend cudnn \
    > $R/sinks-$tag.txt 2>&1
  cut -c1-300 $R/sinks-$tag.txt >> $S
  echo "convention findings ($tag): $(grep -c 'FINDING convention' $R/sinks-$tag.txt)" >> $S
done
for t in test_compare_gpu test_criterion_gpu test_masked_sink_lse test_criterion_subnormal; do
  stamp "$t" timeout 150 $B/$t > $R/$t.txt 2>&1; tail -3 $R/$t.txt >> $S
done
tail -40 $S
device_pack
