#!/usr/bin/env bash
# test_prepare_ahead_cli.sh ATTNFUZZ — the next case prepared on a thread of its own while the
# current one is judged (judge/prepare_ahead.h, ATTNFUZZ_PREPARE_AHEAD) changes no verdict:
#   - the same 16 seed cases with the cpu backend, ahead on (1) and off (0), in this process
#     (--in-process) and in persistent workers (the default isolation): ci/verdict_compare.py
#     finds them equal, and with it on every case but the first was prepared ahead;
#   - `run --jobs 2`: each slot's next case hinted to its worker: the same verdicts, every
#     case but each slot's first prepared ahead;
#   - the default (0) and gpu (only backends that run on a GPU) leave the cpu backend's
#     cases as they were (none prepared ahead);
#   - a campaign (the in-process engine, persistent workers) hints each job's next case to its worker: with it on,
#     stats.json's prepared_ahead counts most cases and a planted bug is still found; off,
#     prepared_ahead is 0.
# The thread itself and the hand-over are tested in test_prepare_ahead (C).
set -u
bin=${1:?usage: test_prepare_ahead_cli.sh path/to/attnfuzz}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
mapfile -t cases < <(ls corpora/seed/*.case | head -16)
n=${#cases[@]}
for mode in in-process pool; do
  flag=; [ $mode = in-process ] && flag=--in-process
  for m in 0 1; do
    ATTNFUZZ_PREPARE_AHEAD=$m "$bin" run "${cases[@]}" --backend cpu $flag --json > "$tmp/$mode-$m.jsonl" 2>/dev/null
  done
  check "$mode: $n verdicts each way" '[ "$(grep -c "^{" "$tmp/$mode-0.jsonl")" -eq $n ] && [ "$(grep -c "^{" "$tmp/$mode-1.jsonl")" -eq $n ]'
  python3 ci/verdict_compare.py "$tmp/$mode-0.jsonl" "$tmp/$mode-1.jsonl" > "$tmp/cmp.txt"; rc=$?
  check "$mode: ahead on and off give the same verdicts (exit $rc)" '[ $rc -eq 0 ]'
  [ $rc -eq 0 ] || head -5 "$tmp/cmp.txt"
  ahead=$(grep -c '"prepared_ahead":true' "$tmp/$mode-1.jsonl")
  check "$mode: $ahead of $n cases prepared ahead (all but the first)" '[ "$ahead" -eq $((n - 1)) ]'
  check "$mode: none prepared ahead with it off" '! grep -q prepared_ahead "$tmp/$mode-0.jsonl"'
done
for m in 0 1; do
  ATTNFUZZ_PREPARE_AHEAD=$m "$bin" run "${cases[@]}" --backend cpu --jobs 2 --json > "$tmp/jobs-$m.jsonl" 2>/dev/null
done
python3 ci/verdict_compare.py "$tmp/in-process-0.jsonl" "$tmp/jobs-1.jsonl" > "$tmp/cmp.txt"; rc=$?
check "run --jobs 2, ahead on: the verdicts of one job without it (exit $rc)" '[ $rc -eq 0 ]'
ahead=$(grep -c '"prepared_ahead":true' "$tmp/jobs-1.jsonl")
check "run --jobs 2: $ahead of $n cases prepared ahead (all but each slot's first)" '[ "$ahead" -eq $((n - 2)) ]'
check "run --jobs 2, ahead off: none prepared ahead" '! grep -q prepared_ahead "$tmp/jobs-0.jsonl"'
for m in default gpu; do
  if [ $m = default ]; then
    env -u ATTNFUZZ_PREPARE_AHEAD "$bin" run "${cases[@]:0:4}" --backend cpu --in-process --json > "$tmp/$m.jsonl" 2>/dev/null
  else
    ATTNFUZZ_PREPARE_AHEAD=gpu "$bin" run "${cases[@]:0:4}" --backend cpu --in-process --json > "$tmp/$m.jsonl" 2>/dev/null
  fi
  check "$m: the cpu backend's cases are not prepared ahead" '[ "$(grep -c "^{" "$tmp/$m.jsonl")" -eq 4 ] && ! grep -q prepared_ahead "$tmp/$m.jsonl"'
done
for m in 0 1; do
  ATTNFUZZ_PREPARE_AHEAD=$m "$bin" campaign --in-process --backend planted:window_off_by_one --jobs 2 --time 6 --seed 5 \
    --out "$tmp/camp$m" corpora/seed > "$tmp/camp$m.log" 2>&1
  read -r cases ahead findings < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["cases"], s["prepared_ahead"], s["findings"])' "$tmp/camp$m/stats.json" 2>/dev/null)
  if [ $m = 1 ]; then
    check "campaign, ahead on: ${ahead:-?} of ${cases:-?} cases prepared ahead (more than half)" '[ -n "$cases" ] && [ "$ahead" -gt 0 ] && [ $((2 * ahead)) -gt "$cases" ]'
  else
    check "campaign, ahead off: none prepared ahead (${cases:-?} cases)" '[ -n "$cases" ] && [ "$ahead" -eq 0 ]'
  fi
  check "campaign, ahead $m: the planted bug found (${findings:-?} findings)" '[ -n "$findings" ] && [ "$findings" -gt 0 ]'
done
[ $fail -eq 0 ] && echo "test_prepare_ahead_cli: all checks passed"
exit $fail
