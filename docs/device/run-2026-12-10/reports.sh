#!/usr/bin/env bash
# device call of branch reports (2026-12-10): the reports' provenance on the H200. Build:
# cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j2 &&
# ci/make_devbuild.sh build-gpu build-dev; carry ["build-dev"]. About 2 min.
#  1. attnfuzz --version: the cuDNN, CUDA runtime and driver it finds;
#  2. a 30 s cudnn campaign: DIR/provenance.json with the GPU model, NVIDIA driver, CUDA and
#     cuDNN versions filled, DIR/plot_data, report.sarif through ci/tests/sarif_check.py
#     --want-provenance, the summary block on stdout;
#  3. a 30 s torch-sdpa worker campaign: provenance "target" with the worker's package
#     versions (its hello), in report.json, JUnit properties and the SARIF invocation.
source ci/device_preamble.sh
stamp version $B/attnfuzz --version > $R/version.txt 2>&1
cat $R/version.txt >> $S
stamp cudnn-campaign timeout 90 $B/attnfuzz campaign --time 30 --total-time 60 --seed 5 --backend cudnn \
  --out $R/cudnn > $R/cudnn.out 2> $R/cudnn.err
stamp torch-campaign timeout 90 $B/attnfuzz campaign --backend worker:torch-sdpa \
  --worker-config python/targets/torch-sdpa.conf --time 30 --total-time 60 --seed 5 --out $R/torch \
  > $R/torch.out 2> $R/torch.err
for c in cudnn torch; do
  echo "== $c: stdout summary" >> $S
  cat $R/$c.out >> $S
  tail -3 $R/$c.err >> $S
  python3 ci/tests/sarif_check.py $R/$c/report.sarif --want-provenance >> $S 2>&1 && echo "$c sarif: ok" >> $S
  python3 - $R/$c >> $S 2>&1 <<'PY'
import json, sys
d = sys.argv[1]
run = json.load(open(f"{d}/provenance.json"))["runs"][-1]
print({k: run.get(k) for k in ("attnfuzz_version", "git_commit", "host", "gpu", "nvidia_driver", "cuda_driver",
                               "cuda_runtime", "cudnn", "seed", "outcome", "target")})
lines = open(f"{d}/plot_data").read().splitlines()
print(f"plot_data: {len(lines) - 1} lines; first {lines[1:2]}; last {lines[-1:]}")
inv = json.load(open(f"{d}/report.sarif"))["runs"][0]["invocations"][-1]
print("sarif invocation properties:", sorted(inv.get("properties", {})))
PY
done
tail -60 $S
device_pack
