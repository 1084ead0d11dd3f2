#!/usr/bin/env bash
# test_select_features.sh ATTNFUZZ — select on a case with each feature the case model has
# (softcap, sinks, bias, ALiBi, log2 stats, dLSE, dropout, fp8 headroom, CP) under
# policies/default.policy: it routes, and every backend that does not serve the case
# gives a reason naming the feature; the `features = LIST` policy key (issue 15), with a
# file:line error for an unknown name.
set -u
BIN=${1:-build/attnfuzz}
P=policies/default.policy
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# feature line | its policy name: cpu serves it; cudnn's and flash_ref's fp16/bf16 entries decline it
while IFS='|' read -r line name; do
  printf "dtype = bf16\nseqlen = 64\nhead_dim = 64\nbackward = yes\n$line\n" > "$T/f.case"
  out=$("$BIN" select "$T/f.case" --policy $P); rc=$?
  [ $rc -eq 0 ] && echo "$out" | grep -q "^chosen: cpu ($P:" || fail "$name: exit $rc: $out"
  echo "$out" | grep -qx "  not cudnn ($P:14): feature $name not claimed (claims: none)" || fail "$name: cudnn reason: $out"
  echo "$out" | grep -qx "  not flash_ref ($P:72): feature $name not claimed (claims: none)" || fail "$name: flash_ref reason: $out"
done <<'CASES'
softcap = 30|softcap
softmax = off_by_one|sinks
softmax = learnable|sinks
bias = 1hss|bias
alibi = yes|alibi
stats = log2|log2_stats
dlse = yes|dlse
dropout = 0.25 7 3|dropout
CASES

# fp8 headroom: cpu serves it, cudnn's fp8 forward entry claims it (declines only for the
# GPU arch here), flash_fp8 claims it too (lower priority)
printf 'dtype = fp8_e4m3\nseqlen = 64\nhead_dim = 64\nfp8_headroom = 2,1,3,0,0\n' > "$T/hr.case"
out=$("$BIN" select "$T/hr.case" --policy $P); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "^chosen: cpu ($P:" || fail "fp8_headroom: exit $rc: $out"
echo "$out" | grep -qx "  not cudnn ($P:24): needs GPU arch sm90..sm90; the arch is unknown here (no GPU)" || fail "fp8_headroom cudnn: $out"
echo "$out" | grep -q "^  not flash_fp8 ($P:78): also claims it" || fail "fp8_headroom flash_fp8: $out"

# context parallelism: nobody in the default policy (the cp wrapper is opt-in): none, each reason names cp
printf 'dtype = bf16\nseqlen = 64\nhead_dim = 64\ncp = 2 p2p\n' > "$T/cp.case"
out=$("$BIN" select "$T/cp.case" --policy $P); rc=$?
[ $rc -eq 3 ] && echo "$out" | grep -q '^chosen: none' || fail "cp: exit $rc: $out"
n=$(echo "$out" | grep -c '^  not ')
[ "$n" -eq "$(echo "$out" | grep -c '^  not .*: cp 2 p2p not claimed$\|^  not .*: dtype bf16 not claimed$')" ] || fail "cp reasons: $out"
echo "$out" | grep -q "not cpu ($P:57): cp 2 p2p not claimed" || fail "cp cpu reason: $out"

# features = LIST
printf 'backend = cpu\nfeatures = softcap sinks\n' > "$T/list.policy"
printf 'dtype = bf16\nseqlen = 32\nhead_dim = 32\nsoftcap = 20\nsoftmax = off_by_one\n' > "$T/ss.case"
out=$("$BIN" select "$T/ss.case" --policy "$T/list.policy"); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q '^chosen: cpu' || fail "features list: exit $rc: $out"
printf 'dtype = bf16\nseqlen = 32\nhead_dim = 32\nsoftcap = 20\nbias = 1hss\nalibi = yes\n' > "$T/sb.case"
out=$("$BIN" select "$T/sb.case" --policy "$T/list.policy"); rc=$?
[ $rc -eq 3 ] && echo "$out" | grep -qx "  not cpu ($T/list.policy:1): feature bias alibi not claimed (claims: softcap sinks)" \
  || fail "features list, bias: exit $rc: $out"
printf 'backend = cpu\ndtypes = bf16\nfeatures = softcap,rope\n' > "$T/bad.policy"
err=$("$BIN" select "$T/ss.case" --policy "$T/bad.policy" 2>&1); rc=$?
[ $rc -eq 4 ] && echo "$err" | grep -q "bad.policy:3: features: 'rope' is not yes, no or a list of softcap sinks bias alibi log2_stats dlse fp8_headroom dropout" \
  || fail "unknown feature: exit $rc: $err"
echo "test_select_features: ok"
