#!/usr/bin/env bash
# test_worker_errors.sh ATTNFUZZ — a worker's failures told apart, without torch:
#   - a worker whose target imports a module that does not exist dies at its start: the
#     backend is unavailable, naming the module (run: exit 3; backends: "unavailable");
#   - a worker that requires a missing module (requires=) says so instead of its hello;
#     one that imports it while serving a case: that case is declined "unavailable";
#   - an adapter that raises TypeError before its marked kernel call: an `error` verdict
#     (exit 6, no finding, counted as an error by a campaign), never a crash; a kernel
#     that raises inside the marked call is still a crash finding;
#   - run prints a summary line; --allow-declined passes a run whose cases passed or were
#     declined, but not one where nothing passed;
#   - repro and minimize take --worker-cmd / --worker-config, and a worker bucket's
#     Reproduce line, pasted into sh, runs the worker and reproduces the finding.
set -u
AF=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
unset ATTNFUZZ_PYTHON
command -v python3 >/dev/null || { echo "SKIP test_worker_errors: no python3"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { # check NAME FILE REGEX
    if grep -Eq -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: no /$3/ in:"; cat "$2"; fail=1; fi
}
nocheck() { # nocheck NAME FILE REGEX: FILE must not match
    if grep -Eq -- "$3" "$2"; then echo "FAIL $1: /$3/ in:"; cat "$2"; fail=1; else echo "ok   $1"; fi
}
check_rc() { if [ "$2" -eq "$3" ]; then echo "ok   $1 (rc $2)"; else echo "FAIL $1: rc $2, want $3"; fail=1; fi; }
mkcase() { printf 'dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen = 8\nhead_dim = 8\nmask = causal\nbackward = yes\nseed = %s\n' "$2" >"$1"; }
mkcase "$T/a.case" 1
mkcase "$T/planted.case" 666 # planted_worker.py misbehaves on seed 666 only
PW="python3 $ROOT/harness/backends/worker/tests/planted_worker.py"

# 1. a target that imports a missing module dies at its start: unavailable, module named
printf 'import attnfuzz_no_such_module_at_import\n' >"$T/dead_import.py"
printf 'command = python3 %s\nname = dead\nstart_timeout = 30\n' "$T/dead_import.py" >"$T/dead.conf"
"$AF" run "$T/a.case" --backend worker:dead --worker-config "$T/dead.conf" >"$T/dead.out" 2>"$T/dead.err"
check_rc "import failure at start: exit 3 (unavailable)" $? 3
check "import failure names the module" "$T/dead.out" \
    "declined worker:dead: worker:dead unavailable: python module 'attnfuzz_no_such_module_at_import' not found"
nocheck "import failure is no crash" "$T/dead.out" "FINDING"
"$AF" backends --worker-configs "$T/dead.conf" >"$T/dead.list" 2>&1
check "backends: the dead target is unavailable, module named" "$T/dead.list" \
    "^worker:dead +unavailable .*python module 'attnfuzz_no_such_module_at_import' not found"

# 2. requires= a missing module: said instead of the hello (backends does not call it available)
printf 'command = %s requires_missing\nname = req\n' "$PW" >"$T/req.conf"
"$AF" backends --worker-configs "$T/req.conf" >"$T/req.list" 2>&1
check "backends: a worker missing a required module is unavailable" "$T/req.list" \
    "^worker:req +unavailable .*worker:req unavailable: python module 'attnfuzz_no_such_module_planted' not found"
"$AF" run "$T/a.case" --backend worker:req --worker-config "$T/req.conf" >"$T/req.out" 2>"$T/req.err"
check_rc "run on it: exit 3" $? 3
check "run on it: declined, module named" "$T/req.out" "unavailable: python module 'attnfuzz_no_such_module_planted' not found"

# 3. a module imported while serving a case: that case is declined as unavailable, no crash
"$AF" run "$T/a.case" "$T/planted.case" --backend worker:p --worker-cmd "$PW lazy_import" >"$T/lazy.out" 2>"$T/lazy.err"
check_rc "lazy import: exit 3" $? 3
check "lazy import: the case is declined, module named" "$T/lazy.out" \
    "planted.case \[worker:p\]: declined .*unavailable: python module 'attnfuzz_no_such_module_planted' not found"
check "lazy import: the summary counts it declined" "$T/lazy.err" "^run: 2 cases: 1 passed, 1 declined, 0 findings, 0 errors$"

# 4. a TypeError in the adapter before its marked kernel call: an error verdict, not a crash
"$AF" run "$T/a.case" "$T/planted.case" --backend worker:p --worker-cmd "$PW adapter_error" >"$T/adapter.out" 2>"$T/adapter.err"
check_rc "adapter TypeError: exit 6 (error)" $? 6
check "adapter TypeError: an error verdict naming it" "$T/adapter.out" \
    "planted.case \[worker:p\]: error worker:p \(no verdict on the kernel\): worker:p: adapter error: TypeError: "
nocheck "adapter TypeError: no crash finding" "$T/adapter.out" "FINDING"
check "adapter TypeError: summary" "$T/adapter.err" "^run: 2 cases: 1 passed, 0 declined, 0 findings, 1 error$"
"$AF" run "$T/planted.case" --backend worker:p --worker-cmd "$PW kernel_error_marked" --json >"$T/marked.out" 2>/dev/null
check_rc "an exception inside the marked kernel call: exit 1" $? 1
check "an exception inside the marked kernel call: a crash finding" "$T/marked.out" '"verdict": ?"crash"'
"$AF" repro "$T/planted.case" --backend worker:p --worker-cmd "$PW adapter_error" >"$T/arepro.out" 2>/dev/null
check_rc "repro of an adapter error: exit 6" $? 6

# 5. a campaign counts adapter errors as errors (DIR/errors), never as crashes
mkdir -p "$T/seed" && cp "$T/a.case" "$T/planted.case" "$T/seed/"
timeout 120 "$AF" campaign "$T/seed" --time 3 --seed 3 --max-work 4096 --backend worker:p \
    --worker-cmd "$PW adapter_error" --out "$T/acamp" >"$T/acamp.out" 2>&1
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("errors %d crashes %d findings %d" % (d["errors"], d["crashes"], d["findings"]))' \
    "$T/acamp/stats.json" >"$T/acamp.stats"
check "campaign: adapter errors counted as errors, no crash, no finding" "$T/acamp.stats" "^errors [1-9][0-9]* crashes 0 findings 0$"
check "campaign: the error case kept with its reason" <(head -qn1 "$T"/acamp/errors/*.case 2>/dev/null) \
    "could not run: worker:p: adapter error: TypeError"

# 6. --allow-declined: declines pass when something passed and nothing failed
printf 'dtype = fp16\nbatch = 1\nheads = 1\nseqlen = 8\nhead_dim = 8\nseed = 4\n' >"$T/fwd.case"
"$AF" run "$T/fwd.case" "$T/planted.case" --backend worker:p --worker-cmd "$PW decline" >/dev/null 2>"$T/decl.err"
check_rc "a declined case without --allow-declined: exit 3" $? 3
check "summary of a declining run" "$T/decl.err" "^run: 2 cases: 1 passed, 1 declined, 0 findings, 0 errors$"
"$AF" run "$T/fwd.case" "$T/planted.case" --backend worker:p --worker-cmd "$PW decline" --allow-declined >/dev/null 2>&1
check_rc "--allow-declined: passed + declined = exit 0" $? 0
"$AF" run "$T/planted.case" --backend worker:p --worker-cmd "$PW decline" --allow-declined >/dev/null 2>&1
check_rc "--allow-declined with nothing passed: exit 3" $? 3
"$AF" run "$T/fwd.case" "$T/planted.case" --backend worker:p --worker-cmd "$PW error" --allow-declined >/dev/null 2>&1
check_rc "--allow-declined does not hide a finding: exit 1" $? 1

# 7. repro and minimize on a worker; a worker bucket's Reproduce line runs
"$AF" repro "$T/planted.case" --backend worker:p --worker-cmd "$PW error" >"$T/repro.out" 2>/dev/null
check_rc "repro --worker-cmd: the finding reproduces" $? 1
check "repro --worker-cmd: still fails" "$T/repro.out" "still fails"
printf 'command = %s error\nname = p\n' "$PW" >"$T/p.conf"
"$AF" repro "$T/a.case" --backend worker:p --worker-config "$T/p.conf" >/dev/null 2>&1
check_rc "repro --worker-config: a passing case passes" $? 0
"$AF" minimize "$T/planted.case" -o "$T/small.case" --backend worker:p --worker-config "$T/p.conf" --quiet \
    --max-runs 20 >"$T/min.out" 2>&1
check_rc "minimize --worker-config" $? 0
check "minimize's reproduce line names the worker config" "$T/min.out" "^reproduce: attnfuzz repro .*small.case --backend worker:p --worker-config "
timeout 120 "$AF" campaign "$T/seed" --time 3 --seed 3 --max-work 4096 --minimize-runs 5 --backend worker:p \
    --worker-cmd "$PW error" --out "$T/wcamp" >"$T/wcamp.out" 2>&1
line=$(python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["buckets"]; print(b[0]["repro"] if b else "")' \
    "$T/wcamp/report.json" 2>/dev/null)
echo "     worker bucket: $line"
case $line in *"--worker-cmd "*) echo "ok   the worker bucket's Reproduce line carries --worker-cmd" ;;
    *) echo "FAIL the worker bucket's Reproduce line has no --worker-cmd: '$line'"; fail=1 ;; esac
mkdir -p "$T/bin" && ln -s "$AF" "$T/bin/attnfuzz"
# the reports' Reproduce lines name the case relative to the campaign directory: run there
(cd "$T/wcamp" && PATH="$T/bin:$PATH" sh -c "$line") >"$T/paste.out" 2>&1
check_rc "the Reproduce line, pasted into sh in the campaign directory, reproduces the worker's finding" $? 1
check "the pasted line: still fails" "$T/paste.out" "still fails"

[ $fail -eq 0 ] && echo "test_worker_errors: all checks passed"
exit $fail
