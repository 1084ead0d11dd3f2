#!/usr/bin/env bash
# test_nightly.sh ATTNFUZZ — ci/nightly.sh over three short "nights" under one root, with
# the backends named (NIGHTLY_BACKENDS): n1 planted:scale_ignored (no previous night: every
# bucket new, exit 1); n2 the same again (its diff against n1: new / gone / still are
# the set differences of the two nights' buckets; exit 1 exactly when new is not empty);
# n3 cpu only (every n2 bucket gone, nothing new, exit 0); n3 rerun: its campaign is
# resumed (--resume), not refused, and the diff is the same. The plan folder
# (root/cudnn-plans) is made with its stamp and is never taken for a night; a plan file in it
# stays while the binary is the same and goes when the binary is newer than the stamp.
set -u
bin=${1:?usage: test_nightly.sh path/to/attnfuzz}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
command -v python3 >/dev/null || { echo "SKIP test_nightly: no python3"; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
night() { # night NAME BACKENDS
  (cd "$here" && NIGHTLY_ROOT=$tmp/root NIGHT=$1 NIGHTLY_BACKENDS=$2 NIGHTLY_TIME=5 NIGHTLY_TESTS=0 \
    NIGHTLY_ARGS="--inprocess --seed 3" bash ci/nightly.sh "$bin") >"$tmp/$1.out" 2>&1
}
check() { # check NIGHT PREVIOUS EXIT
  python3 - "$tmp/root" "$@" <<'PY'
import json, os, sys
root, night, previous, rc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def keys(name):
    out = set()
    if not name: return out
    for b in os.listdir(f"{root}/{name}"):
        s = f"{root}/{name}/{b}/stats.json"
        if not os.path.isfile(s): continue
        backend = json.load(open(s))["backend"]
        out |= {(backend, k) for k in os.listdir(f"{root}/{name}/{b}/findings")}
    return out
d = json.load(open(f"{root}/{night}/diff.json"))
now, before = keys(night), keys(previous)
got = {w: {(e["backend"], e["bucket"]) for e in d[w]} for w in ("new", "gone", "still")}
want = {"new": now - before, "gone": before - now, "still": now & before}
bad = [f"{w}: {sorted(got[w])} != {sorted(want[w])}" for w in want if got[w] != want[w]]
if (d["previous"] or "") != previous: bad.append(f"previous {d['previous']} != {previous}")
if rc != (1 if want["new"] else 0): bad.append(f"exit {rc} with {len(want['new'])} new bucket(s)")
if bad: print(f"FAIL {night}: " + "; ".join(bad)); sys.exit(1)
print(f"ok   {night} vs {previous or '-'}: new {len(got['new'])}, gone {len(got['gone'])}, still {len(got['still'])}, exit {rc}")
PY
}
night n1 planted:scale_ignored; rc=$?
[ "$rc" = 1 ] || { bad "n1: exit $rc, expected 1 (all new)"; tail -5 "$tmp/n1.out"; }
check n1 "" $rc || fail=$((fail + 1))
[ -n "$(ls "$tmp/root/n1/planted_scale_ignored/findings")" ] || bad "n1: no bucket found"
[ -s "$tmp/root/n1/planted_scale_ignored/report.json" ] && ok "n1: triage wrote the reports" || bad "n1: no report.json"
plans=$tmp/root/cudnn-plans
[ -f "$plans/.binary" ] && ok "n1: the plan folder and its stamp" || bad "n1: no $plans/.binary"
echo kept > "$plans/k.plan"
night n2 planted:scale_ignored; rc=$?
[ -f "$plans/k.plan" ] && ok "n2: the same binary's plans kept" || bad "n2: a plan file went with the same binary"
check n2 n1 $rc || fail=$((fail + 1))
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['still'] else 1)" "$tmp/root/n2/diff.json" \
  && ok "n2: buckets still there" || bad "n2: no bucket still there"
touch -d 2000-01-01 "$plans/.binary" # as if the binary had been rebuilt since
night n3 cpu; rc=$?
[ "$rc" = 0 ] || { bad "n3: exit $rc, expected 0"; tail -5 "$tmp/n3.out"; }
[ ! -e "$plans/k.plan" ] && [ "$plans/.binary" -nt "$bin" ] && ok "n3: an earlier build's plans removed, the stamp renewed" \
  || bad "n3: the plans of an earlier build stayed"
check n3 n2 $rc || fail=$((fail + 1))
grep -q "^  gone  planted:scale_ignored " "$tmp/n3.out" && ok "n3: prints the gone buckets" || bad "n3: no 'gone' line: $(cat "$tmp/n3.out")"
cp "$tmp/root/n3/diff.json" "$tmp/n3-first.json"
night n3 cpu; rc=$?
grep -q "campaign cpu (resumed)" "$tmp/n3.out" && grep -q "resuming" "$tmp/root/n3/cpu.log" && ok "n3 rerun: resumed" \
  || bad "n3 rerun: not resumed: $(head -3 "$tmp/n3.out")"
check n3 n2 $rc || fail=$((fail + 1))
[ "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['gone'] == json.load(open(sys.argv[2]))['gone'])" "$tmp/n3-first.json" "$tmp/root/n3/diff.json")" = True ] \
  && ok "n3 rerun: same gone buckets" || bad "n3 rerun: diff changed"
[ "$fail" = 0 ] && echo "all nightly checks passed" || echo "$fail nightly check(s) failed"
[ "$fail" = 0 ]
