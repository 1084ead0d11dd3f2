#!/usr/bin/env bash
# ci/run_default.sh [SECONDS] — the main job: set up, build, run a short default fuzz
# campaign (the cudnn backend on every engine when a GPU is present, else the cpu
# backend) into out/default-campaign, and print its summary.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
bash ci/setup.sh
bash ci/build.sh build
backend=cpu
engine=""
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && ./build/attnfuzz backends | grep -q '^cudnn *available'; then
  backend=cudnn
  engine="--engine all"
fi
echo "attnfuzz: default campaign, backend $backend, $secs s" >&2
rm -rf out/default-campaign
# shellcheck disable=SC2086
rc=0
./build/attnfuzz campaign --time "$secs" --backend "$backend" $engine --out out/default-campaign corpora/seed || rc=$?
# what a user runs next
d=out/default-campaign
first=$(ls "$d"/findings/*/finding.case 2> /dev/null | head -1 || true)
echo
echo "Next:"
echo "  open the report:    xdg-open $d/report.html   (or file://$PWD/$d/report.html in a browser)"
echo "  triage the buckets: build/attnfuzz triage $d"
if [ -n "$first" ]; then
  echo "  repro a finding:    build/attnfuzz repro $first --backend $backend"
  echo "  shrink it further:  build/attnfuzz minimize $first -o small.case --backend $backend"
else
  echo "  repro a finding:    build/attnfuzz repro $d/findings/<bucket>/finding.case --backend $backend   (none this time)"
fi
echo "  a longer campaign:  ci/run_default.sh 3600   or   build/attnfuzz campaign --time 3600 --total-time 3900 --backend $backend --jobs $(nproc 2> /dev/null || echo 2) --out out/c1"
echo "  every option:       build/attnfuzz campaign --help"
exit $rc
