#!/usr/bin/env bash
# Device call (carry ["build-min", "build-min-fp8", ".whl/fe"]; about 6 min): the fp8 O rule's
# score-error share (criterion_fp8.c, criterion.h fp8_score_o) on real cuDNN FP8 kernels.
# build-min is the binary before the share, build-min-fp8/attnfuzz the one with it:
#   strip --strip-debug -o build-min-fp8/attnfuzz build-gpu/attnfuzz
# (1) every fp8 case of the GPU corpus, the regression corpus and docs/device/next (the two
#     low_lse buckets, their minimised case, F13's bucket) with both binaries on cuDNN 9.14
#     (system) and 9.19 (the torch venv's): verdicts and the O / LSE ratios side by side;
# (2) the bare script of the minimised case (docs/research-scripts/cudnn_fp8_long_q.py
#     --low-lse=2e5: no attnfuzz; two processes on each version).
B=${B:-build-min}
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
cases=$(ls corpora/gpu/fp8-*.case corpora/regression/cudnn-fp8-*.case docs/device/next/fp8-*.case)
for ver in 914 919; do
  lib=; [ $ver = 919 ] && lib=$VENV_CUDNN
  for bin in old new; do
    A=build-min/attnfuzz; [ $bin = new ] && A=build-min-fp8/attnfuzz
    LD_LIBRARY_PATH=${lib:+$lib:}$LD_LIBRARY_PATH stamp "fp8 $ver $bin" timeout 200 $A run $cases --backend cudnn \
      --jobs 4 --json > $R/fp8-$ver-$bin.jsonl 2> $R/fp8-$ver-$bin.err
  done
done
python3 - $R >> $S <<'PY'
import json, os, sys
R = sys.argv[1]
rows = {}
for ver in ("914", "919"):
    for b in ("old", "new"):
        p = os.path.join(R, "fp8-%s-%s.jsonl" % (ver, b))
        for ln in open(p) if os.path.exists(p) else []:
            if not ln.startswith("{"):
                continue
            d = json.loads(ln)
            t = d.get("tensors", {})
            f = d.get("findings") or [{}]
            cell = "%s O %.3g LSE %.3g %s" % (d.get("verdict"), t.get("O", {}).get("ratio", -1),
                                             t.get("LSE", {}).get("ratio", -1), f[0].get("tensor", ""))
            rows.setdefault((os.path.basename(d["case"]), d.get("engine", "")), {})[ver + b] = cell
print("== fp8 cases: 9.14 old | 9.14 new | 9.19 old | 9.19 new")
for (c, e), v in sorted(rows.items()):
    print("%s %s\n   %s" % (c, e, " | ".join(v.get(k, "-") for k in ("914old", "914new", "919old", "919new"))))
PY
[ -f /tmp/fe/env.sh ] || stamp install-fe bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install-fe.txt 2>&1
( . /tmp/fe/env.sh && timeout 240 python3 docs/research-scripts/cudnn_fp8_long_q.py --low-lse=2e5 ) \
  > $R/bare-fp8-lowlse.txt 2>&1
echo "== bare fp8 low_lse: exit $?" >> $S
grep -vE "Warning|warn" $R/bare-fp8-lowlse.txt | grep -E "RESULT|fit:|row 0|row 1|run [12]:|recipe|case:|backend" | tail -70 >> $S
gzip -f $R/*.jsonl
tail -80 $S
device_pack
