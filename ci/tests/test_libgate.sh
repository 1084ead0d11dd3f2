#!/usr/bin/env bash
# test_libgate.sh ATTNFUZZ — the library-upgrade gate (issue 15 item 6), CPU part: two
# builds of a plugin stand in for two library versions; the compare runs for real:
#   flash_ref.so against flash_bug_row_scale.so: changes found (exit 1), libgate.json
#     lists cases whose verdict went from pass to a finding;
#   flash_ref.so against itself: nothing changes (exit 0);
#   --backend cudnn on a machine without a usable cuDNN: declined with its reason (exit 3);
#   a missing library file: exit 4 naming it.
set -u
BIN=${1:-build/attnfuzz}
P=$(dirname "$BIN")/plugins
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$BIN" gate --base-lib "$P/flash_ref.so" --head-lib "$P/flash_bug_row_scale.so" --backend plugin --time 3 \
  --out "$T/bug" > "$T/bug.txt" 2> "$T/bug.err"; rc=$?
[ $rc -eq 1 ] && grep -q '^library gate CHANGED: .* examined [1-9][0-9]* cases, [1-9][0-9]* changed' "$T/bug.txt" \
  || fail "bug build: exit $rc: $(cat "$T/bug.txt" "$T/bug.err")"
python3 - "$T/bug/libgate.json" <<'PY' || fail "libgate.json: $(head -c 600 "$T/bug/libgate.json")"
import json, sys
g = json.load(open(sys.argv[1]))
assert g['changed'] == len(g['changes']) > 0 and g['examined'] >= g['changed'], g
assert g['base_backend'].startswith('plugin:') and g['base_backend'].endswith('flash_ref.so'), g['base_backend']
assert any(c['base'].get('(default)') == 'pass' and c['head'].get('(default)') not in ('pass', None)
           for c in g['changes']), 'no pass -> finding change'
PY

"$BIN" gate --base-lib "$P/flash_ref.so" --head-lib "$P/flash_ref.so" --backend plugin --time 2 \
  --out "$T/same" > "$T/same.txt" 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q '^library gate same: .* 0 changed' "$T/same.txt" || fail "same build: exit $rc: $(cat "$T/same.txt")"

mkdir -p "$T/lib914"
: > "$T/lib914/libcudnn.so.9"   # not a real cuDNN: the backend must decline, never pass
err=$("$BIN" gate --base-lib "$T/lib914/libcudnn.so.9" --head-lib "$T/lib914/libcudnn.so.9" --backend cudnn \
  --time 2 --out "$T/cudnn" 2>&1); rc=$?
[ $rc -eq 3 ] && echo "$err" | grep -q '^attnfuzz gate: cudnn is not usable with --base-lib .*libcudnn.so.9: ' \
  || fail "cudnn here: exit $rc: $err"

err=$("$BIN" gate --base-lib "$T/nope.so" --head-lib "$P/flash_ref.so" --backend plugin --out "$T/x" 2>&1); rc=$?
[ $rc -eq 4 ] && echo "$err" | grep -q "base-lib: $T/nope.so" || fail "missing lib: exit $rc: $err"
echo "test_libgate: ok"
