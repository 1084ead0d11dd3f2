#!/usr/bin/env bash
# test_layouts_minimize.sh ATTNFUZZ — the minimiser drops the per-head packing (to the
# blocked one, then separate), layout_kv and layout_do to same, and the head / token / batch
# gaps to 0, when a finding survives without them: planted:window_off_by_one's finding (a
# window bug) on a case that has all of them minimises to a case with none, still failing.
set -u
bin=${1:?usage: test_layouts_minimize.sh path/to/attnfuzz}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
cat > "$tmp/c.case" <<'CASE'
dtype = fp16
layout = sbhd
layout_kv = bshd
layout_do = bhsd
packing = kv_h
stride_gap = 2
gap_h = 3
gap_s = 1
gap_b = 5
batch = 2
heads = 2
seqlen = 24
head_dim = 16
window = 4,0
backward = yes
seed = 5
CASE
"$bin" run "$tmp/c.case" --backend planted:window_off_by_one --no-probes > "$tmp/run.txt" 2>&1
[ $? = 1 ] || { echo "FAIL the case does not fail on planted:window_off_by_one"; cat "$tmp/run.txt"; exit 1; }
"$bin" minimize "$tmp/c.case" -o "$tmp/min.case" --backend planted:window_off_by_one --max-runs 60 --quiet \
  > "$tmp/min.txt" 2>&1 || { echo "FAIL minimize failed"; tail -3 "$tmp/min.txt"; exit 1; }
for field in layout_kv layout_do 'packing = kv_h' 'packing = kv$' gap_h gap_s gap_b; do
  if grep -qE "^$field" "$tmp/min.case"; then
    echo "FAIL the minimised case keeps $field:"; grep -vE '^(#|$)' "$tmp/min.case" | tr '\n' ' '; echo
    fail=1
  fi
done
"$bin" repro "$tmp/min.case" > "$tmp/repro.txt" 2>&1
[ $? = 1 ] || { echo "FAIL the minimised case no longer fails"; head -3 "$tmp/repro.txt"; fail=1; }
[ $fail = 0 ] && echo "ok   minimised without kv_h, layout_kv, layout_do, gap_h, gap_s, gap_b: $(grep -E '^(packing|layout)' "$tmp/min.case" | tr '\n' ' ')"
exit $fail
