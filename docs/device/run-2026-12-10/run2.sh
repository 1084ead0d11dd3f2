#!/usr/bin/env bash
# device call 2 of 2026-12-10 (after the merges): falsealarm.sh (sinks with fully masked rows
# through cudnn on both cuDNN versions; test_compare_gpu, test_criterion_gpu with the element
# rule's edge, test_masked_sink_lse, test_criterion_subnormal), then mutation.sh with the torch
# worker test on cuda only (cudnn over 40 GPU corpus cases: no input_mutation expected;
# planted:writes_k caught, planted:none clean). Two packs: $OUT/falsealarm.tgz, $OUT/all.tgz.
bash docs/device/run-2026-12-10/falsealarm.sh
mv "$OUT/all.tgz" "$OUT/falsealarm.tgz"
sed 's/for dev in cpu cuda; do/for dev in cuda; do/' docs/device/run-2026-12-10/mutation.sh > /tmp/mutation-cuda.sh
bash /tmp/mutation-cuda.sh
