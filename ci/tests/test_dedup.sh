#!/usr/bin/env bash
# test_dedup.sh ATTNFUZZ — a campaign does not re-minimise the bugs it knows, links the
# buckets of one defect, and keeps its progress line coming while it minimises.
# Both campaigns use the in-process engine in every build (the ASan build's libFuzzer runs
# too few cases in 10 s).
#  1. planted:scale_ignored (one bug: the scale is ignored; seen as a mismatch and as the
#     feature probe's feature_ignored, on O and on LSE), 10 s, --jobs 1:
#     - each bucket is minimised at most once: no "-> existing bucket" line, stats.json
#       "minimised" <= buckets, and later raw findings are "counted in bucket ..." (as many
#       as stats.json "deduplicated");
#     - few buckets (<= 4), every one in ONE defect group: report.json summary.groups 1,
#       each bucket's "group" the same, the linked buckets listed, and the stderr summary
#       says so; the finding kinds the planted test expects are still there;
#     - nothing lost: the buckets' counts add up to stats.json's findings.
#  2. a backend whose every run hangs (misbehave_loop, --deadline 1) on a terminal (the
#     progress line every second): while its hang is minimised (a run takes 1 s) the
#     progress line is printed between "minimising raw" and the minimisation's result.
set -u
AF=${1:?usage: test_dedup.sh path/to/attnfuzz}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

if ! "$AF" backends 2>/dev/null | grep -q '^planted:scale_ignored .*available'; then
    echo "SKIP: planted:scale_ignored is not built beside $AF (harness/plugins)"
    exit 77
fi

# --- 1. one bug, few buckets, each minimised once, one defect group -------------------
D=$WORK/scale
"$AF" campaign --inprocess --time 10 --jobs 1 --seed 7 --backend planted:scale_ignored --out "$D" 2>"$WORK/scale.log"
rc=$?
[ "$rc" -eq 1 ] || { tail -5 "$WORK/scale.log"; bad "scale_ignored campaign exited $rc (expected 1: findings)"; }
again=$(grep -c -- '-> existing bucket' "$WORK/scale.log")
[ "$again" -eq 0 ] || bad "$again minimisation(s) landed in a bucket minimised before: $(grep -- '-> existing bucket' "$WORK/scale.log" | head -2)"
new=$(grep -c -- '-> new bucket' "$WORK/scale.log")
counted=$(grep -c 'counted in bucket' "$WORK/scale.log")
python3 - "$D" "$WORK/scale.log" <<'PY' || fail=$((fail + 1))
import json, sys
d, log = sys.argv[1], open(sys.argv[2]).read()
stats = json.load(open(f"{d}/stats.json"))
rep = json.load(open(f"{d}/report.json"))
buckets = rep["buckets"]
errs = []
if not 1 <= len(buckets) <= 4: errs.append(f"{len(buckets)} buckets (expected 1..4)")
if stats["minimised"] > len(buckets): errs.append(f"{stats['minimised']} minimisations for {len(buckets)} buckets")
if "feature_ignored" not in {b["kind"] for b in buckets}: errs.append("no feature_ignored bucket")
if rep["summary"].get("groups") != 1: errs.append(f"summary.groups = {rep['summary'].get('groups')} (expected 1)")
groups = {b.get("group") for b in buckets}
if len(groups) != 1 or None in groups: errs.append(f"bucket groups {groups}")
if len(buckets) > 1 and any(not b.get("linked") for b in buckets):
    errs.append("a bucket of a multi-bucket group lists no linked bucket")
if len(buckets) > 1 and "linked bucket(s) are one defect" not in log: errs.append("stderr summary names no defect group")
if "in 1 defect group(s)" not in log: errs.append("stderr summary does not count 1 defect group")
if stats.get("deduplicated") != log.count("counted in bucket"):
    errs.append(f"stats.json deduplicated {stats.get('deduplicated')}, {log.count('counted in bucket')} counted lines")
total = sum(b["count"] for b in buckets)
if total != stats["findings"]: errs.append(f"bucket counts add up to {total}, stats.json findings {stats['findings']}")
for e in errs: print("FAIL scale_ignored:", e)
if not errs:
    print(f"ok   scale_ignored: {len(buckets)} bucket(s) in 1 group, {stats['minimised']} minimisation(s),"
          f" {stats['findings']} findings counted")
sys.exit(1 if errs else 0)
PY
[ "$counted" -ge 1 ] || bad "no raw finding was counted in a known bucket without minimising ($new minimised)"
echo "     $new minimised, $counted counted without minimising"

# --- 2. the progress line while minimising ---------------------------------------------
if ! command -v script >/dev/null; then
    echo "SKIP part 2: no 'script' (util-linux) to give the campaign a terminal"
    [ "$fail" -eq 0 ] && exit 77 || exit 1
fi
LOOP=$(dirname "$AF")/plugins_misbehave/misbehave_loop.so
if [ ! -f "$LOOP" ]; then
    echo "SKIP part 2: $LOOP is not built"
    [ "$fail" -eq 0 ] && exit 77 || exit 1
fi
script -qec "'$AF' campaign --inprocess --time 3 --total-time 15 --deadline 1 --jobs 1 --seed 1 --backend 'plugin:$LOOP' --out '$WORK/loop'" \
    /dev/null >"$WORK/loop.tty" 2>&1
python3 - "$WORK/loop.tty" <<'PY' || fail=$((fail + 1))
import re, sys
text = open(sys.argv[1], errors="replace").read()
lines = [l for l in re.split(r"[\r\n]+", text) if l.strip()]
start = next((i for i, l in enumerate(lines) if "minimising raw" in l), None)
end = next((i for i, l in enumerate(lines) if re.search(r"raw \w+ (-> (new|existing) bucket|did not reproduce)", l)), None)
if start is None or end is None or end < start:
    print("FAIL progress: no minimisation in the hang campaign:", lines[-3:]); sys.exit(1)
during = [l for l in lines[start + 1:end] if "attnfuzz campaign [" in l]
if not during:
    print(f"FAIL progress: no progress line during the minimisation ({end - start - 1} lines between)"); sys.exit(1)
print(f"ok   progress: {len(during)} progress line(s) while the hang was minimised")
PY

[ "$fail" -eq 0 ] && echo "test_dedup: all passed" || echo "test_dedup: $fail failed"
exit $((fail > 0))
