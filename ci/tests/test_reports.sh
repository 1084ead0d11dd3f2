#!/usr/bin/env bash
# test_reports.sh ATTNFUZZ — what the reports say about where they came from, and how.
#  1. a short campaign against planted:scale_ignored (run from another directory, --out
#     absolute):
#     - the closing summary block is on stdout (the progress lines stay on stderr);
#     - DIR/plot_data: the documented header, one line per tick with its 10 numeric
#       columns, time and cases never going back, the last line the final counts;
#     - DIR/provenance.json: every key, the command line as typed, the seed, the version
#       and commit `attnfuzz --version` prints, outcome findings;
#     - report.json "provenance" and JUnit <properties> carry every provenance key;
#       JUnit's tests / failures equal its testcase / failure elements;
#     - report.sarif passes ci/tests/sarif_check.py (SARIF 2.1.0 required properties,
#       driver.version, invocations), and the checker fails a copy without them;
#     - no report names a path in the campaign directory; each Reproduce line names
#       findings/<bucket>/finding.case and, run in DIR, reproduces the finding (exit 1);
#     - report.html shows the provenance and the coverage / rate plot (PNG);
#     - a probe's bucket (feature_ignored) stores no heatmap and shows its evidence table;
#     - `attnfuzz triage DIR` rebuilds the four reports byte for byte; `attnfuzz merge`
#       keeps the runs' provenance (SARIF invocations of the merged directory).
#  2. buckets are ordered by severity then count: a findings directory with crash, hang,
#     leak and two mismatch buckets triages to crash, hang, leak, mismatch x9, mismatch x5
#     (report.json, SARIF, and the list `attnfuzz triage` prints).
set -u
AF=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "SKIP test_reports: no python3"; exit 77; }
if ! "$AF" backends 2>/dev/null | grep -q '^planted:scale_ignored .*available'; then
    echo "SKIP: planted:scale_ignored is not built beside $AF (harness/plugins)"
    exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# --- 1. a campaign's reports ---------------------------------------------------------
D=$T/camp
mkdir -p "$T/elsewhere"
(cd "$T/elsewhere" && timeout 120 "$AF" campaign --inprocess --time 4 --jobs 1 --seed 7 --minimize-runs 20 \
    --backend planted:scale_ignored --out "$D") >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 1 ] || { tail -5 "$T/err"; bad "campaign exited $rc (want 1: findings)"; }
grep -q '^attnfuzz campaign summary$' "$T/out" || bad "no summary block on stdout: $(head -3 "$T/out")"
grep -q "^  reports       $D/report" "$T/out" || bad "the stdout summary does not say where the reports are"
grep -q '^  findings      [1-9][0-9]* in [1-9][0-9]* bucket(s)' "$T/out" || bad "the stdout summary counts no findings"
grep -q 'attnfuzz campaign summary' "$T/err" && bad "the summary block went to stderr too"
grep -q '^attnfuzz campaign \[' "$T/err" || bad "no progress line on stderr"
"$AF" --version >"$T/version"
AFDIR=$(dirname "$AF") python3 - "$D" "$T/version" "$HERE" <<'PY' || fail=$((fail + 1))
import copy, json, os, re, subprocess, sys, xml.etree.ElementTree as ET
d, version_file, here = sys.argv[1], sys.argv[2], sys.argv[3]
bad = []
# plot_data
lines = open(f"{d}/plot_data").read().splitlines()
header = "# relative_time, cases, cases_per_s, findings, buckets, corpus, features, config_cells, crashes, hangs"
if not lines or lines[0] != header: bad.append(f"plot_data header {lines[:1]}")
rows = []
for ln in lines[1:]:
    f = [x.strip() for x in ln.split(",")]
    if len(f) != 10: bad.append(f"plot_data line {ln!r}: {len(f)} columns"); continue
    rows.append([float(x) for x in f])
if len(rows) < 2: bad.append(f"plot_data has {len(rows)} data line(s)")
for a, b in zip(rows, rows[1:]):
    if b[0] < a[0] or b[1] < a[1]: bad.append(f"plot_data goes back: {a} -> {b}")
stats = json.load(open(f"{d}/stats.json"))
if rows and (rows[-1][1] != stats["cases"] or rows[-1][7] != stats["config_cells"] or rows[-1][7] < 1):
    bad.append(f"last plot_data line {rows[-1]} vs stats cases {stats['cases']} config_cells {stats['config_cells']}")
if rows and max(r[6] for r in rows) < 1: bad.append("plot_data: no coverage feature counted")
# provenance.json
prov = json.load(open(f"{d}/provenance.json"))
keys = ["attnfuzz_version", "git_commit", "command_line", "arguments", "seed", "seed_given", "host", "gpu",
        "nvidia_driver", "cuda_driver", "cuda_runtime", "cudnn", "backend", "engine", "mode", "jobs", "target",
        "start_time_utc", "end_time_utc", "outcome", "successful"]
run = prov["runs"][-1]
missing = [k for k in keys if k not in run]
if missing: bad.append(f"provenance.json lacks {missing}")
ver = open(version_file).read().splitlines()
if run.get("attnfuzz_version") != ver[0].split()[1]: bad.append(f"version {run.get('attnfuzz_version')} vs {ver[0]}")
commit = [l.split()[1] for l in ver if l.startswith("commit:")]
if [run.get("git_commit")] != commit: bad.append(f"commit {run.get('git_commit')} vs {commit}")
if run.get("seed") != "7" or run.get("seed_given") is not True: bad.append(f"seed {run.get('seed')}")
if "--seed 7" not in (run.get("command_line") or "") or run.get("arguments", [None])[:2] != ["attnfuzz", "campaign"]:
    bad.append(f"command line {run.get('command_line')}")
if run.get("outcome") != "findings" or run.get("successful") is not True or not run.get("end_time_utc"):
    bad.append(f"outcome {run.get('outcome')} successful {run.get('successful')} end {run.get('end_time_utc')}")
# report.json provenance
rep = json.load(open(f"{d}/report.json"))
shown = ["attnfuzz_version", "git_commit", "command_line", "seed", "host", "gpu", "nvidia_driver", "cuda_driver",
         "cuda_runtime", "cudnn", "backend", "start_time_utc", "end_time_utc", "outcome"]
missing = [k for k in shown if k not in rep.get("provenance", {})]
if missing: bad.append(f"report.json provenance lacks {missing}")
if rep["provenance"].get("seed") != "7": bad.append(f"report.json seed {rep['provenance'].get('seed')}")
# JUnit: counts are elements; properties
x = ET.parse(f"{d}/report.junit.xml").getroot()
cases, failures = x.findall(".//testcase"), x.findall(".//failure")
for el in [x] + x.findall("testsuite"):
    if int(el.get("tests")) != len(cases) or int(el.get("failures")) != len(failures):
        bad.append(f"junit <{el.tag}> tests={el.get('tests')} failures={el.get('failures')}: "
                   f"{len(cases)} testcase, {len(failures)} failure elements")
if len(failures) != len(rep["buckets"]): bad.append(f"{len(failures)} failures for {len(rep['buckets'])} buckets")
props = {p.get("name"): p.get("value") for p in x.findall(".//properties/property")}
missing = [k for k in shown if "attnfuzz." + k not in props]
if missing: bad.append(f"junit properties lack {missing}")
if props.get("attnfuzz.cases_judged") != str(rep["summary"]["cases_judged"]): bad.append("junit cases_judged property")
# SARIF, and the checker refuses a copy without version and invocations
chk = [sys.executable, f"{here}/sarif_check.py"]
r = subprocess.run(chk + [f"{d}/report.sarif", "--want-provenance"], capture_output=True, text=True)
if r.returncode != 0: bad.append("report.sarif: " + r.stdout.strip())
sarif = json.load(open(f"{d}/report.sarif"))
inv = sarif["runs"][0]["invocations"]
if len(inv) != 1 or "--seed 7" not in inv[0]["commandLine"] or inv[0]["executionSuccessful"] is not True:
    bad.append(f"sarif invocations {inv}")
broken = copy.deepcopy(sarif)
del broken["runs"][0]["tool"]["driver"]["version"]
del broken["runs"][0]["invocations"]
broken["runs"][0]["results"][0]["ruleIndex"] = 999
json.dump(broken, open(f"{d}/../broken.sarif", "w"))
r = subprocess.run(chk + [f"{d}/../broken.sarif", "--want-provenance"], capture_output=True, text=True)
if r.returncode == 0 or "version" not in r.stdout or "invocations" not in r.stdout or "ruleIndex" not in r.stdout:
    bad.append(f"sarif_check.py passes a broken log: {r.stdout!r}")
# relative paths everywhere; the Reproduce lines run from DIR
for name in ("report.json", "report.junit.xml", "report.sarif", "report.html"):
    # the command line in the provenance names it (--out); no path to a file in it may
    text = open(f"{d}/{name}").read()
    if f"{d}/" in text or os.path.basename(d) + "/findings" in text:
        bad.append(f"{name} names a path in the campaign directory {d}")
for b in rep["buckets"]:
    if not b["repro"].startswith(f"attnfuzz repro findings/{b['bucket']}/finding.case"): bad.append(f"repro {b['repro']}")
line = rep["buckets"][0]["repro"]
r = subprocess.run(["sh", "-c", line], cwd=d, capture_output=True, text=True,
                   env=dict(os.environ, PATH=os.environ["AFDIR"] + ":" + os.environ["PATH"]))
if r.returncode != 1: bad.append(f"{line!r} run in DIR exited {r.returncode}: {r.stderr[-200:]}")
html = open(f"{d}/report.html").read()
if "<h2>Provenance</h2>" not in html or 'alt="coverage over time"' not in html or 'alt="cases per second over time"' not in html:
    bad.append("report.html lacks the provenance table or the plot")
# probe buckets (feature_ignored here): no heatmap of the unperturbed run, their own evidence
probe = [b for b in rep["buckets"] if b["kind"] in ("feature_ignored", "leak", "inert", "nondeterministic")]
if not probe: bad.append("no probe bucket to check (planted:scale_ignored gives feature_ignored)")
for b in probe:
    if b["heatmap"] is not None: bad.append(f"probe bucket {b['bucket']} ({b['kind']}) stored a heatmap")
    sec = re.search(r'<section id="b%s">(.*?)</section>' % b["bucket"], html, re.S)
    if not sec or '<table class="evidence">' not in sec.group(1) or "error heatmap" in sec.group(1):
        bad.append(f"report.html: bucket {b['bucket']} ({b['kind']}) shows no evidence table, or a heatmap")
for e in bad: print("FAIL campaign reports:", e)
if not bad:
    print(f"ok   campaign reports: {len(rows)} plot_data lines, {len(rep['buckets'])} bucket(s), junit "
          f"{len(cases)}/{len(failures)}, SARIF checked, provenance {run['attnfuzz_version']} {run['git_commit']}")
sys.exit(1 if bad else 0)
PY

mkdir -p "$T/saved"
for r in report.json report.junit.xml report.sarif report.html; do cp "$D/$r" "$T/saved/$r"; rm "$D/$r"; done
"$AF" triage "$D" --quiet || bad "attnfuzz triage exited $?"
for r in report.json report.junit.xml report.sarif report.html; do
    cmp -s "$D/$r" "$T/saved/$r" || bad "attnfuzz triage rebuilt a different $r"
done

# a merge keeps the runs' provenance
"$AF" merge "$T/merged" "$D" --quiet >/dev/null 2>&1
python3 - "$T/merged" "$D" <<'PY' || bad "the merged directory lost the campaign's provenance"
import json, sys
m, d = (json.load(open(f"{x}/provenance.json"))["runs"] for x in sys.argv[1:3])
s = json.load(open(f"{sys.argv[1]}/report.sarif"))["runs"][0]["invocations"]
sys.exit(0 if m == d and [i["commandLine"] for i in s] == [r["command_line"] for r in d] else 1)
PY

# --- 2. severity, then count ------------------------------------------------------------
S=$T/sev
python3 - "$S" <<'PY'
import json, os, sys
d = sys.argv[1]
for bucket, kind, count in [("00000000000a", "mismatch", 5), ("00000000000b", "leak", 2), ("00000000000c", "crash", 1),
                            ("00000000000d", "mismatch", 9), ("00000000000e", "hang", 3)]:
    os.makedirs(f"{d}/findings/{bucket}")
    open(f"{d}/findings/{bucket}/finding.case", "w").write("dtype = fp16\n")
    json.dump({"signature": f"{kind}|cpu|O|{bucket}", "count": count, "verdict": kind, "backend": "cpu",
               "repro_args": ["--backend", "cpu"]}, open(f"{d}/findings/{bucket}/verdict.json", "w"))
PY
"$AF" triage "$S" --quiet || bad "triage of the severity directory exited $?"
order=$(python3 -c 'import json,sys; print(" ".join("%sx%d" % (b["kind"], b["count"]) for b in json.load(open(sys.argv[1]))["buckets"]))' "$S/report.json")
[ "$order" = "crashx1 hangx3 leakx2 mismatchx9 mismatchx5" ] && echo "ok   severity order: $order" || bad "bucket order: $order"
sarif_order=$(python3 -c 'import json,sys; print(" ".join(r["ruleId"] for r in json.load(open(sys.argv[1]))["runs"][0]["results"]))' "$S/report.sarif")
[ "$sarif_order" = "crash hang leak mismatch mismatch" ] || bad "SARIF result order: $sarif_order"
python3 "$HERE/sarif_check.py" "$S/report.sarif" || bad "the severity directory's SARIF does not check"
listed=$("$AF" triage "$S" | sed -n 's/^  [0-9a-f]\{12\}  x\([0-9]*\) *\([a-z]*\)|.*/\2x\1/p' | tr '\n' ' ')
[ "$listed" = "crashx1 hangx3 leakx2 mismatchx9 mismatchx5 " ] || bad "attnfuzz triage lists: $listed"

[ $fail -eq 0 ] && echo "test_reports: all checks passed"
exit $fail
