#!/usr/bin/env bash
# test_pymap.sh ATTNFUZZ — the third-party worker targets on a machine without them: the pure
# mapping tests of python/tests/ (fa4 and cudnn-fe: a problem -> the library call's arguments,
# or a decline with its reason; the refusal rule; a missing package reported by the hello),
# then `attnfuzz backends --worker-configs python/targets` lists worker:fa4 and
# worker:cudnn-fe, each unavailable naming the module and pip package it lacks (where the
# packages are installed, the line must say available instead). Needs python3 only.
set -u
. "$(dirname "$0")/lib_pytargets.sh"

# 1. the mapping tests (nothing is skipped)
pt_unittests
check "no test skipped" "$T/unit.out" '^OK$'

# 2. the shipped configs: listed; unavailable naming the missing module and its pip package
timeout 120 "$AF" backends --worker-configs "$ROOT/python/targets" >"$T/list.out" 2>"$T/list.err"
for t in fa4:flash_attn.cute cudnn-fe:cudnn; do
    name=${t%%:*} module=${t#*:}
    if python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$module') is None)" 2>/dev/null &&
        python3 -c "import torch" 2>/dev/null; then
        check "worker:$name available (its packages are installed here)" "$T/list.out" "^worker:$name +available"
    else
        check "worker:$name unavailable, naming module and package" "$T/list.out" \
            "^worker:$name +unavailable .*python module '[A-Za-z0-9_.]+' not found \(pip package [a-z0-9-]+"
    fi
done
exit $fail
