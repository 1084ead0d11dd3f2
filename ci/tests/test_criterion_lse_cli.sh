#!/usr/bin/env bash
# test_criterion_lse_cli.sh ATTNFUZZ — the stored LSE's growth (judge/criterion/criterion.h):
#   - the three flash_ref false alarms of bf16 backward cases with |LSE| ~ 1e9
#     (corpora/regression/flash-ref-huge-lse-*.case: mismatch dQ/dK/dV, mismatch dV,
#     nan_inf dQ/dK/dV before) pass on flash_ref, which follows the plugin ABI;
#   - they pass on the cpu reference too.
# (A backward that recomputes P from a rounded LSE on ordinary cases stays a finding:
# flash_bug_lse_rounded in test_criterion_kernels.sh.)
set -u
bin=${1:?usage: test_criterion_lse_cli.sh path/to/attnfuzz}
plugins=$(dirname "$bin")/plugins
fail=0
for f in corpora/regression/flash-ref-huge-lse-*.case; do
    for be in "plugin:$plugins/flash_ref.so" cpu; do
        out=$("$bin" run "$f" --backend "$be" 2>&1)
        rc=$?
        if [ "$rc" -ne 0 ]; then
            echo "FAIL: $f on $be: exit $rc: $out"
            fail=1
        else
            echo "ok: $out"
        fi
    done
done
[ -e "$f" ] || { echo "FAIL: no corpora/regression/flash-ref-huge-lse-*.case"; fail=1; }
# The kernel's own LSE error never widens its forward O's allowance: a window off by one
# (wrong O and wrong LSE) keeps the O element ratio it had before the growth term (714.5).
out=$("$bin" run corpora/seed/fp16-window-small-both.case --backend planted:window_off_by_one --no-probes 2>&1)
ratio=$(printf '%s\n' "$out" | sed -n 's/.*mismatch O .*ratio=\([0-9.e+]*\).*/\1/p' | head -1)
if [ -z "$ratio" ] || ! awk -v r="$ratio" 'BEGIN { exit !(r > 100) }'; then
    echo "FAIL: planted:window_off_by_one O ratio '$ratio' (want > 100): $out"
    fail=1
else
    echo "ok: planted window bug, O ratio $ratio"
fi
exit $fail
