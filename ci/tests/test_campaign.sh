#!/usr/bin/env bash
# test_campaign.sh — campaigns end to end (CTest: bash ci/tests/test_campaign.sh path/to/attnfuzz).
#  1. a short campaign on the cpu backend writes stats.json with the stable keys and finds nothing;
#  2. a campaign against a planted bug finds it, minimises it into findings/<bucket>/finding.case,
#     builds the reports, and `attnfuzz repro` / `attnfuzz minimize` reproduce it;
#  3. --no-probes: a bug only a probe sees (probe_bug:batch_variant, the batch probe's
#     nondeterministic) is found with the probes and not without them;
#     With --jobs 2 the other job's cases run on beside each minimisation (its log line counts
#     them; with --jobs 1, none);
#  4. --stop-after-buckets 1: fuzzing ends at the first bucket, long before --time (stats.json's
#     elapsed_s), the bucket minimised; the same campaign on the correct cpu backend runs on
#     to --time; 0 is a usage error.
set -u
AF=${1:?usage: test_campaign.sh path/to/attnfuzz}
TIME=${ATTNFUZZ_TEST_CAMPAIGN_TIME:-20}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- 1. cpu: no findings, stable stats keys ------------------------------------------
"$AF" campaign --time "$TIME" --jobs 2 --seed 7 --backend cpu --out "$WORK/cpu" 2>"$WORK/cpu.log"
rc=$?
tail -n 3 "$WORK/cpu.log"
[ "$rc" -eq 0 ] || { cat "$WORK/cpu.log"; fail "cpu campaign exited $rc (expected 0: no findings)"; }
S="$WORK/cpu/stats.json"
[ -s "$S" ] || fail "no stats.json"
for key in start_time elapsed_s cases cases_per_s findings buckets crashes hangs declined backend engine jobs \
           time_to_first_finding_s mode corpus config_cells config_cells_total timeline; do
    grep -q "\"$key\":" "$S" || fail "stats.json lacks key $key"
done
grep -q '"findings": 0,' "$S" || fail "cpu campaign reported findings: $(cat "$S")"
grep -q '"buckets": 0,' "$S" || fail "cpu campaign reported buckets"
# case_fields: every optional case field with its count of cases; the seeds set these
/usr/bin/python3 - "$S" <<'PY' || fail "stats.json case_fields"
import json, sys
s = json.load(open(sys.argv[1]))
f = s.get("case_fields")
assert isinstance(f, dict) and len(f) > 30, "case_fields missing or short: %r" % (f,)
for name in ("kv_dtype", "page_layout", "page_kv", "gap_h", "outputs", "layout_kv", "layout_do", "dropout_rng"):
    assert name in f, "case_fields lacks %s" % name
for name in ("kv_dtype", "page_layout", "page_kv", "gap_h", "layout_kv"):  # seeds the campaign runs first
    assert f[name] > 0, "case_fields[%s] = %r after a campaign from the seeds" % (name, f[name])
assert all(0 <= n <= s["cases"] for n in f.values()), "a count above cases"
assert "dtype" not in f and "seqlen" not in f, "always-printed fields and shorthands are not counted"
print("case_fields: %d fields, e.g. kv_dtype %d, page_layout %d, gap_h %d" % (len(f), f["kv_dtype"], f["page_layout"], f["gap_h"]))
PY
cases=$(sed -n 's/.*"cases": \([0-9]*\),.*/\1/p' "$S")
[ "${cases:-0}" -gt 10 ] || fail "only ${cases:-0} cases ran"
rate=$(sed -n 's/.*"cases_per_s": \([0-9.]*\),.*/\1/p' "$S")
echo "cpu campaign: $cases cases, $rate cases/s"
for r in report.json report.junit.xml report.sarif report.html; do
    [ -s "$WORK/cpu/$r" ] || fail "cpu campaign: no $r"
done
# a clean campaign's reports still count its cases and show its summary
judged=$(sed -n 's/.*<property name="attnfuzz.cases_judged" value="\([0-9]*\)".*/\1/p' "$WORK/cpu/report.junit.xml")
[ "${judged:-0}" -gt 10 ] || fail "report.junit.xml says ${judged:-0} cases judged for a campaign of $cases cases"
grep -q 'No findings in [0-9]* judged cases' "$WORK/cpu/report.html" || fail "report.html has no summary"
grep -q '<th>backend</th><td>cpu</td>' "$WORK/cpu/report.html" || fail "report.html does not name the backend"

# --- 2. a planted bug is found and minimised ------------------------------------------
PLANTED=""
for b in planted:window_dropped planted:scale_ignored; do
    if "$AF" backends 2>/dev/null | grep -q "^$b .*available"; then PLANTED=$b; break; fi
done
if [ -z "$PLANTED" ]; then
    echo "SKIP: no planted backend (planted:window_dropped / planted:scale_ignored) beside $AF;" \
         "build harness/plugins to run the planted-bug campaign"
    exit 0
fi
"$AF" campaign --time "$TIME" --jobs 2 --seed 7 --backend "$PLANTED" --out "$WORK/planted" 2>"$WORK/planted.log"
rc=$?
tail -n 3 "$WORK/planted.log"
[ "$rc" -eq 1 ] || { cat "$WORK/planted.log"; fail "planted campaign exited $rc (expected 1: findings)"; }
P="$WORK/planted"
n=$(ls "$P/findings" | wc -l)
[ "$n" -ge 1 ] || fail "$PLANTED: no bucket in findings/"
first=$(ls "$P/findings" | head -n 1)
for f in finding.case verdict.json original.case; do
    [ -s "$P/findings/$first/$f" ] || fail "$PLANTED: findings/$first/$f missing"
done
for r in report.json report.junit.xml report.sarif report.html; do
    [ -s "$P/$r" ] || fail "$PLANTED: no $r"
done
grep -q '"minimised": [1-9]' "$P/stats.json" || fail "no bucket was minimised: $(cat "$P/stats.json")"
ls "$P/pending" | grep -q . && fail "pending findings left after the campaign"
# with two jobs the other job's cases go on while a finding is minimised (the parent's
# candidates run beside them); the log line of each minimisation counts them
grep -E "in [0-9]+ runs; [0-9]+ cases beside it" "$WORK/planted.log" | grep -qvE "; 0 cases beside it" \
    || fail "no case ran beside a minimisation with --jobs 2: $(grep "beside it" "$WORK/planted.log")"
# the minimised reproducer is no bigger than what the fuzzer found
"$AF" repro "$P/findings/$first/finding.case" > "$WORK/repro.txt"
rc=$?
cat "$WORK/repro.txt"
[ "$rc" -eq 1 ] || fail "repro of $first exited $rc (expected 1: still fails)"
grep -q "same failure as" "$WORK/repro.txt" || fail "repro did not reproduce the stored signature"
# minimising the original again gives the same signature
"$AF" minimize "$P/findings/$first/original.case" -o "$WORK/min.case" --backend "$PLANTED" --quiet > "$WORK/min.txt"
rc=$?
cat "$WORK/min.txt"
[ "$rc" -eq 0 ] || fail "minimize exited $rc"
grep -q "reproduce: attnfuzz repro" "$WORK/min.txt" || fail "minimize printed no repro command"
"$AF" repro "$WORK/min.case" > /dev/null
[ $? -eq 1 ] || fail "the re-minimised case does not fail"
# a passing case: repro exits 0
"$AF" repro corpora/seed/fp16-nomask-b1h1s16d64.case --backend cpu > /dev/null 2>&1 || \
    [ ! -f corpora/seed/fp16-nomask-b1h1s16d64.case ] || fail "repro of a passing case did not exit 0"
# --total-time: a bug that makes many raw signatures (nondeterministic reduction) and a
# limit too short to minimise them all: the run ends within the limit (+ 3 s of slack for
# process start and reports), leaves nothing pending, and stores the rest as found
ND=planted:nondeterministic_reduction
T0=$(date +%s)
"$AF" campaign --time 60 --total-time 12 --backend "$ND" --jobs 2 --out "$WORK/total" > "$WORK/total.txt" 2>&1
rc=$?
T1=$(date +%s)
[ "$rc" -eq 1 ] || fail "--total-time campaign exited $rc: $(tail -3 "$WORK/total.txt")"
[ $((T1 - T0)) -le 15 ] || fail "--total-time 12 ran $((T1 - T0)) s"
ls "$WORK/total/pending" | grep -q . && fail "--total-time left pending findings"
grep -q '"hangs": 0' "$WORK/total/stats.json" || fail "--total-time's cut deadlines reported as hangs"
for b in "$WORK"/total/findings/*/; do
    [ -s "$b/finding.case" ] && [ -s "$b/verdict.json" ] || fail "bucket $b lacks finding.case or verdict.json"
done
[ -s "$WORK/total/report.json" ] || fail "--total-time: no report.json"
echo "PASS: --total-time 12: $((T1 - T0)) s, $(ls "$WORK/total/findings" | wc -l) bucket(s), $(grep -o '"unminimised": [0-9]*' "$WORK/total/stats.json")"
echo "PASS: $PLANTED: $n bucket(s)"

# --- 3. --no-probes ---------------------------------------------------------------------
np_kinds() { # ARGS...: the verdict kinds of a 2 s campaign on probe_bug:batch_variant
    rm -rf "$WORK/np"
    "$AF" campaign "$@" --time 2 --total-time 8 --minimize-runs 5 --seed 5 --backend probe_bug:batch_variant \
        --out "$WORK/np" > /dev/null 2>&1
    cat "$WORK"/np/findings/*/verdict.json 2>/dev/null | grep -o '"verdict": *"[a-z_]*"' | sort -u | tr '\n' ' '
}
with=$(np_kinds)
without=$(np_kinds --no-probes)
echo "$with" | grep -q nondeterministic || fail "probe_bug:batch_variant not found with the probes (kinds: $with)"
echo "$without" | grep -q nondeterministic && fail "--no-probes still ran the batch probe (kinds: $without)"
echo "PASS: --no-probes: kinds with the probes [$with], without [$without]"

# --- 4. --stop-after-buckets ------------------------------------------------------------
"$AF" campaign --time 120 --stop-after-buckets 1 --jobs 1 --seed 11 --backend planted:ignores_softcap \
    --out "$WORK/sab" corpora/seed-features/*.case > "$WORK/sab.log" 2>&1
rc=$?
# one job stays one sequence: nothing runs beside its minimisations
grep -q "cases beside it" "$WORK/sab.log" || fail "--jobs 1: no minimisation line: $(tail -5 "$WORK/sab.log")"
grep "cases beside it" "$WORK/sab.log" | grep -qvE "; 0 cases beside it" && fail "--jobs 1 ran cases beside a minimisation"
[ "$rc" -eq 1 ] || fail "--stop-after-buckets 1 on planted:ignores_softcap exited $rc (expected 1: a finding)"
/usr/bin/python3 - "$WORK/sab/stats.json" <<'PY' || fail "--stop-after-buckets 1: $(cat "$WORK/sab/stats.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["buckets"] >= 1 and s["unminimised"] == 0, s
assert s["elapsed_s"] < 60, "fuzzing went on for %s s after the first bucket" % s["elapsed_s"]
PY
"$AF" campaign --time 3 --stop-after-buckets 1 --jobs 1 --seed 11 --backend cpu --out "$WORK/sab-cpu" > /dev/null 2>&1
rc=$?
el=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["elapsed_s"])' "$WORK/sab-cpu/stats.json")
[ "$rc" -eq 0 ] || fail "--stop-after-buckets 1 on cpu exited $rc (expected 0)"
/usr/bin/python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 2.9 else 1)' "$el" \
    || fail "--stop-after-buckets 1 on cpu stopped after $el s with no bucket (expected --time 3)"
"$AF" campaign --time 3 --stop-after-buckets 0 --out "$WORK/sab0" > "$WORK/sab0.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "--stop-after-buckets 0 exited $rc (expected 2, a usage error): $(cat "$WORK/sab0.log")"
[ ! -e "$WORK/sab0" ] || fail "--stop-after-buckets 0 created its --out folder"
echo "PASS: --stop-after-buckets 1: planted bug found and fuzzing ended at $(grep -o '"elapsed_s": [0-9.]*' "$WORK/sab/stats.json"), cpu ran $el s; 0 refused: $(head -1 "$WORK/sab0.log")"
