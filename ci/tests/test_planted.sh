#!/usr/bin/env bash
# test_planted.sh ATTNFUZZ — attnfuzz's self-test: every planted-bug plugin
# (harness/plugins/planted, one deliberate bug each, found on the plugin path as
# planted:<bug>) must be caught on the seed corpus, with the verdict kind its bug
# deserves:
#
#   planted:<bug>                 expected kind     found by
#   fp8_v_block_scale             leak              visibility probe (future V in the same
#                                                   32-token scale block)
#   window_off_by_one             mismatch          comparison (window cases)
#   masked_row_nan                nan_inf           buffer checks (fully masked rows)
#   ragged_offsets_ignored        mismatch|nan_inf  comparison; nan_inf when the misread
#                                                   lands in poisoned thd gaps
#   gqa_head_mod                  mismatch          comparison (GQA cases)
#   contiguous_strides            mismatch|nan_inf  comparison; nan_inf when the misread
#                                                   lands in poisoned stride gaps
#   window_dropped                mismatch          comparison (window cases)
#   scale_ignored                 feature_ignored   feature probe (scale toggled), and
#                                                   mismatch on cases with a custom scale
#   nondeterministic_reduction    nondeterministic  determinism probe
#   writes_k                      input_mutation    the input-mutation check (K written
#                                                   in place after a correct run)
#   pad_to_tile                   leak              capacity probe (keys up to the 64-tile
#                                                   read unmasked once the allocation
#                                                   is larger); mismatch on padded seeds
#   kernel_cache_scale            feature_ignored|  feature probe (scale toggled on the same
#                                 nondeterministic  instance) and the history probe (the scale-
#                                                   doubled case replays the judged one's kernel)
#   page_index_128                mismatch          comparison, on its trigger case (no seed
#                                                   has pages >= 256 with keys past 128)
#   split_kv_stride               mismatch          comparison, on its trigger case (no seed
#                                                   has s_kv > 1024 with heads_q > 1)
#   ignores_chunk                 mismatch          comparison, on the attention_chunk seed
#                                                   (corpora/seed-features; no plain seed has one)
#   finite_max_init               nan_inf|mismatch  buffer checks / comparison, on its trigger
#                                                   case (every logit of a row below -5e4: no
#                                                   seed shifts logits that far)
#   ignores_documents             mismatch          comparison, on the documents seed
#   ignores_global                mismatch          comparison, on the global_keys seed
#   v_head_kv                     mismatch          comparison, on the heads_v seed (V read at
#                                                   K's head; no plain seed has heads_v)
#   block_mask_transposed         convention|       convention probe (rows the transpose
#                                 mismatch          leaves keys: O != 0) / comparison, on the
#                                                   block_mask seed
#   max_logit_masked              mismatch          comparison of max / max_logit, on the two
#                                                   outputs seeds (test_outputs.sh: a campaign)
#   paged_ragged_offset           mismatch          comparison, on the thd + paged seeds (the
#                                                   page table read at the query's packed
#                                                   token); and a short campaign from them finds
#                                                   it, each minimised finding still thd + paged
#   kv_scale_swap                 mismatch          comparison, on the kv_dtype seed (V read with
#                                                   K's descale; its K's outlier channels put the
#                                                   two descales in different binades)
#   page_form_assumed             mismatch          comparison, on the page_layout = hnd / page_kv =
#                                                   joint seeds (a 3 s campaign from them finds it)
#   layout_assumed                mismatch          comparison, on the kv_h / qkv_h / layout_do
#                                                   seeds (blocked packings pass); and a short
#                                                   campaign from them finds it, each minimised
#                                                   finding still per-head packed or with layout_do
#   axis_gaps_ignored             nan_inf|mismatch  the poisoned gaps read (or a neighbour's
#                                                   values), on the two gap seeds; and a 3 s
#                                                   campaign from them, each minimised finding
#                                                   still with a gap_h / gap_s / gap_b
#   score_mod_unscaled            mismatch          comparison, on the forward score_mod seed
#                                                   (f(q.k) scale for f(scale q.k)); and a 3 s
#                                                   campaign from the score_mod seeds, each
#                                                   minimised finding still with its score_mod
#
# For each: `attnfuzz run corpora/seed/*.case --backend planted:<bug> --json` exits 1
# (a finding), some verdict has the expected kind, and none says that the plugin
# misbehaved beyond its bug (crash, hang, out_of_bounds, unwritten, resource). The
# control planted:none (the same code without a bug) has no finding at all.
set -u
bin=${1:?usage: test_planted.sh path/to/attnfuzz}
fail=0
shopt -s nullglob
seeds=(corpora/seed/*.case)
if [ ${#seeds[@]} -eq 0 ]; then
  echo "FAIL no seed corpus in corpora/seed (run from the repository root)"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# verdict kinds of a --json run, one per line
kinds() { grep -o '"verdict":"[a-z_]*"' "$1" | sed 's/"verdict":"\(.*\)"/\1/'; }

expect() { # expect BUG KIND[|KIND...] [CASE...]   (the seed corpus when no case is named)
  local bug=$1 want=$2 out="$tmp/$1.json"
  shift 2
  local cases=("$@")
  [ ${#cases[@]} -gt 0 ] || cases=("${seeds[@]}")
  "$bin" run "${cases[@]}" --backend "planted:$bug" --json > "$out" 2> "$tmp/$bug.err"
  local rc=$?
  local seen
  seen=$(kinds "$out" | sort | uniq -c | tr -s ' ' | tr '\n' ',')
  if [ "$rc" != 1 ]; then
    echo "FAIL planted:$bug: exit $rc, expected 1 (a finding); verdicts:$seen"
    tail -3 "$tmp/$bug.err"
    fail=$((fail + 1))
    return
  fi
  if ! kinds "$out" | grep -qxE "$want"; then
    echo "FAIL planted:$bug: no verdict of kind $want; verdicts:$seen"
    fail=$((fail + 1))
    return
  fi
  local bad
  bad=$(kinds "$out" | grep -xE 'crash|hang|out_of_bounds|unwritten|resource' | sort -u | tr '\n' ' ')
  if [ -n "$bad" ]; then
    echo "FAIL planted:$bug: misbehaves beyond its bug: $bad"
    grep -E '"verdict":"(crash|hang|out_of_bounds|unwritten|resource)"' "$out" | head -2 | cut -c1-300
    fail=$((fail + 1))
    return
  fi
  echo "ok   planted:$bug caught as $want ($seen)"
  # ... and minimised: the first seed caught with the expected kind shrinks to a smaller
  # case that still fails (repro exits 1) with the same finding identity
  local seed
  seed=$(python3 -c '
import json, re, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if re.fullmatch(sys.argv[2], d["verdict"]):
        print(d["case"]); break' "$out" "$want")
  if [ -z "$seed" ]; then echo "FAIL planted:$bug: no seed to minimise"; fail=$((fail + 1)); return; fi
  if ! "$bin" minimize "$seed" -o "$tmp/$bug.min.case" --backend "planted:$bug" --max-runs 80 --quiet > "$tmp/$bug.min" 2>&1; then
    echo "FAIL planted:$bug: minimize $seed failed"; tail -3 "$tmp/$bug.min"; fail=$((fail + 1)); return
  fi
  local before after
  before=$(sed -n 's/^before:.*cost \([0-9.e+]*\).*/\1/p' "$tmp/$bug.min")
  after=$(sed -n 's/^after:.*cost \([0-9.e+]*\).*/\1/p' "$tmp/$bug.min")
  "$bin" repro "$tmp/$bug.min.case" > "$tmp/$bug.repro" 2>&1
  local rrc=$?
  if [ "$rrc" != 1 ] || ! python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) < float(sys.argv[1]) else 1)" "$before" "$after"; then
    echo "FAIL planted:$bug: minimised case (cost $before -> $after) repro exit $rrc"; head -3 "$tmp/$bug.repro"
    fail=$((fail + 1)); return
  fi
  echo "ok   planted:$bug minimised $(basename "$seed"): cost $before -> $after, still fails"
}

# The backends must be there: built into plugins/ beside the binary.
if ! "$bin" backends 2>/dev/null | grep -q '^planted:window_off_by_one '; then
  echo "FAIL 'attnfuzz backends' does not list the planted plugins (build/plugins missing?)"
  exit 1
fi

# The control: no finding (fp8 / mxfp8 seeds are declined: exit 3 or 0).
"$bin" run "${seeds[@]}" --backend planted:none --json > "$tmp/none.json" 2> "$tmp/none.err"
rc=$?
others=$(kinds "$tmp/none.json" | grep -vxE 'pass|declined' | sort | uniq -c | tr '\n' ',')
if { [ "$rc" != 0 ] && [ "$rc" != 3 ]; } || [ -n "$others" ]; then
  echo "FAIL planted:none (no bug) is not clean: exit $rc; $others"
  grep -vE '"verdict":"(pass|declined)"' "$tmp/none.json" | head -3 | cut -c1-300
  fail=$((fail + 1))
else
  echo "ok   planted:none passes every seed it serves"
fi

# the control on the regression cases of the planted plugins' own mistakes
if "$bin" run corpora/regression/planted-*.case --backend planted:none > "$tmp/none-reg.txt" 2>&1; then
  echo "ok   planted:none passes corpora/regression/planted-*.case"
else
  echo "FAIL planted:none fails a regression case:"; grep FINDING "$tmp/none-reg.txt" | head -3; fail=$((fail + 1))
fi

expect fp8_v_block_scale leak
expect window_off_by_one mismatch
expect masked_row_nan nan_inf
expect ragged_offsets_ignored 'mismatch|nan_inf'
expect gqa_head_mod mismatch
expect contiguous_strides 'mismatch|nan_inf'
expect window_dropped mismatch
expect scale_ignored feature_ignored
expect nondeterministic_reduction nondeterministic
expect writes_k input_mutation
expect pad_to_tile leak
expect kernel_cache_scale 'feature_ignored|nondeterministic'
# the narrow shapes: their trigger cases, and the seed corpus passes (no seed reaches them)
expect page_index_128 mismatch ci/tests/cases/planted-page-index-128.case
expect split_kv_stride mismatch ci/tests/cases/planted-split-kv-stride.case
expect ignores_chunk mismatch corpora/seed-features/fp16-chunk8-causal-bwd.case
expect finite_max_init 'nan_inf|mismatch' ci/tests/cases/planted-finite-max-init.case
expect ignores_documents mismatch corpora/seed-features/fp16-documents-causal-bwd.case
expect ignores_global mismatch corpora/seed-features/fp16-global-window-bwd.case
expect v_head_kv mismatch corpora/seed-features/fp16-heads-v-bwd.case
expect block_mask_transposed 'convention|mismatch' corpora/seed-features/fp16-block-mask-causal-bwd.case
expect max_logit_masked mismatch corpora/seed/outputs-max-logit-bf16.case corpora/seed/outputs-max-sumexp-fp16.case
expect kv_scale_swap mismatch corpora/seed/fp16-kv-fp8-e4m3.case
thd_paged=(corpora/seed/*thd-paged*.case)
expect paged_ragged_offset mismatch "${thd_paged[@]}"
# ... and a short campaign from those seeds finds it; minimisation keeps thd and the pages
. "$(dirname "$0")/lib_feature_campaign.sh"
TIME=${ATTNFUZZ_TEST_PLANTED_CAMPAIGN_TIME:-10}
all_seeds=("${seeds[@]}")
seeds=("${thd_paged[@]}")
feature_campaign paged_ragged_offset '^page_size = [1-9]'
for d in "$tmp"/paged_ragged_offset/findings/*; do
  grep -q '^layout = thd' "$d/finding.case" ||
    { echo "FAIL planted:paged_ragged_offset: $(basename "$d") lost layout = thd"; fail=$((fail + 1)); }
done
layout_seeds=(corpora/seed/*kv-h*.case corpora/seed/*do-bhsd*.case)
seeds=("${all_seeds[@]}")
expect layout_assumed mismatch
seeds=("${layout_seeds[@]}")
TIME=${ATTNFUZZ_TEST_PLANTED_CAMPAIGN_TIME:-5}
feature_campaign layout_assumed '^(packing = (kv|qkv)_h|layout_do = )'
# page forms: HND pages and joint K/V pages found from their seeds by a 3 s campaign, the
# minimised findings keep the form; the NHD split seeds pass (below: every seed)
form_seeds=(corpora/seed/*paged-hnd*.case corpora/seed/*paged-joint*.case)
expect page_form_assumed mismatch "${form_seeds[@]}"
seeds=("${form_seeds[@]}")
TIME=${ATTNFUZZ_TEST_PLANTED_CAMPAIGN_TIME:-3}
feature_campaign page_form_assumed '^page_(layout = hnd|kv = joint)'
# axis gaps: the two gap seeds (no other seed has gap_h / gap_s / gap_b: all pass), then
# 3 s of campaign from them; every minimised finding keeps a gap
gap_seeds=(corpora/seed/*-gaps-*.case)
expect axis_gaps_ignored 'nan_inf|mismatch' "${gap_seeds[@]}"
seeds=("${gap_seeds[@]}")
TIME=${ATTNFUZZ_TEST_PLANTED_CAMPAIGN_TIME:-3}
feature_campaign axis_gaps_ignored '^gap_(h|s|b) = [1-9]'
# score_mod: the forward seed (the two backward ones are declined: the planted plugins serve
# features in the forward), then 3 s of campaign from the three; every minimised finding keeps
# its score_mod
mod_seeds=(corpora/seed-features/*score-mod*.case)
expect score_mod_unscaled mismatch "${mod_seeds[@]}"
seeds=("${mod_seeds[@]}")
TIME=${ATTNFUZZ_TEST_PLANTED_CAMPAIGN_TIME:-3}
feature_campaign score_mod_unscaled '^score_mod = (squared|trig|trig2)'
seeds=("${all_seeds[@]}")
nhd_split=($(grep -l '^page_size' "${seeds[@]}" | xargs grep -LE '^page_(layout|kv) = '))
"$bin" run "${nhd_split[@]}" --backend planted:page_form_assumed > "$tmp/form-nhd.txt" 2>&1 &&
  echo "ok   planted:page_form_assumed passes the ${#nhd_split[@]} nhd / split paged seeds" ||
  { echo "FAIL planted:page_form_assumed fails an nhd / split paged seed"; grep FINDING "$tmp/form-nhd.txt" | head -3; fail=$((fail + 1)); }
for bug in page_index_128 split_kv_stride finite_max_init; do
  "$bin" run "${seeds[@]}" --backend "planted:$bug" --json > "$tmp/$bug.seeds.json" 2> /dev/null
  others=$(kinds "$tmp/$bug.seeds.json" | grep -vxE 'pass|declined' | sort | uniq -c | tr '\n' ',')
  if [ -n "$others" ]; then
    echo "FAIL planted:$bug fails a seed outside its narrow trigger: $others"; fail=$((fail + 1))
  else
    echo "ok   planted:$bug passes every seed (its trigger is narrower)"
  fi
done

# A plugin by path, the way users name their own (the example is correct).
# It serves forward fp16/bf16 only: give it the seeds of that kind.
fwd=($(grep -L '^backward = yes' "${seeds[@]}" | xargs grep -lE '^dtype = (fp16|bf16)' | head -4))
"$bin" run "${fwd[@]}" --backend plugin:"$(dirname "$bin")/plugins/example_plugin.so" > "$tmp/ex.txt" 2>&1
rc=$?
if [ "$rc" != 0 ]; then
  echo "FAIL example plugin by path: exit $rc"; cat "$tmp/ex.txt"; fail=$((fail + 1))
else
  echo "ok   plugin:PATH runs the example plugin (${#fwd[@]} forward seeds pass)"
fi

[ "$fail" -eq 0 ] && echo "test_planted: all passed" || echo "test_planted: $fail failed"
exit $((fail > 0))
