# lib_pytargets.sh — sourced by tests that run Python workers (test_pymap, test_serving_targets,
# test_worker, test_worker_given, test_worker_gpu_budget, test_worker_recipes,
# test_worker_score_features; not a test): their shared start. Sourced with the
# test's own arguments ($1: the attnfuzz binary); sets AF, ROOT, PYTHONPATH (python/ in
# front), T (a temporary folder removed at exit) and
# fail=0; clears ATTNFUZZ_PYTHON and ATTNFUZZ_WORKER_CONFIGS; without python3 the test is
# skipped (exit 77) saying so. check NAME FILE REGEX and pt_unittests are the checks.
PT_NAME=${0##*/}
PT_NAME=${PT_NAME%.sh}
AF=${1:?usage: $PT_NAME.sh path/to/attnfuzz}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
unset ATTNFUZZ_PYTHON ATTNFUZZ_WORKER_CONFIGS
command -v python3 >/dev/null || { echo "SKIP $PT_NAME: no python3"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

check() { # check NAME FILE REGEX: FILE must match REGEX
    if grep -Eq -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: no /$3/ in:"; cat "$2"; fail=1; fi
}

# pt_unittests: the Python mapping tests of python/tests/ (unittest, python/tests on the path
# for them alone; a failure or an error fails the run); their output stays in $T/unit.out.
# test_numpy_api needs numpy and the binary: ci/tests/test_numpy_api.sh runs it.
pt_unittests() {
    local mods
    mods=$(cd "$ROOT/python/tests" && ls test_*.py | grep -vx 'test_numpy_api.py' | sed 's/\.py$//')
    # shellcheck disable=SC2086 # one module name per word
    if (cd "$ROOT/python/tests" && PYTHONPATH="$ROOT/python/tests:$PYTHONPATH" python3 -m unittest $mods) \
        >"$T/unit.out" 2>&1; then
        echo "ok   python/tests: $(grep -Eo '^Ran [0-9]+ tests' "$T/unit.out")"
    else
        echo "FAIL python/tests:"
        cat "$T/unit.out"
        fail=1
    fi
}
