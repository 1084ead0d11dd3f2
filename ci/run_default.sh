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
./build/attnfuzz campaign --time "$secs" --backend "$backend" $engine --out out/default-campaign corpora/seed
