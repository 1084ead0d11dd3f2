#!/usr/bin/env bash
# test_probe_history_cli.sh ATTNFUZZ — the history probe from the command line (the
# backend found through the registry: the CP wrapper over the plugin, its fresh instance
# made through both): planted:kernel_cache_scale (compiled kernels cached by shape, the
# first scale baked in) fails (the feature probe's scale toggle sees it first) with a
# `nondeterministic` finding whose detail names the scale,
# and the probe's time is judge.seconds.per_probe.history in the JSON; with --no-probes
# the same run passes; planted:none and flash_ref pass with the probe run.
set -u
bin=${1:?usage: test_probe_history_cli.sh path/to/attnfuzz}
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
h = [x for x in f if x['detail'].startswith('history: scale')]
sys.exit(0 if ($cond) else 1)" "$tmp/$name.json"; then
    echo "FAIL $name: not ($cond)"; head -c 800 "$tmp/$name.json"; echo
    fail=$((fail + 1)); return
  fi
  echo "ok   $name"
}
check bug 1 "d['verdict'] in ('feature_ignored', 'nondeterministic') and h and h[0]['kind'] == 'nondeterministic' and per.get('history', 0) > 0" \
  -- --backend planted:kernel_cache_scale
check bug_no_probes 0 "d['verdict'] == 'pass' and 'history' not in per" -- --backend planted:kernel_cache_scale --no-probes
check none 0 "d['verdict'] == 'pass' and per.get('history', 0) > 0" -- --backend planted:none
check flash_ref 0 "d['verdict'] == 'pass' and per.get('history', 0) > 0" -- --backend flash_ref
[ "$fail" -eq 0 ] && echo "test_probe_history_cli: all passed" || echo "test_probe_history_cli: $fail failed"
exit $((fail > 0))
