#!/usr/bin/env bash
# test_claims_hdim.sh ATTNFUZZ — a policy's head-dim claim against a backend that really
# declines (issue 15): hdim_cap (harness/plugins/hdim_cap) is flash_ref declining head
# dims > 64 with a reason.
#   claims 8..128:  run d = 96 is claim_mismatch carrying hdim_cap's reason (exit 1); d = 64
#                   passes; a campaign finds only head dims in (64, 128], each with the
#                   reason; the gate from the <= 64 policy to it fails with that bucket
#   claims 8..64:   d = 96 goes to cpu, hdim_cap is tried and declines: no claim_mismatch,
#                   no unclaimed capability
#   the converse:   a policy barring d > 64 from flash_ref (which serves d = 96 correctly)
#                   notes flash_ref's unclaimed capability, in run and in a campaign.
set -u
BIN=${1:-build/attnfuzz}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# cpu as the fallback for fp16 / bf16 (the dtypes hdim_cap and flash_ref serve; other
# dtypes are chosen for nobody, so the campaigns judge only these backends)
CPU='backend = cpu\ndtypes = fp16,bf16\ncp = none\n'
printf 'backend = hdim_cap\ndtypes = fp16,bf16\nhead_dim_qk = 8..128\nhead_dim_v = 8..128\nfeatures = no\n'"$CPU" > "$T/claim128.policy"
printf 'backend = hdim_cap\ndtypes = fp16,bf16\nhead_dim_qk = 8..64\nhead_dim_v = 8..64\nfeatures = no\n'"$CPU" > "$T/claim64.policy"
printf 'backend = flash_ref\ndtypes = fp16,bf16\nhead_dim_qk = 8..64\nhead_dim_v = 8..64\n'"$CPU" > "$T/bar64.policy"
printf 'dtype = bf16\nseqlen = 32\nhead_dim = 96\n' > "$T/d96.case"
printf 'dtype = bf16\nseqlen = 32\nhead_dim = 64\n' > "$T/d64.case"
REASON='hdim_cap serves head dims up to 64'

out=$("$BIN" run --policy "$T/claim128.policy" "$T/d96.case" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "claim 128, d 96: exit $rc: $out"
[ "$out" = "$T/d96.case [hdim_cap]: FINDING claim_mismatch - b-1 h-1 r-1 c-1 err=0 allowed=0 ratio=0 (hdim_cap declined a case $T/claim128.policy:1 claims: $REASON (head_dim_qk 96, head_dim_v 96))" ] \
  || fail "claim 128, d 96: $out"
out=$("$BIN" run --policy "$T/claim128.policy" "$T/d64.case" 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "^$T/d64.case \[hdim_cap\]: pass " || fail "claim 128, d 64: exit $rc: $out"
echo "$out" | grep -q 'claim_mismatch\|unclaimed' && fail "claim 128, d 64 flagged: $out"

out=$("$BIN" run --policy "$T/claim64.policy" "$T/d96.case" 2>&1); rc=$?
[ $rc -eq 0 ] || fail "claim 64, d 96: exit $rc: $out"
[ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q "^$T/d96.case \[cpu\]: pass " || fail "claim 64, d 96: $out"

out=$("$BIN" run --policy "$T/bar64.policy" "$T/d96.case" 2>&1); rc=$?
[ $rc -eq 0 ] || fail "bar 64, d 96: exit $rc: $out"
echo "$out" | grep -qx "$T/d96.case: note: unclaimed capability: flash_ref serves this case correctly (the policy declines it: head_dim_qk 96 outside the claimed 8..64)" \
  || fail "bar 64, d 96: no unclaimed capability line: $out"

# a campaign: every claim_mismatch is hdim_cap declining a head dim in (64, 128]
"$BIN" campaign --policy "$T/claim128.policy" --time 15 --seed 3 --out "$T/cc" > "$T/cc.txt" 2> "$T/cc.err"; rc=$?
[ $rc -eq 1 ] || fail "claims campaign: exit $rc: $(cat "$T/cc.txt" "$T/cc.err")"
python3 - "$T/cc" "$T/claim128.policy" "$REASON" <<'PY' || fail "claims campaign findings"
import json, os, re, sys
d, policy, reason = sys.argv[1:]
st = json.load(open(os.path.join(d, 'stats.json')))
assert st['claims']['claim_mismatches'] > 0 and st['claims']['served'] > st['claims']['claim_mismatches'], st
buckets = os.listdir(os.path.join(d, 'findings'))
assert buckets, 'no finding stored'
for b in buckets:
    v = json.load(open(os.path.join(d, 'findings', b, 'verdict.json')))
    assert v['signature'].startswith('claim_mismatch|hdim_cap|'), v['signature']
    detail = v['findings'][0]['detail']
    assert detail.startswith('hdim_cap declined a case %s:1 claims: %s (' % (policy, reason)), detail
    for name in ('finding.case', 'original.case'):
        text = open(os.path.join(d, 'findings', b, name)).read()
        dims = [int(x) for x in re.findall(r'^head_dim_(?:qk|v) = (\d+)$', text, re.M)]
        assert len(dims) == 2 and max(dims) in range(65, 129) and min(dims) >= 8, (name, dims)
PY

# the gate: claiming (64, 128] for hdim_cap newly serves configurations it declines
"$BIN" gate --base "$T/claim64.policy" --head "$T/claim128.policy" --time 20 --seed 3 --out "$T/g" --quiet > "$T/g.txt"; rc=$?
[ $rc -eq 1 ] && grep -q '^gate FAILED' "$T/g.txt" || fail "gate 64 -> 128: exit $rc: $(cat "$T/g.txt")"
for b in "$T"/g/findings/*; do
  grep -q "claim_mismatch|hdim_cap|" "$b/verdict.json" && grep -q "$REASON" "$b/verdict.json" || fail "gate finding: $(head -c 600 "$b/verdict.json")"
done
"$BIN" gate --base "$T/claim64.policy" --head "$T/claim64.policy" --time 3 --out "$T/same" --quiet > "$T/same.txt"; rc=$?
[ $rc -eq 0 ] || fail "gate 64 -> 64: exit $rc: $(cat "$T/same.txt")"

# the converse in a campaign: flash_ref's unclaimed capability on head dims > 64
"$BIN" campaign --policy "$T/bar64.policy" --time 15 --max-work 30000 --seed 3 --out "$T/cu" > "$T/cu.txt" 2> "$T/cu.err"; rc=$?
[ $rc -le 1 ] || fail "bar 64 campaign: exit $rc: $(cat "$T/cu.txt" "$T/cu.err")"
python3 - "$T/cu" <<'PY' || fail "bar 64 campaign: no flash_ref unclaimed capability"
import json, os, re, sys
st = json.load(open(os.path.join(sys.argv[1], 'stats.json')))
u = [x for x in st['claims']['unclaimed'] if x['backend'] == 'flash_ref']
assert u, st['claims']
for b in os.listdir(os.path.join(sys.argv[1], 'findings')) if os.path.isdir(os.path.join(sys.argv[1], 'findings')) else []:
    sig = json.load(open(os.path.join(sys.argv[1], 'findings', b, 'verdict.json')))['signature']
    assert not sig.startswith('claim_mismatch|flash_ref|'), sig
big = [x for x in u if max(int(v) for v in re.findall(r'^head_dim_(?:qk|v) = (\d+)$', x['example'], re.M)) > 64]
assert big, [x['config_class'] for x in u]
PY
echo "test_claims_hdim: ok"
