#!/usr/bin/env bash
# ci/planted_campaigns.sh [SECONDS] [PARALLEL] — the self-test of the finding machinery:
# one campaign per planted-bug backend (default 300 s each, 2 at a time, --jobs 1), then
# a table: time to first finding, buckets, and the size of the smallest minimised
# reproducer (lines of its canonical case and its cost). Output dir: out/planted/.
set -u
cd "$(dirname "$0")/.."
secs=${1:-300}
par=${2:-2}
bin=build/attnfuzz
out=out/planted
mkdir -p "$out"
bugs=$($bin backends | awk '/\[planted bug\]/ {print $1}')
run_one() {
  local b=$1 dir=$out/${1#planted:}
  rm -rf "$dir"
  $bin campaign --time "$secs" --backend "$b" --jobs 1 --out "$dir" > "$dir.log" 2>&1
}
export -f run_one
export secs out bin
printf '%s\n' $bugs | xargs -P "$par" -I{} bash -c 'run_one {}'
echo "| planted backend | cases | time to first finding (s) | buckets | kinds | smallest reproducer (cost, lines) |"
echo "|---|---|---|---|---|---|"
for b in $bugs; do
  dir=$out/${b#planted:}
  python3 - "$b" "$dir" <<'PY'
import json, os, sys
b, d = sys.argv[1], sys.argv[2]
try:
    st = json.load(open(os.path.join(d, "stats.json")))
except Exception as e:
    print(f"| {b} | - | - | - | no stats ({e}) | - |"); sys.exit(0)
kinds, best = {}, None
fd = os.path.join(d, "findings")
for k in sorted(os.listdir(fd)) if os.path.isdir(fd) else []:
    try:
        v = json.load(open(os.path.join(fd, k, "verdict.json")))
    except Exception:
        continue
    kinds[v.get("verdict", "?")] = kinds.get(v.get("verdict", "?"), 0) + 1
    cost = v.get("case_cost")
    lines = sum(1 for l in open(os.path.join(fd, k, "finding.case")) if l.strip() and not l.startswith("#"))
    if cost is not None and (best is None or cost < best[0]):
        best = (cost, lines)
ttf = st.get("time_to_first_finding_s")
print(f"| {b} | {st.get('cases')} | {ttf if ttf is not None else 'none'} | {st.get('buckets')} | "
      f"{', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))} | "
      f"{'%g, %d lines' % best if best else '-'} |")
PY
done
