#!/usr/bin/env bash
# test_cp_campaign.sh ATTNFUZZ — each planted CP bug (harness/backends/cp/cp.h, docs/cp.md)
# is found by a cpu campaign from corpora/seed-cp and minimised to a case that still has
# cp > 1 and a comm type the plant lives in; the same campaign over the correct wrapper
# (--backend cpu) finds nothing.
#
#   plant                 comm types it lives in        minimised case must also keep
#   lse_no_max            any (the forward merge)        -
#   chunk_swap            p2p, a2a+p2p (the ring)        -
#   no_half_mask          p2p, a2a+p2p (half steps)      a causal mask
#   dkdv_not_reduced      p2p, all_gather, a2a+p2p       backward
#   window_left_dropped   all_gather                     a window with a left bound
#   kv_repeat_tiled       a2a                            1 < heads_kv < cp
#   a2a_skipped           a2a                            -
#
# Per campaign: exit 1 with at least one bucket, every bucket's finding.case passes the
# row's checks, and the first one still fails on repro (exit 1). Two campaigns run at a
# time (CI has 2 cores), on the in-process engine in every build (it runs each seed as it
# decodes; libFuzzer under ASan runs too few cases). ATTNFUZZ_TEST_CP_CAMPAIGN_TIME sets
# the fuzzing seconds (15).
set -u
bin=${1:?usage: test_cp_campaign.sh path/to/attnfuzz}
unset ATTNFUZZ_CP # the CP wrapper is on by default (backends/registry.c)
TIME=${ATTNFUZZ_TEST_CP_CAMPAIGN_TIME:-15}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say() { echo "test_cp_campaign: $*"; }
bad() { echo "test_cp_campaign: FAIL: $*"; fail=1; }

# campaign NAME BACKEND [PLANT FIRST]: fuzzing $TIME s, everything done by 4 x $TIME s; the
# seeds are all of corpora/seed-cp, FIRST (the plant's seed, one the fuzzer decodes as it
# is) run first so that a slow build (ASan on a loaded machine: 8 cases in 15 s) reaches it
campaign() {
  local name=$1 backend=$2 plant=${3:-} first=${4:-} s
  local seeds=()
  [ -n "$first" ] && seeds=("corpora/seed-cp/$first")
  for s in corpora/seed-cp/*.case; do [ "$s" = "corpora/seed-cp/$first" ] || seeds+=("$s"); done
  ATTNFUZZ_CP_PLANT=$plant "$bin" campaign --inprocess --time "$TIME" --total-time $((4 * TIME)) --jobs 1 --seed 11 \
    --minimize-runs 120 --backend "$backend" --out "$tmp/$name" "${seeds[@]}" > "$tmp/$name.log" 2>&1
  echo $? > "$tmp/$name.rc"
}

# field VALUE-OF KEY FILE: the value of "KEY = value" in a case file
field() { sed -n "s/^$1 = //p" "$2" | head -n 1; }

# check PLANT COMM-REGEX KEEP: KEEP is a bash test on the case's fields (mask, window_left,
# heads_kv, cp_size, backward) that the minimised case must still pass
check() {
  local plant=$1 comms=$2 keep=$3 dir="$tmp/$1" rc n
  rc=$(cat "$dir.rc")
  n=$(ls "$dir/findings" 2>/dev/null | wc -l)
  if [ "$rc" != 1 ] || [ "$n" -lt 1 ]; then
    bad "$plant: campaign exit $rc, $n bucket(s): $(tail -2 "$dir.log" | tr '\n' ' ')"; return
  fi
  local d f cp cp_size cp_comm mask window window_left heads_kv backward kinds=""
  for d in "$dir"/findings/*; do
    f="$d/finding.case"
    cp=$(field cp "$f"); cp_size=${cp%% *}; cp_comm=${cp#* }
    mask=$(field mask "$f"); window=$(field window "$f"); window_left=${window%%,*}
    heads_kv=$(field heads_kv "$f"); backward=$(field backward "$f")
    kinds="$kinds $(grep -o '"verdict":"[a-z_]*"' "$d/verdict.json" | head -n 1 | cut -d'"' -f4)"
    if ! [ "${cp_size:-1}" -gt 1 ] 2>/dev/null || ! grep -qxE "$comms" <<<"$cp_comm"; then
      bad "$plant: $(basename "$d") minimised to cp = '$cp' (must keep cp > 1 and $comms)"; continue
    fi
    if ! eval "$keep"; then
      bad "$plant: $(basename "$d") minimised without what the bug needs ($keep): $(grep -vE '^(#|$)' "$f" | tr '\n' ' ')"
    fi
  done
  local first
  first=$(ls "$dir/findings" | head -n 1)
  ATTNFUZZ_CP_PLANT=$plant "$bin" run --backend "cp-bug:$plant:cpu" "$dir/findings/$first/finding.case" \
    > "$tmp/$plant.repro" 2>&1
  rc=$?
  [ "$rc" = 1 ] || bad "$plant: repro of $first exited $rc: $(head -c 300 "$tmp/$plant.repro")"
  f="$dir/findings/$first/finding.case"
  say "$plant found by a $TIME s campaign: $n bucket(s) ($kinds ), first minimised to cp $(field cp "$f")," \
    "heads $(field heads_q "$f")/$(field heads_kv "$f"), seqlen $(field seqlen_q "$f"), mask $(field mask "$f")," \
    "window $(field window "$f"), backward $(field backward "$f"); repro fails"
}

# the seven plants and none (the correct wrapper: --backend cpu), two at a time
runs=(lse_no_max:p2p-large-scores-cp2 chunk_swap:a2ap2p-causal-cp4 no_half_mask:a2ap2p-causal-cp4
  dkdv_not_reduced:ag-causal-cp4 window_left_dropped:ag-window-small-cp2 kv_repeat_tiled:a2a-gqa-kvrep-cp4
  a2a_skipped:a2a-gqa-kvrep-cp4 none)
for ((i = 0; i < ${#runs[@]}; i += 2)); do
  for run in "${runs[i]}" "${runs[i + 1]}"; do
    name=${run%%:*}
    if [ "$name" = none ]; then campaign none cpu & else campaign "$name" "cp-bug:$name:cpu" "$name" "${run#*:}.case" & fi
  done
  wait
done

check lse_no_max 'p2p|all_gather|a2a|a2a\+p2p' true
check chunk_swap 'p2p|a2a\+p2p' true
check no_half_mask 'p2p|a2a\+p2p' '[[ $mask == *causal* ]]'
check dkdv_not_reduced 'p2p|all_gather|a2a\+p2p' '[ "$backward" = yes ]'
check window_left_dropped 'all_gather' '[ "${window_left:--1}" -ge 0 ]'
check kv_repeat_tiled 'a2a' '[ "$heads_kv" -gt 1 ] && [ "$heads_kv" -lt "$cp_size" ]'
check a2a_skipped 'a2a' true

# the correct wrapper on the same seeds, the same campaign: nothing
rc=$(cat "$tmp/none.rc"); n=$(ls "$tmp/none/findings" 2>/dev/null | wc -l)
cases=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["cases"], "cases, cp_cases", json.dumps(d.get("cp_cases", {})))' "$tmp/none/stats.json" 2>/dev/null)
if [ "$rc" != 0 ] || [ "$n" -ne 0 ]; then
  bad "planted none (--backend cpu): campaign exit $rc, $n bucket(s): $(tail -2 "$tmp/none.log" | tr '\n' ' ')"
else
  say "planted none (--backend cpu, the same $TIME s campaign): 0 findings; $cases"
fi

[ $fail -eq 0 ] && say ok
exit $fail
