#!/usr/bin/env bash
# device call 5 of 2026-12-09: the two campaign buckets of call 4 that no earlier finding
# explains, each run twice in separate processes on the system cuDNN and the torch venv's,
# with their JSON verdicts (the check, the element, the allowance).
source ci/device_preamble.sh
for c in corpora/regression/cudnn-alibi-fwd-s2x3-o-ratio3.case corpora/regression/cudnn-gqa-decode566-dk-subnormal-ratio1002.case; do
  for tag in sys venv; do
    lp=$LD_LIBRARY_PATH; [ $tag = venv ] && lp="$VENV_CUDNN:$LD_LIBRARY_PATH"
    for k in 1 2; do
      LD_LIBRARY_PATH=$lp timeout 60 $B/attnfuzz run $c --backend cudnn > $R/$(basename $c .case)-$tag-$k.txt 2>&1
      echo "$(basename $c) $tag run $k: $(head -c 330 $R/$(basename $c .case)-$tag-$k.txt)" >> $S
    done
  done
  timeout 60 $B/attnfuzz run $c --backend cudnn --json > $R/$(basename $c .case).json 2>/dev/null
  python3 -c "import json,sys; v=json.load(open(sys.argv[1])); print([ (f['kind'], f['tensor'], f['row'], f['col'], f['error'], f['allowed'], f['detail'][:160]) for f in v['findings'][:3]])" $R/$(basename $c .case).json >> $S 2>&1
done
tail -30 $S
device_pack
