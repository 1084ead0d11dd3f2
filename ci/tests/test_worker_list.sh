#!/usr/bin/env bash
# test_worker_list.sh ATTNFUZZ — `attnfuzz backends --worker-configs DIR` lists worker:NAME
# per config file (docs/targets.md): the pure-Python reference worker is available with its
# python version, a worker whose module does not exist is unavailable naming the module, one
# that never says hello is unavailable after its start_timeout, a malformed config is a
# `broken` line naming FILE:LINE (exit 2) while the others still print; $ATTNFUZZ_PYTHON
# replaces a config's python3, $ATTNFUZZ_WORKER_CONFIGS stands in for the option, and the
# shipped python/targets/refpy.conf runs a case; the Python lister reads the same configs. Needs python3 (reference_py importable).
set -u
AF=${1:?usage: test_worker_list.sh path/to/attnfuzz}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
unset ATTNFUZZ_PYTHON ATTNFUZZ_WORKER_CONFIGS
PY=$(command -v python3) || { echo "SKIP test_worker_list: no python3"; exit 77; }
if ! why=$(python3 -c 'import attnfuzz_worker.examples.reference_py' 2>&1); then
    echo "SKIP test_worker_list: attnfuzz_worker.examples.reference_py does not import with python3: $(echo "$why" | tail -n 1)"
    exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { # check NAME FILE REGEX: FILE must match REGEX
    if grep -Eq -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: no /$3/ in:"; cat "$2"; fail=1; fi
}
check_rc() { # check_rc NAME GOT WANT
    if [ "$2" -eq "$3" ]; then echo "ok   $1 (rc $2)"; else echo "FAIL $1: rc $2, want $3"; fail=1; fi
}

D=$T/configs
mkdir -p "$D"
cp "$ROOT/python/targets/refpy.conf" "$D/refpy.conf"
printf 'command = python3 -m attnfuzz_worker.examples.no_such_target\nstart_timeout = 30\n' >"$D/missing.conf"
printf '# a config without its equals sign\nname = bad\ncommand python3 -m x\n' >"$D/bad.conf"
printf 'command = sleep 30\nstart_timeout = 1\n' >"$D/silent.conf"
echo "not a config" >"$D/README" # not *.conf: not listed

# 1. the listing: built-ins, then one line per config in file-name order
timeout 120 "$AF" backends --worker-configs "$D" >"$T/list.out" 2>"$T/list.err"
rc=$?
cat "$T/list.out"
check_rc "a broken config: exit 2 after the whole listing" $rc 2
check "built-in cpu still listed" "$T/list.out" "^cpu +available"
check "refpy available with its python version and device" "$T/list.out" \
    "^worker:refpy +available +device cpu; python 3\.[0-9]+\.[0-9]+.*refpy\.conf:[0-9]+ \(python3 -m attnfuzz_worker\.examples\.reference_py\)"
check "missing module: unavailable, naming the module" "$T/list.out" \
    "^worker:missing +unavailable .*missing\.conf:1 .*exited with status 1.*its stderr: .*No module named attnfuzz_worker\.examples\.no_such_target"
check "malformed config: broken, FILE:LINE" "$T/list.out" "^worker:bad +broken +$D/bad\.conf:3: expected 'key = value'"
check "silent worker: unavailable after its start_timeout" "$T/list.out" \
    "^worker:silent +unavailable .*did not say hello within 1 s"
check "stderr names the broken count" "$T/list.err" "1 worker config broken"
order=$(grep -Eo '^worker:[a-z]+' "$T/list.out" | tr '\n' ' ')
if [ "$order" = "worker:bad worker:missing worker:refpy worker:silent " ]; then
    echo "ok   file-name order, README skipped"
else
    echo "FAIL order: '$order'"
    fail=1
fi

# 2. without the broken one: exit 0; the environment variable stands in for the option
rm "$D/bad.conf" "$D/silent.conf"
ATTNFUZZ_WORKER_CONFIGS="$T/nowhere:$D" timeout 120 "$AF" backends >"$T/env.out" 2>"$T/env.err"
rc=$?
check_rc "ATTNFUZZ_WORKER_CONFIGS with an unreadable entry: exit 2" $rc 2
check "ATTNFUZZ_WORKER_CONFIGS: refpy listed" "$T/env.out" "^worker:refpy +available"
check "ATTNFUZZ_WORKER_CONFIGS: a missing directory named" "$T/env.out" "broken +$T/nowhere: cannot read worker configs"
timeout 120 "$AF" backends --worker-configs "$D" >"$T/ok.out" 2>&1
check_rc "no broken config: exit 0" $? 0

# 3. $ATTNFUZZ_PYTHON replaces the config's python3 (execv, no shell)
ATTNFUZZ_PYTHON=/nonexistent/python3 timeout 60 "$AF" backends --worker-configs "$D/refpy.conf" >"$T/py.out" 2>&1
check "ATTNFUZZ_PYTHON used: a wrong one makes refpy unavailable" "$T/py.out" \
    "^worker:refpy +unavailable .*/nonexistent/python3 -m .*worker program '/nonexistent/python3' is not executable"
ATTNFUZZ_PYTHON="$PY" timeout 60 "$AF" backends --worker-configs "$D/refpy.conf" >"$T/py2.out" 2>&1
check "ATTNFUZZ_PYTHON=$PY: refpy available" "$T/py2.out" "^worker:refpy +available .*\($PY -m attnfuzz_worker"

# 4. the shipped config runs a case (run and engines take it as --worker-config)
printf 'dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen = 8\nhead_dim = 8\nmask = causal\nseed = 3\n' >"$T/a.case"
ATTNFUZZ_PYTHON=/nonexistent/python3 timeout 120 "$AF" run "$T/a.case" --backend worker:refpy \
    --worker-config "$ROOT/python/targets/refpy.conf" >"$T/runbad.out" 2>&1
check "run --worker-config honours ATTNFUZZ_PYTHON" "$T/runbad.out" "/nonexistent/python3"
timeout 120 "$AF" run "$T/a.case" --backend worker:refpy --worker-config "$ROOT/python/targets/refpy.conf" \
    >"$T/run.out" 2>&1
rc=$?
check "the shipped refpy.conf passes a case" "$T/run.out" "a.case \[worker:refpy\]: pass"
check_rc "run with refpy.conf" $rc 0
timeout 60 "$AF" engines "$T/a.case" --backend worker:refpy --worker-config "$ROOT/python/targets/refpy.conf" \
    >"$T/eng.out" 2>&1
check "engines with refpy.conf: one default engine" "$T/eng.out" "^worker:refpy: one engine \(default\)"

# 5. the Python lister reads the same config files: one line per python/targets/*.conf
python3 -m attnfuzz_worker.examples.targets >"$T/lister.out" 2>&1
check "targets.py: refpy can start, from its config" "$T/lister.out" \
    "^refpy +can start +python3 -m attnfuzz_worker\.examples\.reference_py .*refpy\.conf"
for conf in "$ROOT"/python/targets/*.conf; do
    name=$(sed -n 's/^name *= *//p' "$conf")
    check "targets.py lists $name" "$T/lister.out" "^$name +(can start|cannot start)"
done

[ $fail -eq 0 ] && echo "test_worker_list: ok" || echo "test_worker_list: FAILED"
exit $fail
