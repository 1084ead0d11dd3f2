#!/usr/bin/env bash
# test_sarif_schema.sh ATTNFUZZ — the SARIF attnfuzz writes validates against the SARIF 2.1.0
# JSON schema itself (not only the properties ci/tests/sarif_check.py knows):
#   - report.sarif of a short campaign with findings (planted:scale_ignored), of its
#     `attnfuzz merge` with a second shard, and of a clean campaign (planted:none);
#   - and the validator is live: copies broken in ways the schema forbids (a result level
#     "fatal", a run without tool.driver.name, a region startLine 0) fail it.
# The schema is $ATTNFUZZ_SARIF_SCHEMA, else .cache/sarif/sarif-2.1.0-rtm.4.json (ci/setup.sh
# fetches it with ci/sarif_schema.sh); the validator is python3-jsonschema. Either missing:
# SKIP, exit 77, saying which.
set -u
AF=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
SCHEMA=${ATTNFUZZ_SARIF_SCHEMA:-$HERE/../../.cache/sarif/sarif-2.1.0-rtm.4.json}
[ -s "$SCHEMA" ] || { echo "SKIP test_sarif_schema: no SARIF schema at $SCHEMA (run ci/sarif_schema.sh)"; exit 77; }
py=
for cand in ${ATTNFUZZ_PYTHON:-} python3 /usr/bin/python3; do
  if "$cand" -c 'import jsonschema' 2>/dev/null; then py=$cand; break; fi
done
[ -n "$py" ] || { echo "SKIP test_sarif_schema: no python with jsonschema (apt-get install python3-jsonschema)"; exit 77; }
for b in planted:scale_ignored planted:none; do
  "$AF" backends 2>/dev/null | grep -q "^$b .*available" || { echo "SKIP: $b is not built beside $AF"; exit 77; }
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
run() { # DIR BACKEND SEED
  timeout 120 "$AF" campaign --inprocess --time 3 --jobs 1 --seed "$3" --minimize-runs 20 --backend "$2" \
    --out "$1" >/dev/null 2>"$1.err"
}
run "$T/a" planted:scale_ignored 7
[ $? -eq 1 ] || { tail -3 "$T/a.err"; echo "FAIL: the planted campaign found nothing"; exit 1; }
run "$T/b" planted:scale_ignored 8
run "$T/clean" planted:none 7
[ $? -eq 0 ] || { tail -3 "$T/clean.err"; echo "FAIL: the clean campaign did not end clean"; exit 1; }
"$AF" merge "$T/m" "$T/a" "$T/b" >/dev/null 2>"$T/merge.err"
[ -s "$T/m/report.sarif" ] || { tail -3 "$T/merge.err"; echo "FAIL: merge wrote no report.sarif"; exit 1; }
"$py" - "$SCHEMA" "$T/a/report.sarif" "$T/m/report.sarif" "$T/clean/report.sarif" <<'PY'
import copy, json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
v = jsonschema.Draft4Validator(schema)
bad = 0
def errors(log):
    return sorted(v.iter_errors(log), key=lambda e: list(e.path))
logs = {}
for f in sys.argv[2:]:
    log = json.load(open(f))
    logs[f] = log
    es = errors(log)
    for e in es[:5]:
        print(f"FAIL {f}: /{'/'.join(map(str, e.path))}: {e.message[:160]}")
    bad += bool(es)
    n = sum(len(r.get("results", [])) for r in log["runs"])
    print(f"{f.split('/')[-2]}/report.sarif: valid against {schema.get('title', '?')}, {n} result(s)")
found = logs[sys.argv[2]]
if not found["runs"][0].get("results"):
    print("FAIL the planted campaign's SARIF has no results"); bad += 1
else:
    broken = []
    a = copy.deepcopy(found); a["runs"][0]["results"][0]["level"] = "fatal"; broken.append(("level fatal", a))
    b = copy.deepcopy(found); del b["runs"][0]["tool"]["driver"]["name"]; broken.append(("no driver.name", b))
    c = copy.deepcopy(found)
    locs = [l for r in c["runs"][0]["results"] for l in r.get("locations", [])
            if "region" in l.get("physicalLocation", {})]
    if locs:
        locs[0]["physicalLocation"]["region"]["startLine"] = 0
        broken.append(("startLine 0", c))
    else:
        print("FAIL no result location with a region to break"); bad += 1
    for what, log in broken:
        if not errors(log):
            print(f"FAIL the schema passes a log with {what}"); bad += 1
        else:
            print(f"broken copy ({what}): rejected")
sys.exit(1 if bad else 0)
PY
rc=$?
[ $rc -eq 0 ] && echo "test_sarif_schema: ok"
exit $rc
