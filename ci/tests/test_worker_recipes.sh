#!/usr/bin/env bash
# test_worker_recipes.sh ATTNFUZZ — a worker's declared recipes reach the judge end to end
# (docs/worker-protocol.md "recipes", docs/criterion.md "A row sum of rounded P"). A test
# worker returns the pure-Python reference's O with the LSE formed FlashInfer's way, from the
# row sum of P rounded to fp16 (fp16, two keys a row: one tile, so the LSE moves by up to
# 2^-11, about 40x the LSE allowance without the recipe):
#   1. the hello lists lse_rowsum_dtype_p, the replies say nothing: pass (the hello's applies);
#   2. the hello lists it, the run's reply lists none (that call is not one the recipe covers,
#      as FlashInfer's decode): an LSE mismatch;
#   3. the hello does not list it, the reply does: an LSE mismatch (a reply only narrows);
#   4. both list it: pass.
# Needs python3 (no numpy, no torch).
set -u
# AF, ROOT, PYTHONPATH, T, fail, check (and the skip without python3)
source "$(dirname "$0")/lib_pytargets.sh"
cat >"$T/rowsum.py" <<'PY'
import math
import struct
import sys
from attnfuzz_worker import serve
from attnfuzz_worker.examples import reference_py as r

hello_lists, reply = sys.argv[1], sys.argv[2]  # hello: yes / no; reply: keep / none / lists


def f16(x):
    return struct.unpack("e", struct.pack("e", x))[0]


def kernel(q, k, v, problem, do=None):
    O, L = r.kernel(q, k, v, problem)
    kv = r.kv_rows(k, v, problem)
    for b in range(problem.batch):
        for hq in range(problem.heads_q):
            kb, _ = kv(b, hq // problem.group)
            qr = q.rows(b, hq, problem.seqlens_q[b])
            for i in range(problem.seqlens_q[b]):
                lo, hi = problem.visible_range(b, i)
                s, _ = r.scores(qr[i], kb, lo, hi, problem, b)
                m = max(s)
                L[b][hq][i] = m + math.log(math.fsum(f16(math.exp(x - m)) for x in s))
    if reply == "none":
        problem.recipes = []
    elif reply == "lists":
        problem.recipes = ["lse_rowsum_dtype_p"]
    return O, L


serve(kernel, name="rowsum", device="cpu", dtypes=("fp16", "bf16"), supports=r.supports, mode="python",
      recipes=("lse_rowsum_dtype_p",) if hello_lists == "yes" else ())
PY
printf 'dtype = fp16\nbatch = 2\nheads = 2\nseqlen_q = 8\nseqlen_kv = 2\nhead_dim = 16\nseed = 7\n' >"$T/rs.case"
run() { # run LABEL HELLO REPLY
    "$AF" run "$T/rs.case" --backend worker:rs --worker-cmd "python3 $T/rowsum.py $2 $3" --no-probes >"$T/$1.out" 2>&1
}
run keep yes keep
check "hello lists the recipe: the rounded-P LSE passes" "$T/keep.out" "rs.case .*: pass"
run narrowed yes none
check "the reply lists none: LSE mismatch" "$T/narrowed.out" "rs.case .*FINDING mismatch LSE"
run widened no lists
check "a reply cannot add what the hello lacks: LSE mismatch" "$T/widened.out" "rs.case .*FINDING mismatch LSE"
run both yes lists
check "hello and reply list it: pass" "$T/both.out" "rs.case .*: pass"
exit $fail
