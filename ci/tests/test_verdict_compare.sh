#!/usr/bin/env bash
# test_verdict_compare.sh ATTNFUZZ — ci/verdict_compare.py, the check that a change left the
# JSON verdicts as they were (timings aside):
#   - two runs of the same cases (probes on) give verdicts it calls equal (exit 0): the judge
#     is deterministic, so the script can stand guard over refactors;
#   - a kernel that differs (planted:scale_ignored against cpu, same cases) is reported, with
#     the field path, exit 1;
#   - a missing file or a line that is not JSON is exit 2, naming file:line.
set -u
bin=${1:?usage: test_verdict_compare.sh path/to/attnfuzz}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
cases=(corpora/seed/bf16-bhsd.case corpora/seed/$(ls corpora/seed | grep -m1 causal) corpora/seed/$(ls corpora/seed | grep -m1 gqa))
"$bin" run "${cases[@]}" --backend cpu --json > "$tmp/a.jsonl" 2>/dev/null
"$bin" run "${cases[@]}" --backend cpu --json > "$tmp/b.jsonl" 2>/dev/null
check "three cases judged" '[ "$(wc -l < "$tmp/a.jsonl")" -eq 3 ]'
python3 ci/verdict_compare.py "$tmp/a.jsonl" "$tmp/b.jsonl" > "$tmp/same.txt"; rc=$?
check "two runs of the same cases: equal (exit $rc)" '[ $rc -eq 0 ] && grep -q "0 of 3 verdicts differ" "$tmp/same.txt"'
planted=$("$bin" backends 2>/dev/null | awk '/^planted:/ {print $1}' | grep -m1 "^planted:scale_ignored$")
"$bin" run "${cases[@]}" --backend "$planted" --json 2>/dev/null | sed 's/"backend":"[^"]*"/"backend":"cpu"/' > "$tmp/c.jsonl"
python3 ci/verdict_compare.py "$tmp/a.jsonl" "$tmp/c.jsonl" > "$tmp/diff.txt"; rc=$?
check "$planted against cpu: reported (exit $rc)" '[ $rc -eq 1 ] && grep -q "]: verdict: .pass. != .feature_ignored." "$tmp/diff.txt"'
python3 ci/verdict_compare.py "$tmp/a.jsonl" "$tmp/none.jsonl" 2> "$tmp/err.txt"; rc=$?
check "a missing file: exit 2 naming it" '[ $rc -eq 2 ] && grep -q "none.jsonl" "$tmp/err.txt"'
{ head -1 "$tmp/a.jsonl"; echo "not json"; } > "$tmp/bad.jsonl"
python3 ci/verdict_compare.py "$tmp/a.jsonl" "$tmp/bad.jsonl" 2> "$tmp/err.txt"; rc=$?
check "a line that is not JSON: exit 2 naming file:line" '[ $rc -eq 2 ] && grep -q "bad.jsonl:2" "$tmp/err.txt"'
[ $fail -eq 0 ] && echo "test_verdict_compare: all checks passed"
exit $fail
