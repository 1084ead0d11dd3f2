#!/usr/bin/env bash
# test_input_mutation.sh ATTNFUZZ — the input-mutation check (judge/mutation.h) end to end:
#   1. planted:writes_k (every output correct, then K smoothed in place like SageAttention
#      1.0.6's `k -= km`) on a few seeds (padded, paged GQA, thd, backward): exit 1, each
#      verdict is input_mutation naming K with its first changed element, and no other kind;
#   2. the correct planted:none and flash_ref on the same seeds: no input_mutation;
#   3. the finding minimises (same identity, smaller cost) and the minimised case
#      reproduces (repro exits 1, input_mutation K);
#   4. a short campaign buckets it (signature input_mutation|planted:writes_k|K|...), and
#      the triage report lists the kind (report.json, SARIF rule).
set -u
bin=${1:?usage: test_input_mutation.sh path/to/attnfuzz}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
seeds=(corpora/seed/fp16-padding.case corpora/seed/bf16-paged-kv-gqa.case corpora/seed/bf16-thd-cross-lengths.case
       corpora/seed/bf16-nomask-fwd-bwd.case)
for s in "${seeds[@]}"; do [ -f "$s" ] || { echo "FAIL no seed $s (run from the repository root)"; exit 1; }; done
if ! "$bin" backends 2>/dev/null | grep -q '^planted:writes_k '; then
  echo "FAIL planted:writes_k is not on the plugin path"; exit 1
fi

# 1. found, naming K, and nothing else
"$bin" run "${seeds[@]}" --backend planted:writes_k --json > "$tmp/wk.json" 2> "$tmp/wk.err"
rc=$?
python3 - "$tmp/wk.json" "$rc" "${#seeds[@]}" <<'EOF' || bad "planted:writes_k: $(head -c 600 "$tmp/wk.json")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert sys.argv[2] == "1", "exit %s, expected 1 (a finding)" % sys.argv[2]
assert len(rows) == int(sys.argv[3]), rows
for r in rows:
    assert r["verdict"] == "input_mutation", (r["case"], r["verdict"])
    kinds = {f["kind"] for f in r["findings"]}
    assert kinds == {"input_mutation"}, (r["case"], kinds)
    f = r["findings"][0]
    assert f["tensor"] == "K" and f["b"] >= 0 and f["row"] >= 0 and f["col"] >= 0, f
    assert "the run wrote its input K: element" in f["detail"], f["detail"]
    assert f["error"] > 0, f  # |new - old| of that element
print("ok   planted:writes_k: %d seeds, each input_mutation K (%s)" % (len(rows), rows[0]["findings"][0]["detail"]))
EOF

# 2. the correct kernels: no input_mutation
for be in planted:none flash_ref; do
  "$bin" run "${seeds[@]}" --backend "$be" --json > "$tmp/ok.json" 2>/dev/null
  rc=$?
  if grep -q 'input_mutation' "$tmp/ok.json" || [ "$rc" != 0 ]; then
    bad "$be: exit $rc or an input_mutation: $(grep -v '"verdict":"pass"' "$tmp/ok.json" | head -c 400)"
  else
    echo "ok   $be: no input_mutation on ${#seeds[@]} seeds"
  fi
done

# 3. minimised and reproduced
if "$bin" minimize corpora/seed/bf16-paged-kv-gqa.case -o "$tmp/min.case" --backend planted:writes_k --max-runs 60 \
    --quiet > "$tmp/min.out" 2>&1; then
  before=$(sed -n 's/^before:.*cost \([0-9.e+]*\).*/\1/p' "$tmp/min.out")
  after=$(sed -n 's/^after:.*cost \([0-9.e+]*\).*/\1/p' "$tmp/min.out")
  "$bin" repro "$tmp/min.case" > "$tmp/repro.out" 2>&1
  rc=$?
  if [ "$rc" = 1 ] && grep -q 'FINDING input_mutation K' "$tmp/repro.out" &&
     python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) < float(sys.argv[1]) else 1)" "$before" "$after"; then
    echo "ok   minimised (cost $before -> $after) and reproduced: $(head -c 160 "$tmp/repro.out")"
  else
    bad "minimise/repro: cost $before -> $after, repro exit $rc: $(head -c 300 "$tmp/repro.out")"
  fi
else
  bad "minimize failed: $(tail -3 "$tmp/min.out")"
fi

# 4. a campaign buckets it; triage shows the kind
"$bin" campaign --time 3 --jobs 1 --seed 5 --backend planted:writes_k --out "$tmp/camp" corpora/seed/fp16-padding.case \
  > "$tmp/camp.log" 2>&1
rc=$?
sigs=$(cat "$tmp"/camp/findings/*/signature 2>/dev/null; grep -ho '"signature": *"[^"]*"' "$tmp"/camp/findings/*/verdict.json 2>/dev/null)
if [ "$rc" = 1 ] && echo "$sigs" | grep -q 'input_mutation|planted:writes_k|K|'; then
  echo "ok   campaign: bucket $(echo "$sigs" | grep -o 'input_mutation|planted:writes_k|K|[^"]*' | head -1)"
else
  bad "campaign: exit $rc, signatures: $sigs"; tail -3 "$tmp/camp.log"
fi
"$bin" triage "$tmp/camp" > /dev/null 2>&1
if grep -q '"kind": *"input_mutation"' "$tmp/camp/report.json" && grep -q '"id":"input_mutation"' "$tmp/camp/report.sarif"; then
  echo "ok   triage: report.json and SARIF name the kind input_mutation"
else
  bad "triage: report.json / report.sarif lack input_mutation"
fi

[ "$fail" -eq 0 ] && echo "test_input_mutation: all passed" || echo "test_input_mutation: $fail failed"
exit $((fail > 0))
