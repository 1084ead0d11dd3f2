#!/usr/bin/env bash
# test_probe_capacity_cli.sh ATTNFUZZ — the capacity probe from the command line: on a
# seed whose allocation is tight, planted:pad_to_tile (keys up to the 64-key tile read
# unmasked, cut at the allocation) is a `leak` whose detail says "capacity", and the
# probe's time is judge.seconds.per_probe.capacity in the JSON; with --no-probes the same
# run passes (exit 0) and no probe time is reported; the cpu backend passes with the probe.
set -u
bin=${1:?usage: test_probe_capacity_cli.sh path/to/attnfuzz}
seed=corpora/seed/fp16-nomask-b1h1s16d64.case
[ -f "$seed" ] || { echo "FAIL no $seed (run from the repository root)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # check NAME EXPECTED_RC PYTHON_ASSERTION -- ARGS...
  local name=$1 want=$2 cond=$3
  shift 4
  "$bin" run "$seed" "$@" --json > "$tmp/$name.json" 2> "$tmp/$name.err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $name: exit $rc, expected $want"; head -c 600 "$tmp/$name.json"; tail -3 "$tmp/$name.err"
    fail=$((fail + 1)); return
  fi
  if ! python3 -c "
import json, sys
d = json.loads(open(sys.argv[1]).readline())
per = d['judge']['seconds'].get('per_probe') or {}
f = d.get('findings') or []
sys.exit(0 if ($cond) else 1)" "$tmp/$name.json"; then
    echo "FAIL $name: not ($cond)"; head -c 800 "$tmp/$name.json"; echo
    fail=$((fail + 1)); return
  fi
  echo "ok   $name"
}
check bug 1 "d['verdict'] == 'leak' and 'capacity' in f[0]['detail'] and per.get('capacity', 0) > 0" \
  -- --backend planted:pad_to_tile
check bug_no_probes 0 "d['verdict'] == 'pass' and 'capacity' not in per" -- --backend planted:pad_to_tile --no-probes
check cpu 0 "d['verdict'] == 'pass' and per.get('capacity', 0) > 0" -- --backend cpu
[ "$fail" -eq 0 ] && echo "test_probe_capacity_cli: all passed" || echo "test_probe_capacity_cli: $fail failed"
exit $((fail > 0))
