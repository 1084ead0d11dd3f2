#!/usr/bin/env bash
# test_repeats_cli.sh ATTNFUZZ — `--repeats N` of `attnfuzz run` (judge/runner.h):
#   - out of range (0, 17, 2x) is a usage error: exit 2, one line naming --repeats;
#   - probe_bug:racy (nondeterministic: a third of its runs move 0.2 % of O) judged with
#     --repeats 8 and no probes is a mismatch of O, and some finding names the run
#     ("run K of the unperturbed case") whenever a run after the first strikes: over 8
#     runs of a fresh process (calls 0..7 of the plugin; 0, 1, 2 and 7 strike) it does;
#   - a deterministic backend (flash_ref) passes whatever --repeats says.
set -u
bin=${1:?usage: test_repeats_cli.sh path/to/attnfuzz}
plugins=$(dirname "$bin")/plugins
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/race.case" <<'CASE'
dtype = fp16
batch = 2
heads = 2
seqlen = 48
head_dim = 32
mask = causal
CASE

for bad in 0 17 2x; do
  out=$("$bin" run "$tmp/race.case" --backend cpu --repeats "$bad" 2>&1)
  rc=$?
  if [ $rc -ne 2 ] || ! grep -q -- '--repeats' <<<"$out"; then
    echo "FAIL --repeats $bad: exit $rc, '$out' (want exit 2 naming --repeats)"
    fail=1
  fi
done

out=$("$bin" run "$tmp/race.case" --backend "plugin:$plugins/probe_bug_racy.so" --repeats 8 --no-probes --json 2>&1)
rc=$?
if [ $rc -ne 1 ] || ! grep -q '"verdict":"mismatch"' <<<"$out" ||
  ! grep -q 'run [1-7] of the unperturbed case' <<<"$out"; then
  echo "FAIL probe_bug:racy --repeats 8: exit $rc, want a mismatch naming a repeat: $out"
  fail=1
fi

out=$("$bin" run "$tmp/race.case" --backend "plugin:$plugins/flash_ref.so" --repeats 16 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
  echo "FAIL flash_ref --repeats 16: exit $rc: $out"
  fail=1
fi
[ $fail -eq 0 ] && echo "test_repeats_cli: ok"
exit $fail
