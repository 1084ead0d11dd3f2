#!/usr/bin/env bash
# ci/setup.sh — install what attnfuzz needs to build and test (Debian 12), when missing.
# Needs root for apt-get; otherwise it names the missing packages and stops.
set -euo pipefail
pkgs=(cmake make gcc pkg-config clang clang-format libclang-rt-14-dev libmpfr-dev libgmp-dev libjansson-dev libpng-dev python3)
# the Python worker API's tests (ci/tests/test_numpy_api.sh, the README's numpy kernel)
pkgs+=(python3-numpy python3-pytest)
# the SARIF schema test (ci/tests/test_sarif_schema.sh): a JSON Schema validator; pip fetches the schema
pkgs+=(python3-jsonschema python3-pip)
# the Slurm job-array test (ci/tests/test_slurm.sh) runs a localhost cluster: slurmctld, slurmd, munge
pkgs+=(slurm-wlm munge)
# --with-chromium: also the headless browser of ci/report_screenshots.sh (not needed by the tests)
if [ "${1:-}" = "--with-chromium" ]; then
  pkgs+=(chromium)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -ne 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "attnfuzz setup: missing packages: ${missing[*]} (run as root: apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "attnfuzz setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# the SARIF 2.1.0 schema (not in Debian) for test_sarif_schema.sh; without it that test
# skips and says why
bash "$(dirname "$0")/sarif_schema.sh" >/dev/null || echo "attnfuzz setup: no SARIF schema (test_sarif_schema will skip)" >&2
