#!/usr/bin/env bash
# test_worker_given.sh ATTNFUZZ — CP backward over a worker backend through the protocol's
# backward_given request (docs/worker-protocol.md): every backward case of corpora/seed-cp
# without a bias (protocol 1 carries none) passes over the pure-Python reference worker (none declined for backward_given); a
# planted worker that writes O (or LSE), inputs of that request, is a finding naming the
# tensor while its other cases pass; a worker whose hello does not list backward_given
# keeps the CP wrapper's decline. Needs python3 only (reference_py uses no numpy, no torch).
set -u
# AF, ROOT, PYTHONPATH, T, fail, check (and the skip without python3)
source "$(dirname "$0")/lib_pytargets.sh"
REFPY="python3 -m attnfuzz_worker.examples.reference_py"
PLANTED="python3 $ROOT/harness/backends/worker/tests/planted_worker.py"

# 1. the seed-cp corpus over worker:refpy: every backward case passes (the cases with a bias
# aside: worker protocol 1 does not carry one, so the worker declines them)
cases=()
for f in "$ROOT"/corpora/seed-cp/*.case; do
    grep -Eq '^bias *= *[^n]' "$f" || cases+=("$f")
done
"$AF" run "${cases[@]}" --backend worker:refpy --no-probes --worker-cmd "$REFPY" >"$T/seed.out" 2>"$T/seed.err"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL seed-cp over worker:refpy rc $rc (want 0)"; cat "$T/seed.out" "$T/seed.err"; fail=1; }
n_bwd=0
n_pass=0
for f in "${cases[@]}"; do
    grep -Eq '^backward *= *yes' "$f" || continue
    n_bwd=$((n_bwd + 1))
    if grep -Fq "$f [worker:refpy]: pass" "$T/seed.out"; then
        n_pass=$((n_pass + 1))
    else
        echo "FAIL backward case $f does not pass over worker:refpy:"
        grep -F "$f" "$T/seed.out"
        fail=1
    fi
done
if [ $n_bwd -gt 0 ] && [ $n_pass -eq $n_bwd ]; then
    echo "ok   $n_pass of $n_bwd seed-cp backward cases pass over worker:refpy"
else
    echo "FAIL $n_pass of $n_bwd seed-cp backward cases pass (want all, and more than 0)"
    fail=1
fi
if grep -q "backward_given" "$T/seed.out"; then
    echo "FAIL a seed-cp case was declined for backward_given:"
    grep "backward_given" "$T/seed.out"
    fail=1
else
    echo "ok   no seed-cp case declined for backward_given"
fi

# 2. planted workers on a small cp backward case: seed 666 is the planted one
mkcase() { # mkcase FILE SEED
    printf 'dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen = 8\nhead_dim = 8\nmask = causal\nbackward = yes\ncp = 2 p2p\nseed = %s\n' "$2" >"$1"
}
mkcase "$T/a.case" 5
mkcase "$T/planted.case" 666
planted() { # planted MODE REGEX-of-the-planted-case
    "$AF" run "$T/a.case" "$T/planted.case" --backend worker:p --no-probes --worker-cmd "$PLANTED $1" \
        >"$T/$1.out" 2>"$T/$1.err"
    check "$1: planted case" "$T/$1.out" "planted.case \[worker:p\]: $2"
}
planted given_writes_o "FINDING crash .*worker:p: the worker wrote O in a backward_given request"
check "given_writes_o: the same worker's unplanted case passes" "$T/given_writes_o.out" "a.case \[worker:p\]: pass"
planted given_writes_lse "FINDING crash .*worker:p: the worker wrote LSE in a backward_given request"
planted no_given "declined .*cp p2p backward over worker:p: the backend offers no backward from given O and LSE"
check "no_given: the unplanted case is declined too" "$T/no_given.out" \
    "a.case \[worker:p\]: declined .*offers no backward from given O and LSE"

[ $fail -eq 0 ] && echo "test_worker_given: all checks passed"
exit $fail
