#!/usr/bin/env bash
# test_cp.sh ATTNFUZZ — the CP wrapper (harness/backends/cp, docs/cp.md) against the oracle:
#   1. the correct wrapper over cpu passes every seed of corpora/seed-cp (exit 0);
#   2. a sweep of generated cases: every comm type at cp 2 and 4, causal / unmasked /
#      window / padding / GQA / thd, passes or is declined with a reason (never a finding);
#      the declines asserted: p2p and a2a+p2p sliding windows (TransformerEngine's reason),
#      a2a heads not divisible by cp;
#   3. each planted CP bug (ATTNFUZZ_CP_PLANT + --backend cp-bug:PLANT:cpu) gives a finding
#      on its seed, with the verdict kind its bug deserves;
#   4. a plant never resolves without the environment, nor from a case file's backend line.
set -u
bin=${1:?usage: test_cp.sh path/to/attnfuzz}

fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say() { echo "test_cp: $*"; }
bad() { echo "test_cp: FAIL: $*"; fail=1; }

# 1. seeds, correct wrapper
out=$("$bin" run --backend cpu corpora/seed-cp/*.case 2>&1); rc=$?
[ $rc -eq 0 ] || bad "correct wrapper on corpora/seed-cp: exit $rc: $out"
say "seeds: $(grep -c ': pass' <<<"$out") pass"

# 2. sweep
n=0; passed=0; declined=0
for comm in p2p all_gather a2a a2a+p2p; do
  for cp in 2 4; do
    for variant in causal none window padding gqa thd; do
      f="$tmp/$comm-$cp-$variant.case"
      { echo "dtype = bf16"; echo "batch = 2"; echo "head_dim = 32"; echo "backward = yes"
        echo "cp = $cp $comm"; echo "seed = $((n + 400))"
        case $variant in
          causal) echo "heads = 4"; echo "seqlen = 32"; echo "mask = causal" ;;
          none) echo "heads = 4"; echo "seqlen_q = 32"; echo "seqlen_kv = 48"; echo "mask = none" ;;
          window) echo "heads = 4"; echo "seqlen = 48"; echo "mask = causal"; echo "window = 9,0" ;;
          padding) echo "heads = 4"; echo "seqlen = 32"; echo "seqlens_q = 32,19"; echo "seqlens_kv = 32,27"
                   echo "mask = padding" ;;
          gqa) echo "heads_q = 8"; echo "heads_kv = 4"; echo "seqlen = 32"; echo "mask = causal" ;;
          thd) echo "heads = 4"; echo "layout = thd"; echo "seqlen = 32"; echo "seqlens_q = 32,16"
               echo "seqlens_kv = 32,16"; echo "mask = padding_causal" ;;
        esac; } > "$f"
      n=$((n + 1))
      out=$("$bin" run --backend cpu "$f" 2>&1); rc=$?
      if [ $rc -eq 0 ]; then passed=$((passed + 1))
      elif [ $rc -eq 3 ]; then declined=$((declined + 1)); say "declined $comm cp $cp $variant: ${out##*: }"
      else bad "$comm cp $cp $variant: exit $rc: $out"; fi
      if [ "$variant" = window ] && { [ "$comm" = p2p ] || [ "$comm" = a2a+p2p ]; }; then
        grep -q "cannot support sliding window" <<<"$out" || bad "$comm window: no TransformerEngine reason: $out"
      fi
      if [ "$variant" = window ] && { [ "$comm" = all_gather ] || [ "$comm" = a2a ]; }; then
        [ $rc -eq 0 ] || bad "$comm cp $cp window must be served: $out"
      fi
    done
  done
done
say "sweep: $n cases, $passed pass, $declined declined"
[ $passed -ge 30 ] || bad "sweep: only $passed of $n passed"
printf 'dtype = bf16\nheads = 6\nseqlen = 32\nhead_dim = 16\ncp = 4 a2a\n' > "$tmp/a2a-heads.case"
out=$("$bin" run --backend cpu "$tmp/a2a-heads.case" 2>&1); rc=$?
{ [ $rc -eq 3 ] && grep -q "not divisible by 4" <<<"$out"; } || bad "a2a heads 6 at cp 4: exit $rc: $out"

# 3. plants: name, seed, expected kind
check_plant() {
  local plant=$1 seed=$2 kind=$3
  out=$(ATTNFUZZ_CP_PLANT=$plant "$bin" run --backend "cp-bug:$plant:cpu" "corpora/seed-cp/$seed" 2>&1); rc=$?
  if [ $rc -ne 1 ] || ! grep -q "FINDING $kind" <<<"$out"; then
    bad "plant $plant on $seed: exit $rc, expected a $kind finding: $out"
  else
    say "plant $plant found on $seed: $(grep -o "FINDING $kind [A-Za-z]*" <<<"$out" | head -1)"
  fi
}
check_plant lse_no_max p2p-large-scores-cp2.case nan_inf
check_plant chunk_swap p2p-causal-cp2.case mismatch
check_plant no_half_mask p2p-causal-gqa-cp4.case mismatch
check_plant dkdv_not_reduced p2p-thd-causal-cp2.case mismatch
check_plant dkdv_not_reduced ag-causal-cp4.case mismatch

# 4. plants never by accident
out=$("$bin" run --backend cp-bug:lse_no_max:cpu corpora/seed-cp/p2p-large-scores-cp2.case 2>&1); rc=$?
{ [ $rc -eq 2 ] && grep -q "ATTNFUZZ_CP_PLANT=lse_no_max" <<<"$out"; } || bad "plant without env: exit $rc: $out"
{ cat corpora/seed-cp/p2p-large-scores-cp2.case; echo "backend = cp-bug:lse_no_max:cpu"; } > "$tmp/planted.case"
out=$("$bin" run "$tmp/planted.case" 2>&1); rc=$?
{ [ $rc -eq 2 ] && grep -q "planted bug" <<<"$out"; } || bad "plant from a case file: exit $rc: $out"

[ $fail -eq 0 ] && say ok
exit $fail
