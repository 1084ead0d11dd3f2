#!/usr/bin/env bash
# ci/device_campaign.sh [BUILD_DIR] [SECONDS] [CUDNN_LIB_DIR] — a cuDNN campaign on a GPU
# machine that ends on its own within SECONDS (campaign --total-time: fuzzing for 70% of
# it, then minimisation; findings not minimised in time are stored as found) and brings
# everything back in few files: the campaign works in a scratch folder (its corpus holds
# hundreds of inputs) and only stats.json, the reports, the stderr log and one archive
# of findings/ are copied to $OUT (default ./device-out). CUDNN_LIB_DIR, when given, goes
# first on LD_LIBRARY_PATH (attnfuzz dlopens libcudnn.so.9, so it picks the version).
# Environment: JOBS (default 4), MINIMIZE_RUNS (default 12), FUZZ_SECONDS (default 70%).
set -u
BUILD=${1:-build}
SECS=${2:-540}
LIB=${3:-}
OUT=${OUT:-$PWD/device-out}
FUZZ=${FUZZ_SECONDS:-$((SECS * 7 / 10))}
mkdir -p "$OUT"
work=$(mktemp -d)
[ -n "$LIB" ] && export LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
start=$(date +%s)
"$BUILD/attnfuzz" campaign --time "$FUZZ" --total-time "$SECS" --backend cudnn --engine all --jobs "${JOBS:-4}" \
  --minimize-runs "${MINIMIZE_RUNS:-12}" --out "$work/campaign" corpora/gpu 2> "$OUT/campaign-stderr.txt"
rc=$?
echo "device_campaign: campaign exit $rc after $(( $(date +%s) - start )) s (--time $FUZZ --total-time $SECS)" | tee -a "$OUT/campaign-stderr.txt"
cp "$work/campaign/stats.json" "$work/campaign"/report.* "$OUT/" 2>/dev/null
tar -C "$work/campaign" -czf "$OUT/findings.tar.gz" findings 2>/dev/null
echo "device_campaign: exit $rc; $(ls "$work/campaign/findings" 2>/dev/null | wc -l) bucket(s); results in $OUT"
rm -rf "$work"
exit $rc
