#!/usr/bin/env bash
# test_select_campaign.sh ATTNFUZZ — claims in campaigns and run options (issue 15):
#   campaign --policy: a policy routing causal bf16 to flash_bug:row_scale gives
#     claim_mismatch findings, bucketed and minimised; unclaimed capabilities counted in
#     stats.json and listed in report.json; options it cannot honour are refused;
#     --jobs 2 finds --jobs 1's bucket; --resume adds up (cases = the runs' sum), honours
#     DIR/lock;
#   run --policy: --deadline / --in-process / --oracle are honoured, --engine / --jobs /
#     --backend refused with one line;
#   te_like.py (TransformerEngine's rules) as a selector on a few cases.
set -u
BIN=${1:-build/attnfuzz}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

printf 'backend = flash_bug:row_scale\ndtypes = bf16\nmasks = causal\nbackend = cpu\ndtypes = fp16\ncp = none\n' > "$T/c.policy"
"$BIN" campaign --policy "$T/c.policy" --time 10 --seed 3 --out "$T/cc" > "$T/cc.txt" 2> "$T/cc.err"; rc=$?
[ $rc -eq 1 ] || fail "claims campaign: exit $rc: $(cat "$T/cc.txt" "$T/cc.err")"
grep -q "^claims campaign $T/c.policy: [1-9][0-9]* cases" "$T/cc.txt" || fail "summary: $(cat "$T/cc.txt")"
python3 - "$T/cc" <<'PY' || fail "claims campaign stats/report: $(head -c 800 "$T/cc/stats.json")"
import json, os, sys
d = sys.argv[1]
st = json.load(open(os.path.join(d, 'stats.json')))
cl = st['claims']
assert st['mode'] == 'claims' and st['cases'] > 0 and st['findings'] == cl['claim_mismatches'] > 0, st
assert cl['unclaimed_capabilities'] > 0 and cl['unclaimed'], 'no unclaimed capability counted'
assert all(u['backend'] and u['count'] > 0 and 'dtype' in u['example'] for u in cl['unclaimed']), cl['unclaimed']
rep = json.load(open(os.path.join(d, 'report.json')))
assert rep['unclaimed_capabilities'] == cl['unclaimed'], 'report.json does not list them'
buckets = os.listdir(os.path.join(d, 'findings'))
assert buckets and len(buckets) == st['buckets'] and cl['minimised'] >= 1, (buckets, st['buckets'])
kinds = set()
for b in buckets:
    v = json.load(open(os.path.join(d, 'findings', b, 'verdict.json')))
    assert v['signature'].startswith('claim_mismatch|'), v['signature']
    kinds.add(v['signature'].split('|')[1])
    assert os.path.exists(os.path.join(d, 'findings', b, 'original.case'))
assert 'flash_bug:row_scale' in kinds, kinds
PY
grep -q 'dtype = bf16' "$T"/cc/findings/*/finding.case || fail "no minimised bf16 case"
for f in report.junit.xml report.sarif report.html; do [ -s "$T/cc/$f" ] || fail "missing $f"; done

# --jobs 2: the same cases in two worker processes, results in case order: the first
# failure's minimised bucket is the one --jobs 1 found, byte for byte
"$BIN" campaign --policy "$T/c.policy" --time 10 --seed 3 --jobs 2 --out "$T/cj" > "$T/cj.txt" 2> "$T/cj.err"; rc=$?
[ $rc -eq 1 ] || fail "claims campaign --jobs 2: exit $rc: $(cat "$T/cj.txt" "$T/cj.err")"
python3 - "$T/cc" "$T/cj" <<'PY' || fail "--jobs 2 buckets differ from --jobs 1"
import json, os, sys
def first(d):
    st = json.load(open(os.path.join(d, 'stats.json')))
    found = []
    for b in os.listdir(os.path.join(d, 'findings')):
        v = json.load(open(os.path.join(d, 'findings', b, 'verdict.json')))
        found.append((b, v['signature'], open(os.path.join(d, 'findings', b, 'finding.case')).read()))
    return st, found
s1, f1 = first(sys.argv[1])
s2, f2 = first(sys.argv[2])
assert s1['jobs'] == 1 and s2['jobs'] == 2, (s1['jobs'], s2['jobs'])
common = {b for b, _, _ in f1} & {b for b, _, _ in f2}
assert any(sig.startswith('claim_mismatch|flash_bug:row_scale|') for b, sig, _ in f1 if b in common), (f1, f2)
for b, sig, text in f1:
    if b in common:
        assert text == [t for b2, _, t in f2 if b2 == b][0], 'bucket %s minimised differently' % b
PY
# --resume: 8 s, then 8 s more; the counters add up; a running campaign's DIR is refused
"$BIN" campaign --policy "$T/c.policy" --time 8 --seed 3 --out "$T/rs" > "$T/rs1.txt" 2>&1
n1=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cases'])" "$T/rs/stats.json")
err=$("$BIN" campaign --policy "$T/c.policy" --time 1 --seed 3 --out "$T/rs" 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$err" | grep -q 'holds an earlier campaign (stats.json): pass --resume' || fail "no --resume: $rc $err"
err=$("$BIN" campaign --policy "$T/c.policy" --time 1 --seed 4 --resume --out "$T/rs" 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$err" | grep -q 'run with --seed 3 (this run: 4)' || fail "resume, other seed: $rc $err"
"$BIN" campaign --policy "$T/c.policy" --time 8 --seed 3 --resume --out "$T/rs" > "$T/rs2.txt" 2>&1 &
pid=$!
sleep 3
err=$("$BIN" campaign --policy "$T/c.policy" --time 1 --seed 3 --resume --out "$T/rs" 2>&1); rc=$?
[ $rc -eq 7 ] && echo "$err" | grep -q 'in use by a running campaign' || fail "lock not honoured: $rc $err"
wait $pid; rc=$?
[ $rc -le 1 ] || fail "resume: exit $rc: $(cat "$T/rs2.txt")"
n2=$(sed -n 's/^claims campaign [^:]*: \([0-9]*\) cases.*/\1/p' "$T/rs2.txt")
python3 - "$T/rs/stats.json" "$n1" "$n2" <<'PY' || fail "resumed counters: n1=$n1 summary: $(tail -1 "$T/rs2.txt")"
import json, sys
st = json.load(open(sys.argv[1]))
n1, total = int(sys.argv[2]), int(sys.argv[3])
cl = st['claims']
assert st['resumed'] == 1 and n1 > 0 and st['cases'] == total > n1, (st['cases'], n1, total)
assert cl['served'] + cl['none_chosen'] + st['errors'] == st['cases'], st
assert st['elapsed_s'] >= 16, st['elapsed_s']
PY
err=$("$BIN" campaign --policy "$T/c.policy" --backend cpu --time 1 --out "$T/x" 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$err" | grep -q -- '--backend is not supported' || fail "campaign --backend: $rc $err"

printf 'dtype = fp16\nseqlen = 16\nhead_dim = 16\n' > "$T/f16.case"
for opt in "--engine e1" "--jobs 2" "--backend cpu"; do
  err=$("$BIN" run --policy "$T/c.policy" $opt "$T/f16.case" 2>&1); rc=$?
  [ $rc -eq 2 ] && echo "$err" | grep -q "^attnfuzz run: ${opt%% *} is not supported with --policy" || fail "run $opt: $rc $err"
done
out=$("$BIN" run --policy "$T/c.policy" --deadline 30 --in-process --oracle fp64 "$T/f16.case" 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q '\[cpu\]: pass' || fail "run --policy with honoured options: $rc $out"
# --oracle reaches the judge of the claim check
for tier in fp64 mpfr; do
  out=$("$BIN" run --policy "$T/c.policy" --oracle $tier --json "$T/f16.case" 2>&1); rc=$?
  [ $rc -eq 0 ] && echo "$out" | grep -q "\"oracle_tier\":\"$tier\"" || fail "run --oracle $tier: $rc $out"
done

# te_like.py: TransformerEngine's rules as a selector
TE="python3 python/selectors/te_like.py"
sel() { "$BIN" select "$1" --selector-cmd "$TE" 2>&1; }
printf 'dtype = bf16\nseqlen = 64\nhead_dim = 128\n' > "$T/bf16.case"
out=$(sel "$T/bf16.case"); echo "$out" | grep -q '^chosen: flash_ref' || fail "te bf16 no GPU: $out"
out=$(ATTNFUZZ_SELECTOR_SM=90 sel "$T/bf16.case"); echo "$out" | grep -q '^chosen: cudnn' || fail "te bf16 sm90 prefers fused: $out"
out=$(ATTNFUZZ_SELECTOR_SM=90 NVTE_FUSED_ATTN=0 sel "$T/bf16.case"); echo "$out" | grep -q '^chosen: flash_ref' || fail "te NVTE_FUSED_ATTN=0: $out"
printf 'dtype = bf16\nseqlen_q = 32\nseqlen_kv = 64\nhead_dim = 64\nmask = causal\nalign = top_left\n' > "$T/tl.case"
out=$(sel "$T/tl.case"); echo "$out" | grep -q '^chosen: cpu' || fail "te top-left causal cross-attention: $out"
printf 'dtype = bf16\nseqlen = 64\nhead_dim_qk = 192\nhead_dim_v = 128\n' > "$T/mla.case"
out=$(ATTNFUZZ_SELECTOR_SM=90 sel "$T/mla.case"); echo "$out" | grep -q '^chosen: cudnn' || fail "te MLA on sm90: $out"
printf 'dtype = fp8_e4m3\nseqlen = 64\nhead_dim = 128\nbackward = yes\n' > "$T/fp8.case"
out=$(sel "$T/fp8.case"); rc=$?
[ $rc -eq 3 ] && echo "$out" | grep -q 'cpu.*fp8 attention' || fail "te fp8 training without GPU: $rc $out"
out=$(ATTNFUZZ_SELECTOR_SM=90 ATTNFUZZ_SELECTOR_FP8_RECIPE=current sel "$T/fp8.case"); rc=$?
[ $rc -eq 3 ] && echo "$out" | grep -q 'current scaling needs sm100' || fail "te fp8 current scaling on sm90: $rc $out"
out=$("$BIN" run --selector-cmd "$TE" "$T/bf16.case" 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q '\[flash_ref\]: pass' || fail "run --selector-cmd te_like: $rc $out"
echo "test_select_campaign: ok"
