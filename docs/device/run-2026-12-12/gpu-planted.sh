#!/usr/bin/env bash
# device call: the device plugins' self-test (carry ["build-dev"]; about 4 min).
#   1. corpora/gpu through planted_gpu:none (flash_ref on device buffers): the control;
#      every case passes or is declined;
#   2. a 60 s campaign from corpora/gpu on planted_gpu:dv_tail_write (one element stored
#      past each O row when head_dim_v % 8 != 0): time to first finding and buckets;
#   3. the new case kinds of the GPU corpus through cudnn (declines with their reasons).
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
ls corpora/gpu/*.case | grep -E "block-mask|custom-mask|heads-v|e5m2|out-dtype|thd-paged" > $R/newkinds.list 2>/dev/null
if [ -s $R/newkinds.list ]; then
  stamp "new kinds cudnn" timeout 100 $B/attnfuzz run $(cat $R/newkinds.list) --backend cudnn > $R/newkinds.txt 2>&1
  cut -c1-300 $R/newkinds.txt >> $S
fi
tail -40 $S
device_pack
