# lib_probe_cli.sh — sourced by the probe CLI tests (test_probe_capacity_cli.sh,
# test_probe_history_cli.sh) after they set bin: one seed case run through `attnfuzz run
# --json`, its exit code and a Python assertion over the verdict checked. The assertion
# sees d (the verdict), per (judge.seconds.per_probe) and f (the findings).
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
# finish NAME: the summary line and the exit status
finish() {
  [ "$fail" -eq 0 ] && echo "$1: all passed" || echo "$1: $fail failed"
  exit $((fail > 0))
}
