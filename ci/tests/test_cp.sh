#!/usr/bin/env bash
# test_cp.sh ATTNFUZZ — the CP wrapper (harness/backends/cp, docs/cp.md) against the oracle:
#   1. the correct wrapper over cpu passes every seed of corpora/seed-cp (exit 0);
#   0. the wrapper is on by default; ATTNFUZZ_CP=0 switches it off (cp > 1 declined);
#   2. a sweep of generated cases: every comm type at cp 2, 3, 4 and 8, causal / unmasked /
#      window / padding / GQA / MQA / thd, passes or is declined with a reason (never a
#      finding); a2a serves MQA at every cp (the K/V head replicated to the ranks);
#      the declines asserted: p2p and a2a+p2p sliding windows (TransformerEngine's reason),
#      a2a heads not divisible by cp;
#   2b. every seed of corpora/seed-cp with its cp line set to each comm type at cp 1, 2,
#      3, 4, 8 where the case model accepts it: pass or declined, never a finding;
#   3. each planted CP bug (ATTNFUZZ_CP_PLANT + --backend cp-bug:PLANT:cpu) gives a finding
#      on its seed, with the verdict kind its bug deserves (test_cp_campaign.sh: found by a
#      campaign and minimised);
#   4. a plant never resolves without the environment, nor from a case file's backend line.
set -u
bin=${1:?usage: test_cp.sh path/to/attnfuzz}
unset ATTNFUZZ_CP # the CP wrapper is on by default (backends/registry.c)
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say() { echo "test_cp: $*"; }
bad() { echo "test_cp: FAIL: $*"; fail=1; }

# 0. default on; ATTNFUZZ_CP=0 off
out=$(ATTNFUZZ_CP=0 "$bin" run --backend cpu corpora/seed-cp/p2p-causal-cp2.case 2>&1); rc=$?
{ [ $rc -eq 3 ] && grep -q "needs a CP wrapper" <<<"$out"; } || bad "ATTNFUZZ_CP=0 must decline cp 2: exit $rc: $out"

# 1. seeds, correct wrapper
# a generous deadline: the d = 512 FROST seed with its probes passes 60 s in an ASan build on a loaded machine
out=$("$bin" run --deadline 600 --backend cpu corpora/seed-cp/*.case 2>&1); rc=$?
[ $rc -eq 0 ] || bad "correct wrapper on corpora/seed-cp: exit $rc: $out"
say "seeds: $(grep -c ': pass' <<<"$out") pass"

# 2. sweep (seqlens 48 / 96 divide by 2 cp for every cp; heads per cp so that a2a splits
# them); one run of every case, without the probes and on the oracle's fp64 tier (section
# 1 runs both on the seeds; MPFR is ~4x the cost of the whole CP run here)
n=0; sweep=()
for comm in p2p all_gather a2a a2a+p2p; do
  for cp in 2 3 4 8; do
    case $cp in 3) h=6 ;; 8) h=8 ;; *) h=4 ;; esac
    for variant in causal none window padding gqa mqa thd; do
      [ $variant = mqa ] && [ $comm != a2a ] && continue # the replication is a2a's alone
      f="$tmp/$comm-$cp-$variant.case"
      { echo "dtype = bf16"; echo "batch = 2"; echo "head_dim = 32"; echo "backward = yes"
        echo "cp = $cp $comm"; echo "seed = $((n + 400))"
        case $variant in
          causal) echo "heads = $h"; echo "seqlen = 48"; echo "mask = causal" ;;
          none) echo "heads = $h"; echo "seqlen_q = 48"; echo "seqlen_kv = 96"; echo "mask = none" ;;
          window) echo "heads = $h"; echo "seqlen = 48"; echo "mask = causal"; echo "window = 9,0" ;;
          padding) echo "heads = $h"; echo "seqlen = 48"; echo "seqlens_q = 48,19"; echo "seqlens_kv = 48,27"
                   echo "mask = padding" ;;
          gqa) echo "heads_q = $((2 * h))"; echo "heads_kv = $h"; echo "seqlen = 48"; echo "mask = causal" ;;
          # a2a replicates the one K/V head to every rank (heads_kv < cp)
          mqa) echo "heads_q = $h"; echo "heads_kv = 1"; echo "seqlen = 48"; echo "mask = causal" ;;
          thd) echo "heads = $h"; echo "layout = thd"; echo "seqlen = 96"; echo "seqlens_q = 96,48"
               echo "seqlens_kv = 96,48"; echo "mask = padding_causal" ;;
        esac; } > "$f"
      n=$((n + 1)); sweep+=("$f")
    done
  done
done
all=$("$bin" run --no-probes --oracle fp64 --jobs 2 --backend cpu "${sweep[@]}" 2>&1)
passed=0; declined=0
for f in "${sweep[@]}"; do
  name=$(basename "$f" .case); comm=${name%%-*}; rest=${name#*-}; cp=${rest%%-*}; variant=${rest#*-}
  out=$(grep -F -- "$f " <<<"$all")
  if grep -q "\]: pass" <<<"$out"; then passed=$((passed + 1))
  elif grep -q "\]: declined" <<<"$out"; then declined=$((declined + 1)); say "declined $comm cp $cp $variant: ${out##*: }"
  else bad "$comm cp $cp $variant: $out"; fi
  if [ "$variant" = window ] && { [ "$comm" = p2p ] || [ "$comm" = a2a+p2p ]; }; then
    grep -q "cannot support sliding window" <<<"$out" || bad "$comm window: no TransformerEngine reason: $out"
  fi
  if [ "$variant" = window ] && { [ "$comm" = all_gather ] || [ "$comm" = a2a ]; }; then
    grep -q "\]: pass" <<<"$out" || bad "$comm cp $cp window must be served: $out"
  fi
  if [ "$variant" = mqa ] && [ "$comm" = a2a ]; then
    grep -q "\]: pass" <<<"$out" || bad "a2a cp $cp MQA (K/V head replicated) must be served: $out"
  fi
done
say "sweep: $n cases, $passed pass, $declined declined"
[ $passed -ge 85 ] || bad "sweep: only $passed of $n passed"

# 2b. the seeds at every comm type and cp 1, 2, 3, 4, 8 (where the case model accepts it)
mkdir -p "$tmp/seeds"; invalid=0; files=()
for s in corpora/seed-cp/*.case; do
  for cc in "1" "2 p2p" "2 all_gather" "2 a2a" "2 a2a+p2p" "3 p2p" "3 all_gather" "3 a2a" "3 a2a+p2p" \
            "4 p2p" "4 all_gather" "4 a2a" "4 a2a+p2p" "8 p2p" "8 all_gather" "8 a2a" "8 a2a+p2p"; do
    f="$tmp/seeds/$(basename "$s" .case)-${cc// /-}.case"
    sed "s/^cp = .*/cp = $cc/" "$s" > "$f"
    if "$bin" print "$f" > /dev/null 2>&1; then files+=("$f"); else invalid=$((invalid + 1)); fi
  done
done
out=$("$bin" run --no-probes --oracle fp64 --jobs 2 --backend cpu "${files[@]}" 2>&1); rc=$?
sp=$(grep -c '\]: pass' <<<"$out"); sd=$(grep -c '\]: declined' <<<"$out")
[ $rc -eq 0 ] || [ $rc -eq 3 ] || bad "seeds x cp: exit $rc: $(grep -v ']: pass\|]: declined' <<<"$out")"
[ $((sp + sd)) -eq ${#files[@]} ] || bad "seeds x cp: ${#files[@]} cases, $sp pass + $sd declined"
for cp in 1 2 3 4 8; do
  for comm in p2p all_gather a2a a2a+p2p; do
    [ $cp -eq 1 ] && [ $comm != p2p ] && continue
    label=$([ $cp -eq 1 ] && echo "-1.case" || echo "-$cp-$comm.case")
    np=$(grep -c -- "$label \[cpu\]: pass" <<<"$out"); nd=$(grep -c -- "$label \[cpu\]: declined" <<<"$out")
    say "seeds at cp $([ $cp -eq 1 ] && echo 1 || echo "$cp $comm"): $np pass, $nd declined"
    # a comm type no seed can serve at this cp must say why: a2a's heads (2: the sweep covers it)
    if [ $np -eq 0 ] && [ "$(grep -- "$label \[cpu\]: declined" <<<"$out" | grep -c "not divisible by $cp")" -ne $nd ]; then
      bad "no seed passes at cp $cp $comm, and not every decline is a2a's heads: $(grep -- "$label" <<<"$out")"
    fi
  done
done
say "seeds x cp: ${#files[@]} valid cases ($invalid not valid in the case model), $sp pass, $sd declined"
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
check_plant window_left_dropped ag-window-cp2.case mismatch
check_plant kv_repeat_tiled a2a-gqa-kvrep-cp4.case mismatch
check_plant a2a_skipped a2a-window-gqa-cp2.case mismatch
check_plant sink_per_rank p2p-sinks-cp2.case mismatch
check_plant bias_local p2p-bias-1hss-causal-cp2.case mismatch
check_plant bias_local ag-bias-111s-padding-cp2.case mismatch

# 4. plants never by accident
out=$("$bin" run --backend cp-bug:lse_no_max:cpu corpora/seed-cp/p2p-large-scores-cp2.case 2>&1); rc=$?
{ [ $rc -eq 2 ] && grep -q "ATTNFUZZ_CP_PLANT=lse_no_max" <<<"$out"; } || bad "plant without env: exit $rc: $out"
{ cat corpora/seed-cp/p2p-large-scores-cp2.case; echo "backend = cp-bug:lse_no_max:cpu"; } > "$tmp/planted.case"
out=$("$bin" run "$tmp/planted.case" 2>&1); rc=$?
{ [ $rc -eq 2 ] && grep -q "planted bug" <<<"$out"; } || bad "plant from a case file: exit $rc: $out"

[ $fail -eq 0 ] && say ok
exit $fail
