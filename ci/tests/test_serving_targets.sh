#!/usr/bin/env bash
# test_serving_targets.sh ATTNFUZZ — the serving and quantized worker targets (docs/targets.md,
# "FlashInfer", "SageAttention") without a GPU: their case mappings (python/tests/: call
# arguments, declines with their reasons, LSE base conversion, page tables from the
# harness's table, the compiled menu) run as Python unit tests; `attnfuzz backends
# --worker-configs python/targets` lists worker:sage and worker:flashinfer, and where their
# packages or torch are missing (as in CI) a case run on them is declined naming the
# missing module (exit 3). Needs python3.
set -u
. "$(dirname "$0")/lib_pytargets.sh"

# 1. the mappings (pure Python)
pt_unittests

# 2. listed by attnfuzz; available here only with their packages (and a GPU to run)
timeout 300 "$AF" backends --worker-configs "$ROOT/python/targets" >"$T/list.out" 2>&1
for t in sage flashinfer; do
    check "worker:$t listed from python/targets/$t.conf" "$T/list.out" \
        "^worker:$t +(available|unavailable .*$t\.conf:[0-9]+ .*(python module '[a-z_.]+' not found|python import failed))"
done
PYTHONPATH="$PYTHONPATH" python3 -m attnfuzz_worker.examples.targets >"$T/targets.out" 2>&1
check "the Python lister names both" "$T/targets.out" "^flashinfer +(can start|cannot start: no module)"
check "the Python lister names both" "$T/targets.out" "^sage +(can start|cannot start: no module)"

# 3. without their modules: a run declines with the missing module (exit 3)
for t in sage flashinfer; do
    if grep -Eq "^worker:$t +available" "$T/list.out"; then
        echo "info worker:$t is available here: the decline check is for machines without it"
        continue
    fi
    timeout 120 "$AF" run "$ROOT/corpora/gpu/bf16-nomask-fwd-d128.case" --backend "worker:$t" \
        --worker-config "$ROOT/python/targets/$t.conf" >"$T/run-$t.out" 2>&1
    rc=$?
    if [ $rc -eq 3 ]; then echo "ok   worker:$t run without its modules: exit 3"; else echo "FAIL worker:$t run: exit $rc"; fail=1; fi
    check "worker:$t decline names the module" "$T/run-$t.out" \
        "\[worker:$t\]: declined worker:$t: worker:$t unavailable: python module '[a-z_.]+' not found"
done

[ $fail -eq 0 ] && echo "test_serving_targets: all checks passed"
exit $fail
