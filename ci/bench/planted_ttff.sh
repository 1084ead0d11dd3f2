#!/usr/bin/env bash
# ci/bench/planted_ttff.sh [SECONDS] [PARALLEL] [BACKEND...] — time to first finding of
# the planted bugs from ONE trivial seed (`fp16 b1 h1 s16 d64`): one in-process campaign
# per backend (`--jobs 1`, at most SECONDS each, default 150), PARALLEL campaigns at a
# time (default 2), every backend `attnfuzz backends` flags [planted bug] unless some are
# named (those `attnfuzz backends` calls unavailable here, a GPU plugin without a GPU, are
# skipped and named on stderr). A campaign is stopped (SIGINT: reports written, findings
# unminimised) as soon as its stats.json shows a first finding, so the table costs the sum
# of the times, not SECONDS per bug. Prints a markdown table (backend, time to first finding, cases run, the
# first finding's verdict and class) and the median / worst. Output: out/ttff/<backend>/ (OUT).
# BIN=path/to/attnfuzz overrides build/attnfuzz, OUT=DIR the output folder.
set -u
cd "$(dirname "$0")/../.."
secs=${1:-150}
par=${2:-2}
shift $(( $# > 2 ? 2 : $# ))
bin=${BIN:-build/attnfuzz}
out=${OUT:-out/ttff}
mkdir -p "$out/seed"
printf 'dtype = fp16\nbatch = 1\nheads = 1\nseqlen = 16\nhead_dim = 64\n' > "$out/seed/trivial.case"
if [ $# -gt 0 ]; then
  bugs="$*"
else
  bugs=$("$bin" backends | awk '/\[planted bug\]/ && $2 == "available" {print $1}')
  # a planted bug this machine cannot run (a GPU plugin without a GPU) is named, not timed
  "$bin" backends | awk '/\[planted bug\]/ && $2 != "available" {print "planted_ttff: skipped " $1 " (" $2 " here)"}' >&2
fi
[ -n "$bugs" ] || { echo "planted_ttff: no planted backend (build the plugins first)" >&2; exit 2; }

run_one() { # run_one BACKEND: a campaign until its first finding or $secs
  local b=$1 dir=$out/${1//:/_}
  rm -rf "$dir"
  "$bin" campaign --time "$secs" --backend "$b" --jobs 1 --out "$dir" "$out/seed" > "$dir.log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2> /dev/null; do
    sleep 0.25
    if grep -qE '"time_to_first_finding_s": *[0-9]' "$dir/stats.json" 2> /dev/null; then
      kill -INT "$pid" 2> /dev/null
      break
    fi
  done
  wait "$pid"
}
export -f run_one
export secs out bin
printf '%s\n' $bugs | xargs -P "$par" -I{} bash -c 'run_one {}'

echo "| planted backend | time to first finding (s) | cases run | first finding (kind on tensor (config class)) |"
echo "|---|---|---|---|"
for b in $bugs; do
  python3 - "$b" "$out/${b//:/_}" <<'PY'
import json, os, sys
b, d = sys.argv[1], sys.argv[2]
try:
    st = json.load(open(os.path.join(d, "stats.json")))
except Exception as e:
    print(f"| {b} | - | - | no stats ({e}) |"); sys.exit(0)
first, when = "-", None
fd = os.path.join(d, "findings")
for k in sorted(os.listdir(fd)) if os.path.isdir(fd) else []:
    try:
        v = json.load(open(os.path.join(fd, k, "verdict.json")))
    except Exception:
        continue
    t = os.path.getmtime(os.path.join(fd, k, "verdict.json"))
    if when is None or t < when:
        sig = v.get("signature", "").split("|")  # kind|backend|tensor|config class
        when, first = t, " ".join([sig[0], "on", sig[2], f"({sig[3]})"]) if len(sig) >= 4 else v.get("verdict", "?")
ttf = st.get("time_to_first_finding_s")
print(f"| {b} | {'%.1f' % ttf if ttf is not None else 'not found'} | {st.get('cases')} | {first} |")
PY
done | tee "$out/table.md"
python3 - "$out/table.md" "$secs" <<'PY'
import statistics, sys
rows = [l.split("|")[2].strip() for l in open(sys.argv[1]) if l.startswith("| ")]
t = [float(x) if x not in ("not found", "-") else float("inf") for x in rows]
found = [x for x in t if x != float("inf")]
med = statistics.median(t) if t else float("nan")
print(f"\n{len(found)} of {len(t)} found within {sys.argv[2]} s; median {med:.1f} s, worst "
      f"{max(t) if found and len(found) == len(t) else 'not found'}" + (" s" if found and len(found) == len(t) else ""))
PY
