#!/usr/bin/env bash
# test_gate.sh ATTNFUZZ — backend selection rules as data and the selection gate (issue 15):
#   select: a chosen backend with every other's reason (exit 0), none (exit 3), a bad
#           policy (exit 4, file:line: key), selectors that crash or print garbage (exit 6);
#   run --policy: a claimed head dim the backend declines is claim_mismatch (exit 1); a
#           declined backend that serves correctly is noted as an unclaimed capability;
#   gate: routing causal bf16 to flash_bug:row_scale fails (exit 1) with a minimised case
#         and reports; routing it to flash_ref passes (exit 0).
set -u
BIN=${1:-build/attnfuzz}
G=ci/tests/gate
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$BIN" select corpora/examples/readme.case --policy policies/default.policy); rc=$?
[ $rc -eq 0 ] || fail "select default: exit $rc"
echo "$out" | grep -q '^chosen: cpu (policies/default.policy:' || fail "select default: $out"
echo "$out" | grep -q 'not cudnn (policies/default.policy:[0-9]*): needs GPU arch sm90..sm90; the arch is unknown' || fail "no cudnn reason: $out"

printf 'dtype = mxfp8\nbackward = yes\nseqlen = 64\n' > "$T/mx.case"
out=$("$BIN" select "$T/mx.case"); rc=$?
[ $rc -eq 3 ] || fail "select none: exit $rc"
echo "$out" | grep -q '^chosen: none' || fail "select none: $out"
echo "$out" | grep -q 'backward not claimed' || fail "select none lacks the cpu mxfp8 reason: $out"

printf 'backend = cpu\ndtypes = fp17\n' > "$T/bad.policy"
err=$("$BIN" select "$T/mx.case" --policy "$T/bad.policy" 2>&1); rc=$?
[ $rc -eq 4 ] || fail "bad policy: exit $rc"
echo "$err" | grep -q "bad.policy:2: dtypes: 'fp17' is not one of" || fail "bad policy message: $err"

out=$("$BIN" select $G/d512.case --selector-cmd "python3 python/selectors/te_like.py"); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q '^chosen: cpu' || fail "te_like d512: exit $rc: $out"
out=$("$BIN" select corpora/examples/readme.case --selector-cmd "python3 python/selectors/te_like.py"); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q '^chosen: flash_ref' || fail "te_like readme: exit $rc: $out"
err=$("$BIN" select $G/d512.case --selector-cmd "echo two words" 2>&1); rc=$?
[ $rc -eq 6 ] && echo "$err" | grep -q "selector cmd:echo two words: printed 'two words'" || fail "garbage: $rc $err"
err=$("$BIN" select $G/d512.case --selector-cmd "sh -c 'kill -SEGV \$\$'" 2>&1); rc=$?
[ $rc -eq 6 ] && echo "$err" | grep -q "crashed (signal 11)" || fail "crashing selector: $rc $err"

out=$("$BIN" run --policy $G/claims_d512.policy $G/d512.case 2>&1); rc=$?
[ $rc -eq 1 ] || fail "claim d512: exit $rc: $out"
echo "$out" | grep -q 'FINDING claim_mismatch.*cudnn declined a case ci/tests/gate/claims_d512.policy:3 claims' || fail "claim d512: $out"

printf 'backend = cpu\ndtypes = fp16\nbackend = flash_ref\ndtypes = fp16\n' > "$T/narrow.policy"
printf 'dtype = bf16\nseqlen = 32\nhead_dim = 32\n' > "$T/bf16.case"
out=$("$BIN" run --policy "$T/narrow.policy" "$T/bf16.case" 2>&1); rc=$?
[ $rc -eq 3 ] || fail "unclaimed: exit $rc: $out"
echo "$out" | grep -q 'note: unclaimed capability: cpu serves this case correctly' || fail "unclaimed cpu: $out"
echo "$out" | grep -q 'note: unclaimed capability: flash_ref serves' || fail "unclaimed flash_ref: $out"

start=$(date +%s)
"$BIN" gate --base $G/base.policy --head $G/head_bug.policy --time 15 --out "$T/bug" --quiet > "$T/bug.txt"; rc=$?
secs=$(( $(date +%s) - start ))
[ $rc -eq 1 ] || fail "gate to flash_bug: exit $rc: $(cat "$T/bug.txt")"
grep -q '^gate FAILED' "$T/bug.txt" || fail "gate summary: $(cat "$T/bug.txt")"
[ $secs -lt 60 ] || fail "gate to flash_bug took $secs s"
n=$(ls "$T/bug/findings" | wc -l)
[ "$n" -ge 1 ] || fail "no stored finding"
for d in "$T"/bug/findings/*; do
  grep -q '"kind": *"claim_mismatch"\|"claim_mismatch"' "$d/verdict.json" || fail "$d: not claim_mismatch"
  grep -q 'mask = causal' "$d/finding.case" || fail "$d: minimised case lost the causal mask"
  grep -q 'dtype = bf16' "$d/finding.case" || fail "$d: minimised case lost bf16"
  grep -q 'seqlen_q = 1$\|seqlen_q = [0-9]$\|seqlen_q = [0-9][0-9]$' "$d/finding.case" || fail "$d: not minimised: $(cat "$d/finding.case")"
done
for f in report.json report.junit.xml report.sarif gate.json; do [ -s "$T/bug/$f" ] || fail "missing $f"; done
grep -q 'claim_mismatch' "$T/bug/report.sarif" || fail "SARIF lacks claim_mismatch"
grep -q '<failure' "$T/bug/report.junit.xml" || fail "JUnit lacks a failure"
python3 -c "import json,sys; g=json.load(open(sys.argv[1])); assert g['passed'] is False and g['switched']>0 and g['newly_chosen_failed']>0, g" "$T/bug/gate.json" || fail "gate.json"
# one bug is minimised once: failures of one identity count in its bucket (gate.json
# "deduplicated"), and the minimisations ran inside --time
python3 - "$T/bug/gate.json" <<'PY' || fail "gate dedup / time: $(head -c 600 "$T/bug/gate.json")"
import json, sys
g = json.load(open(sys.argv[1]))
items = [c for c in g['configurations'] if c['bucket']]
dedup = [c for c in items if c.get('deduplicated')]
assert g['minimised'] == len([c for c in items if 'minimised' in c]) == g['buckets'], g
assert g['newly_chosen_failed'] > g['minimised'] and dedup, 'no failure was deduplicated'
assert {c['bucket'] for c in dedup} <= {c['bucket'] for c in items if 'minimised' in c}, 'a duplicate outside the buckets'
assert g['elapsed_s'] < g['time_s'] + 10, 'minimisation ran past --time: %s s' % g['elapsed_s']
PY

"$BIN" gate --base $G/base.policy --head $G/head_ok.policy --time 10 --out "$T/ok" --quiet > "$T/ok.txt"; rc=$?
[ $rc -eq 0 ] || fail "gate to flash_ref: exit $rc: $(cat "$T/ok.txt")"
python3 -c "import json,sys; g=json.load(open(sys.argv[1])); assert g['passed'] is True and g['switched']>0, g" "$T/ok/gate.json" || fail "ok gate.json"

# a regression: the head serves nothing for causal bf16
printf 'backend = cpu\nmasks = none,padding\ncp = none\n' > "$T/lost.policy"
"$BIN" gate --base $G/base.policy --head "$T/lost.policy" --time 3 --out "$T/lost" --quiet > "$T/lost.txt"; rc=$?
[ $rc -eq 1 ] && grep -q 'no longer served [1-9]' "$T/lost.txt" || fail "regression: exit $rc: $(cat "$T/lost.txt")"
# the regression is minimised too, into one bucket (claim_mismatch on the base's cpu)
[ "$(ls "$T/lost/findings" | wc -l)" -eq 1 ] || fail "regression buckets: $(ls "$T/lost/findings")"
d=$(echo "$T"/lost/findings/*)
grep -q 'no longer served' "$d/verdict.json" || fail "regression verdict: $(cat "$d/verdict.json")"
grep -q '^seqlen_q = [0-9]$' "$d/finding.case" && grep -q '^mask = causal' "$d/finding.case" || fail "regression not minimised: $(cat "$d/finding.case")"
echo "test_gate: ok (gate to flash_bug failed in ${secs}s with $n minimised bucket(s))"
