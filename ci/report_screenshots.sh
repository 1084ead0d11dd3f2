#!/usr/bin/env bash
# ci/report_screenshots.sh [BUILD] [SECONDS] — the report as a browser shows it: runs a
# clean campaign (the cpu backend) and a report with findings: campaigns on
# planted:window_dropped (a tensor mismatch, and a leak: its dropped window) and on
# planted:metadata_unchecked (crashes and out-of-bounds writes under the metadata probe)
# merged into one report (`attnfuzz merge`), then renders each report.html in headless
# Chromium (Debian package chromium: `ci/setup.sh --with-chromium`; without it this
# script says so and exits 77) into docs/report/{clean,findings}.png.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
secs=${2:-20}
bin=$build/attnfuzz
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "report_screenshots: chromium not found (run: bash ci/setup.sh --with-chromium)" >&2
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "report_screenshots: clean campaign (cpu, $secs s)" >&2
"$bin" campaign --time "$secs" --backend cpu --out "$work/clean" corpora/seed > "$work/clean.log" 2>&1 || true
echo "report_screenshots: campaign with findings (planted:window_dropped, $((secs * 2)) s)" >&2
"$bin" campaign --time "$((secs * 2))" --backend planted:window_dropped --out "$work/window" corpora/seed \
  > "$work/window.log" 2>&1 || true
"$bin" campaign --time "$secs" --backend planted:metadata_unchecked --out "$work/metadata" corpora/seed \
  > "$work/metadata.log" 2>&1 || true
"$bin" merge "$work/findings" "$work/window" "$work/metadata" > "$work/merge.log" 2>&1 || true  # 1: findings
mkdir -p docs/report
for name in clean findings; do
  echo "report_screenshots: rendering $name/report.html" >&2
  # --no-sandbox: the sandbox needs user namespaces, absent when run as root in CI
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,"$([ "$name" = findings ] && echo 5200 || echo 2000)" \
    --screenshot="$PWD/docs/report/$name.png" "file://$work/$name/report.html" > "$work/$name.chromium.log" 2>&1
  test -s "docs/report/$name.png"
done
echo "report_screenshots: docs/report/clean.png docs/report/findings.png" >&2
