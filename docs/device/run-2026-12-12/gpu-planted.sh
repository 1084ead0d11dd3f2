#!/usr/bin/env bash
# device call: the device plugins' self-test (carry ["build-dev"]; about 5 min).
#   1. corpora/gpu through planted_gpu:none (flash_ref on device buffers): the control;
#      every case passes or is declined;
#   2. a 60 s campaign from corpora/gpu on planted_gpu:dv_tail_write (one element stored
#      past each O row when head_dim_v % 8 != 0): time to first finding and buckets;
#   3. the new case kinds through cudnn (served: thd + paged, fp8_e5m2, out_dtype; declined with
#      their reasons: block_mask, custom_mask, heads_v), and through cpu with the GPU reference;
#   4. test_cudnn_feature_declines and test_cudnn_sdpa (default engines).
source ci/device_preamble.sh
stamp "corpus planted_gpu:none" timeout 150 $B/attnfuzz run corpora/gpu/*.case --backend planted_gpu:none --jobs 8 \
  > $R/corpus-none.txt 2>&1
tail -1 $R/corpus-none.txt >> $S
grep -v ": pass\|: declined" $R/corpus-none.txt | cut -c1-300 | head -20 >> $S
stamp "campaign planted_gpu:dv_tail_write" timeout 100 $B/attnfuzz campaign corpora/gpu --backend planted_gpu:dv_tail_write \
  --time 60 --total-time 90 --jobs 4 --seed 20261212 --out $R/camp-dv > $R/camp-dv.txt 2>&1
tail -4 $R/camp-dv.txt >> $S
python3 - $R/camp-dv >> $S 2>&1 <<'PY'
import json, os, sys
d = sys.argv[1]
s = json.load(open(f"{d}/stats.json"))
print("dv_tail_write campaign:", {k: s.get(k) for k in ("cases", "declined", "elapsed_s", "findings", "buckets",
      "time_to_first_finding_s", "first_finding_s")})
for b in sorted(os.listdir(f"{d}/findings")) if os.path.isdir(f"{d}/findings") else []:
    f = f"{d}/findings/{b}/finding.case"
    head = [l.strip() for l in open(f) if l.startswith("#")][:3] if os.path.exists(f) else []
    print(" bucket", b, head)
PY
NEW="corpora/gpu/bf16-thd-paged-16-gqa-causal-br-fwd.case corpora/gpu/fp16-thd-paged-5-gap-fwd.case
  corpora/gpu/fp8-e4m3-out-bf16-causal-b2h4s256d128-fwd.case corpora/gpu/fp8-e5m2-causal-b2h4s256d128-bwd.case
  corpora/gpu/fp8-e5m2-causal-b2h4s256d128-fwd.case corpora/seed-features/fp16-block-mask-causal-bwd.case
  corpora/seed-features/fp16-custom-mask-bwd.case corpora/seed-features/fp16-heads-v-bwd.case"
stamp "new kinds cudnn" timeout 100 $B/attnfuzz run $NEW --backend cudnn > $R/newkinds.txt 2>&1
cut -c1-300 $R/newkinds.txt >> $S
stamp "new kinds cpu, GPU reference" timeout 100 $B/attnfuzz run corpora/seed-features/fp16-block-mask-causal-bwd.case \
  corpora/seed-features/fp16-custom-mask-bwd.case corpora/seed-features/fp16-heads-v-bwd.case --backend cpu --reference gpu \
  > $R/newkinds-cpu.txt 2>&1
cut -c1-200 $R/newkinds-cpu.txt >> $S
export ATTNFUZZ_CUDNN_TEST_ENGINES=default
for t in test_cudnn_feature_declines test_cudnn_sdpa; do
  stamp $t timeout 150 $B/$t > $R/$t.txt 2>&1
  grep -E "checks passed|FAIL|CHECK failed|SKIP|thd.*paged" $R/$t.txt | tail -8 >> $S
done
tail -40 $S
device_pack
