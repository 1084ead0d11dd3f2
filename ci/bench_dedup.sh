#!/usr/bin/env bash
# ci/bench_dedup.sh [ATTNFUZZ] [SECONDS] — what finding a known bug costs a campaign (a
# benchmark, not a test): a campaign of SECONDS (default 40) on planted:scale_ignored
# (one bug found on almost every case) and one on the clean cpu backend, --jobs 1 and the
# same --seed each; prints both rates (cases/s from stats.json), the ratio (target >= 0.80:
# a known bug is counted, not minimised again) and the minimisations and buckets.
# Timings depend on the machine's load: run it on an idle machine.
set -eu
bin=${1:-build/attnfuzz}
secs=${2:-40}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { # run NAME BACKEND: prints cases/s
  "$bin" campaign --time "$secs" --jobs 1 --seed 7 --backend "$2" --out "$work/$1" 2>"$work/$1.log" || true
  python3 - "$work/$1" "$1" "$2" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/stats.json"))
print(f"{sys.argv[2]:8} {sys.argv[3]:22} {s['cases']:6} cases in {s['elapsed_s']:.1f} s: {s['cases_per_s']:7.2f} cases/s,"
      f" {s['findings']} findings, {s['buckets']} bucket(s), {s['minimised']} minimised", file=sys.stderr)
print(s["cases_per_s"])
PY
}
planted=$(run planted planted:scale_ignored)
clean=$(run clean cpu)
python3 -c "
import sys
p, c = float(sys.argv[1]), float(sys.argv[2])
r = p / c if c > 0 else 0.0
print(f'bench_dedup: planted:scale_ignored {p:.2f} cases/s, cpu {c:.2f} cases/s, ratio {r:.2f} (target >= 0.80)')" "$planted" "$clean"
echo "minimisations: $(grep -c -- '-> \(new\|existing\) bucket' "$work/planted.log"), counted without minimising: $(grep -c 'counted in bucket' "$work/planted.log")"
uptime
