#!/usr/bin/env bash
# test_pool.sh — persistent workers from the CLI (CTest: bash ci/tests/test_pool.sh path/to/attnfuzz).
#  1. `run --jobs 3` over 12 cases (passes and findings of a planted bug) prints the same
#     verdict lines in the same order, with the same exit code, as `run --jobs 1`;
#     `--worker-cases 1` (a worker per case) and ATTNFUZZ_POOL=0 (fresh children) too;
#  2. a campaign with `--workers-per-gpu 2` on the cpu backend: stats.json says jobs 2 and
#     its counts add up (histograms sum to cases; declined, errors, crashes, hangs within it);
#  3. bad values of --jobs / --workers-per-gpu / --worker-cases are refused with exit 2.
set -u
AF=${1:?usage: test_pool.sh path/to/attnfuzz}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- 1. run --jobs N: same lines, same order ------------------------------------------
BE=planted:window_off_by_one
"$AF" backends 2>/dev/null | grep -q "^$BE .*available" || BE=cpu
# windowed cases first (the planted bug's findings), then causal and other ones (passes)
mapfile -t CASES < <({ ls corpora/seed/*window*.case; ls corpora/seed/*causal*.case; ls corpora/seed/*.case; } |
    awk '!seen[$0]++' | head -n 12 | sort -R --random-source=/dev/zero)
[ "${#CASES[@]}" -eq 12 ] || fail "need 12 seed cases, found ${#CASES[@]}"
"$AF" run --backend "$BE" "${CASES[@]}" > "$WORK/jobs1.txt" 2>"$WORK/jobs1.err"
rc1=$?
[ "$(wc -l < "$WORK/jobs1.txt")" -eq 12 ] || { cat "$WORK/jobs1.txt" "$WORK/jobs1.err"; fail "run --jobs 1: not 12 lines"; }
for variant in "--jobs 3" "--jobs 3 --worker-cases 1" "--jobs 4 POOL0"; do
    args=${variant% POOL0}
    if [ "$args" != "$variant" ]; then
        ATTNFUZZ_POOL=0 "$AF" run $args --backend "$BE" "${CASES[@]}" > "$WORK/jobsN.txt" 2>"$WORK/jobsN.err"
    else
        "$AF" run $args --backend "$BE" "${CASES[@]}" > "$WORK/jobsN.txt" 2>"$WORK/jobsN.err"
    fi
    rcN=$?
    diff "$WORK/jobs1.txt" "$WORK/jobsN.txt" > "$WORK/diff.txt" ||
        { cat "$WORK/diff.txt" "$WORK/jobsN.err"; fail "run $variant: lines differ from --jobs 1"; }
    [ "$rcN" -eq "$rc1" ] || fail "run $variant exited $rcN, --jobs 1 exited $rc1"
done
findings=$(grep -c ': FINDING' "$WORK/jobs1.txt")
echo "run --jobs 3 on $BE: 12 lines identical to --jobs 1 (exit $rc1, $findings finding line(s))"
[ "$BE" = cpu ] || [ "$findings" -ge 1 ] || fail "$BE: no finding among the 12 cases (the order check needs a mix)"

# a bad case file in the middle: said on stderr, the others still reported in order, exit 2
printf 'dtype = fp16\nbogus_key = 1\n' > "$WORK/bad.case"
"$AF" run --jobs 2 --backend "$BE" "${CASES[0]}" "$WORK/bad.case" "${CASES[1]}" > "$WORK/bad.txt" 2>"$WORK/bad.err"
rc=$?
[ "$rc" -eq 2 ] || fail "run --jobs 2 with a malformed case exited $rc (expected 2)"
grep -q "bad.case" "$WORK/bad.err" || fail "the malformed case was not named on stderr: $(cat "$WORK/bad.err")"
head -n 2 "$WORK/jobs1.txt" | diff - "$WORK/bad.txt" > /dev/null || fail "the good cases around a bad one: $(cat "$WORK/bad.txt")"

# --- 2. campaign --workers-per-gpu 2 ---------------------------------------------------
"$AF" campaign --inprocess --time 6 --workers-per-gpu 2 --seed 11 --backend cpu --out "$WORK/camp" 2>"$WORK/camp.log"
rc=$?
tail -n 2 "$WORK/camp.log"
[ "$rc" -eq 0 ] || { cat "$WORK/camp.log"; fail "campaign --workers-per-gpu 2 exited $rc"; }
python3 - "$WORK/camp/stats.json" <<'EOF' || fail "stats.json of the --workers-per-gpu 2 campaign"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["jobs"] == 2, f"jobs {s['jobs']}"
assert s["mode"] == "inprocess", s["mode"]
n = s["cases"]
assert n > 4, f"only {n} cases"
for h in ("seqlen_q_hist", "seqlen_kv_hist"):
    assert sum(s[h].values()) == n, f"{h} sums to {sum(s[h].values())}, cases {n}"
judged = n - s["declined"] - s["errors"]
assert sum(s["seqlen_kv_judged_hist"].values()) == judged, f"seqlen_kv_judged_hist sums to {sum(s['seqlen_kv_judged_hist'].values())}, judged {judged}"
assert all(s["seqlen_kv_judged_hist"][k] <= s["seqlen_kv_hist"][k] for k in s["seqlen_kv_hist"]), "judged above all in a bin"
for k in ("declined", "errors", "crashes", "hangs", "findings"):
    assert 0 <= s[k] <= n, f"{k} = {s[k]} of {n}"
assert s["crashes"] == 0 and s["hangs"] == 0 and s["findings"] == 0, s
print(f"campaign --workers-per-gpu 2: {n} cases, {s['cases_per_s']} cases/s, histograms sum to cases")
EOF

# --- 3. bad values ---------------------------------------------------------------------
for bad in "run --jobs 0 ${CASES[0]}" "run --jobs 65 ${CASES[0]}" "run --worker-cases -1 ${CASES[0]}" \
           "campaign --workers-per-gpu 0" "campaign --worker-cases x"; do
    "$AF" $bad > /dev/null 2>"$WORK/opt.err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "attnfuzz $bad exited $rc (expected 2)"
    grep -q -- "--" "$WORK/opt.err" || fail "attnfuzz $bad: no message naming the option"
done
echo "test_pool: ok"
