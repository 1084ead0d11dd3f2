#!/usr/bin/env bash
# test_resume_kill.sh ATTNFUZZ — a campaign SIGKILLed while it minimises a finding, then
# resumed with --resume (issue 16): no finding is lost and the counters agree.
#   1. a campaign on planted:scale_ignored (2 jobs) is killed -9 as soon as its log says
#      "minimising raw R" (retried, up to 3 times, when the minimisation finished before
#      the kill landed: then the kill was not mid-minimisation);
#   2. `campaign --resume` on its DIR: R is minimised (DIR/rawmap/R names a bucket that
#      exists in DIR/findings) or stored unminimised, every raw signature that was
#      pending is handled, DIR/pending is empty; each case DIR/current held is printed
#      (path and backend) and kept in DIR/interrupted/; stats.json (findings, buckets,
#      cases, interrupted_cases) agrees with report.json and report.junit.xml;
#      DIR/provenance.json holds the killed run (no end, no outcome) and the resumed one,
#      one SARIF invocation each (the killed one not successful);
#   3. without --resume the same DIR is refused (exit 2, one line naming it);
#      --resume on a directory without a campaign exits 2 too.
set -u
bin=${1:?usage: test_resume_kill.sh path/to/attnfuzz}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
command -v python3 >/dev/null || { echo "SKIP test_resume_kill: no python3"; exit 77; }
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
backend=planted:scale_ignored

# ---- 1. kill -9 mid-minimisation ------------------------------------------------------
killed=""
for attempt in 1 2 3; do
  d=$tmp/run$attempt
  mkdir -p "$d"
  "$bin" campaign --inprocess --jobs 2 --time 120 --backend $backend --seed $((7 + attempt)) --out "$d/c" >"$d/log1" 2>&1 &
  pid=$!
  raw=""
  until=$((SECONDS + 90))
  while [ $SECONDS -lt $until ] && [ -z "$raw" ]; do
    raw=$(sed -n 's/.*minimising raw \([0-9a-f]*\) .*/\1/p' "$d/log1" | head -n 1)
    [ -z "$raw" ] && sleep 0.02
  done
  kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=""
  [ -n "$raw" ] || { bad "attempt $attempt: no minimisation began within 90 s"; tail -3 "$d/log1"; continue; }
  if grep -q "raw $raw \(->\|did not\)" "$d/log1"; then
    echo "     attempt $attempt: raw $raw was minimised before the kill landed; again"
    continue
  fi
  [ -f "$d/c/pending/$raw.case" ] || ls "$d/c/pending/$raw"*.case >/dev/null 2>&1 || { bad "killed mid-minimisation of $raw, but pending/ lacks it"; continue; }
  killed=$d
  break
done
[ -n "$killed" ] || { bad "no kill landed mid-minimisation in 3 attempts"; echo "$fail resume-kill check(s) failed"; exit 1; }
d=$killed
n_current=$(ls "$d/c/current/"*.case 2>/dev/null | wc -l)
pending_raws=$(ls "$d/c/pending/" | sed -n 's/^\([0-9a-f]\{12\}\).*\.case$/\1/p' | sort -u | tr '\n' ' ')
ok "killed -9 while minimising raw $raw; pending raws: $pending_raws; $n_current case(s) in current/"

# ---- 3 (first half). without --resume: refused -------------------------------------
err=$("$bin" campaign --inprocess --time 2 --backend $backend --out "$d/c" 2>&1); rc=$?
if [ "$rc" = 2 ] && [ "$(echo "$err" | wc -l)" = 1 ] && echo "$err" | grep -q "$d/c holds an earlier campaign.*--resume"; then
  ok "no --resume: refused (exit 2): $err"
else bad "no --resume: exit $rc: $err"; fi

# ---- 2. --resume ------------------------------------------------------------------------
"$bin" campaign --inprocess --jobs 2 --time 3 --backend $backend --seed 8 --resume --out "$d/c" >"$d/log2" 2>&1
rc=$?
[ "$rc" = 1 ] && ok "resume: exit 1 (findings)" || { bad "resume: exit $rc"; tail -5 "$d/log2"; }
n_lines=$(grep -c "attnfuzz campaign: interrupted case $d/c/interrupted/run1-.*\.case (backend $backend)" "$d/log2")
[ "$n_lines" = "$n_current" ] && ok "resume: $n_lines interrupted case line(s), one per case current/ held" \
  || { bad "resume: $n_lines interrupted-case lines, $n_current case(s) were in current/"; grep interrupted "$d/log2"; }
python3 - "$d/c" "$raw" "$pending_raws" "$n_current" <<'PY' || fail=$((fail + 1))
import json, os, re, sys
d, raw, pending, n_current = sys.argv[1], sys.argv[2], sys.argv[3].split(), int(sys.argv[4])
s = json.load(open(f"{d}/stats.json"))
r = json.load(open(f"{d}/report.json"))
junit = open(f"{d}/report.junit.xml").read()
bad = []
dirs = sorted(os.listdir(f"{d}/findings"))
counts = {b: json.load(open(f"{d}/findings/{b}/verdict.json"))["count"] for b in dirs}
def bucket_of(raw_id):
    # rawmap/<raw> is binary (af_rawmap_entry): its bucket id is stored as text in it
    data = open(f"{d}/rawmap/{raw_id}", "rb").read()
    return next((b for b in dirs if b.encode() in data), None)
for p in pending:
    if not os.path.exists(f"{d}/rawmap/{p}"): bad.append(f"pending raw {p}: no rawmap entry after resume")
    elif bucket_of(p) is None: bad.append(f"pending raw {p}: its rawmap names no bucket in findings/")
if raw not in pending: bad.append(f"raw {raw} being minimised was not pending")
left = [f for f in os.listdir(f"{d}/pending") if f.endswith(".case")]
if left: bad.append(f"pending/ not empty: {left}")
kept = sorted(f for f in os.listdir(f"{d}/interrupted")) if os.path.isdir(f"{d}/interrupted") else []
kept = [f for f in kept if f.endswith(".case")]
if len(kept) != n_current: bad.append(f"interrupted/ holds {len(kept)} case(s), current/ held {n_current}")
if s["interrupted_cases"] != len(kept) or r["summary"]["interrupted_cases"] != len(kept):
    bad.append(f"interrupted_cases: stats {s['interrupted_cases']}, report {r['summary']['interrupted_cases']}, dir {len(kept)}")
if sorted(c["case"] for c in r["interrupted"]) != [f"interrupted/{f}" for f in kept]: bad.append(f"report.json interrupted {r['interrupted']}")
if s["buckets"] != len(dirs) or r["summary"]["buckets"] != len(dirs): bad.append(f"buckets: stats {s['buckets']}, report {r['summary']['buckets']}, dirs {len(dirs)}")
if s["findings"] != sum(counts.values()) or r["summary"]["findings"] != s["findings"]:
    bad.append(f"findings: stats {s['findings']}, report {r['summary']['findings']}, bucket counts {sum(counts.values())}")
if r["summary"]["cases_judged"] != max(s["cases"] - s["errors"], len(dirs)): bad.append(f"cases_judged {r['summary']['cases_judged']} vs stats cases {s['cases']}")
m = re.search(r'<testsuites name="attnfuzz" tests="(\d+)" failures="(\d+)"', junit)
judged = re.search(r'<property name="attnfuzz.cases_judged" value="(\d+)"', junit)
found = re.search(r'<property name="attnfuzz.findings" value="(\d+)"', junit)
# tests / failures count the elements; the campaign's figures are properties
if (not m or not judged or not found or int(m.group(1)) != junit.count("<testcase ")
        or int(m.group(2)) != junit.count("<failure ") or int(judged.group(1)) != r["summary"]["cases_judged"]
        or int(found.group(1)) != s["findings"]):
    bad.append(f"junit {m.groups() if m else None} vs cases_judged {r['summary']['cases_judged']}, findings {s['findings']}")
if s["resumed"] != 1: bad.append(f"resumed {s['resumed']}")
# provenance: the killed run (no end) and the resumed one; SARIF has an invocation each
prov = json.load(open(f"{d}/provenance.json"))["runs"]
if (len(prov) != 2 or prov[0]["end_time_utc"] is not None or prov[0]["outcome"] is not None
        or prov[1]["outcome"] != "findings" or "--resume" not in prov[1]["command_line"]):
    bad.append(f"provenance runs {[(p['end_time_utc'], p['outcome']) for p in prov]}")
inv = json.load(open(f"{d}/report.sarif"))["runs"][0]["invocations"]
if [i["executionSuccessful"] for i in inv] != [False, True]: bad.append(f"SARIF invocations {inv}")
if s["minimised"] + s["unminimised"] + s["deduplicated"] < len(pending):
    bad.append(f"minimised {s['minimised']} + unminimised {s['unminimised']} + deduplicated {s['deduplicated']} < {len(pending)} pending raws")
if bad: print("FAIL resume after kill: " + "; ".join(bad)); sys.exit(1)
print(f"ok   resume after kill: raw {raw} -> bucket {bucket_of(raw)}; {len(pending)} pending raw(s) all in buckets {dirs}; "
      f"findings {s['findings']} = report {r['summary']['findings']} = bucket counts; buckets {len(dirs)}; "
      f"interrupted_cases {len(kept)}; junit tests/failures {m.group(1)}/{m.group(2)}")
PY

# ---- 3 (second half). --resume on a directory without a campaign --------------------
err=$("$bin" campaign --inprocess --time 2 --backend $backend --resume --out "$tmp/none" 2>&1); rc=$?
if [ "$rc" = 2 ] && echo "$err" | grep -q "holds no campaign" && [ ! -e "$tmp/none" ]; then
  ok "--resume on a new DIR: exit 2, DIR not created: $err"
else bad "--resume on a new DIR: exit $rc: $err"; fi

[ "$fail" = 0 ] && echo "all resume-kill checks passed" || echo "$fail resume-kill check(s) failed"
[ "$fail" = 0 ]
