#!/usr/bin/env bash
# test_worker_score_features.sh ATTNFUZZ — the worker protocol carries the soft cap and the
# sinks (docs/worker-protocol.md): the pure-Python reference worker, which lists them,
# passes soft-capped and sink cases (forward and backward, off_by_one and learnable, a
# window with fully masked rows); a worker that lists them but ignores the soft cap, or
# the sinks, is a mismatch; a worker whose hello has no feature list is not sent them
# (declined, as before they were carried); learnable sinks with backward are declined
# (dsink has no slot). The score_mod likewise: the reference worker serves squared, trig
# (two sequences: tan(1)) and trig2 backward by name; one that lists it but ignores it is a
# mismatch; a hello without a list is not sent it. Needs python3 (no numpy, no torch).
set -u
# AF, ROOT, PYTHONPATH, T, fail, check (and the skip without python3)
source "$(dirname "$0")/lib_pytargets.sh"
printf 'dtype = fp16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen = 8\nhead_dim = 8\nmask = causal\nbackward = yes\nsoftcap = 2.5\ndata = normal:4\nseed = 3\n' >"$T/cap.case"
printf 'dtype = bf16\nbatch = 1\nheads_q = 2\nheads_kv = 1\nseqlen_q = 6\nseqlen_kv = 9\nhead_dim = 8\nmask = causal\nwindow = 2,0\nsoftmax = learnable\nseed = 4\n' >"$T/sink.case"
printf 'dtype = fp16\nbatch = 1\nheads = 2\nseqlen = 8\nhead_dim = 8\nmask = causal\nbackward = yes\nsoftmax = off_by_one\nsoftcap = 1.5\nseed = 5\n' >"$T/both.case"
cp "$T/sink.case" "$T/sink-bwd.case" && echo "backward = yes" >>"$T/sink-bwd.case"
for m in squared trig trig2; do
    printf 'dtype = fp16\nbatch = 2\nheads_q = 2\nheads_kv = 1\nseqlen = 6\nhead_dim = 8\nmask = causal\nbackward = yes\nscore_mod = %s\nseed = 6\n' \
        "$m" >"$T/mod-$m.case"
done
REF="python3 -m attnfuzz_worker.examples.reference_py"

# 1. the reference worker serves them: every case passes, learnable sinks with backward decline
"$AF" run "$T/cap.case" "$T/sink.case" "$T/both.case" "$T/sink-bwd.case" --backend worker:refpy --worker-cmd "$REF" \
    >"$T/ref.out" 2>&1
check "softcap backward passes" "$T/ref.out" "cap.case .*: pass"
check "learnable sinks with a window pass" "$T/ref.out" "sink.case .*: pass"
check "off_by_one + softcap backward passes" "$T/ref.out" "both.case .*: pass"
check "learnable sinks with backward declined (dsink)" "$T/ref.out" "sink-bwd.case .*declined.*dsink"
"$AF" run "$T/mod-squared.case" "$T/mod-trig.case" "$T/mod-trig2.case" --backend worker:refpy --worker-cmd "$REF" \
    >"$T/mod.out" 2>&1
for m in squared trig trig2; do check "score_mod $m backward passes" "$T/mod.out" "mod-$m.case .*: pass"; done

# 2. a worker that lists them but ignores the soft cap / the sinks: mismatches
cat >"$T/ignores.py" <<'PY'
import sys
from attnfuzz_worker import serve
from attnfuzz_worker.examples import reference_py as r
what = sys.argv[1]
base = r.kernel
def kernel(q, k, v, problem, do=None):
    if what == "softcap":
        problem.softcap = 0.0
    elif what == "score_mod":
        problem.score_mod = "none"
    else:
        problem.sink = None
    return base(q, k, v, problem, do)
serve(kernel, name="ignores", device="cpu", dtypes=("fp16", "bf16"), supports=r.supports, mode="python",
      features=r.FEATURES)
PY
"$AF" run "$T/cap.case" --backend worker:ign --worker-cmd "python3 $T/ignores.py softcap" --no-probes >"$T/ign1.out" 2>&1
check "ignored soft cap is a mismatch" "$T/ign1.out" "cap.case .*FINDING mismatch"
"$AF" run "$T/sink.case" --backend worker:ign --worker-cmd "python3 $T/ignores.py sinks" --no-probes >"$T/ign2.out" 2>&1
check "ignored sinks are a finding" "$T/ign2.out" "sink.case .*FINDING"
"$AF" run "$T/mod-trig.case" --backend worker:ign --worker-cmd "python3 $T/ignores.py score_mod" --no-probes \
    >"$T/ign3.out" 2>&1
check "ignored score_mod is a mismatch" "$T/ign3.out" "mod-trig.case .*FINDING mismatch"

# 3. a hello without a feature list (a worker written before they were carried): not sent
cat >"$T/nolist.py" <<'PY'
from attnfuzz_worker import serve
from attnfuzz_worker.examples import reference_py as r
serve(r.kernel, name="nolist", device="cpu", dtypes=("fp16", "bf16"), supports=r.supports, mode="python")
PY
"$AF" run "$T/cap.case" "$T/sink.case" --backend worker:old --worker-cmd "python3 $T/nolist.py" --no-probes \
    >"$T/old.out" 2>&1
check "no list: softcap declined" "$T/old.out" "cap.case .*declined.*'softcap'"
check "no list: sinks declined" "$T/old.out" "sink.case .*declined.*'sinks'"
"$AF" run "$T/mod-squared.case" --backend worker:old --worker-cmd "python3 $T/nolist.py" --no-probes >"$T/old2.out" 2>&1
check "no list: score_mod declined" "$T/old2.out" "mod-squared.case .*declined.*'score_mod'"
[ $fail = 0 ] && echo "test_worker_score_features: all checks passed"
exit $fail
