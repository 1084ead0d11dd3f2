"""A planted defect for attnfuzz's own tests: a library whose forward and backward are
dispatched separately, and whose backward falls back to another kernel when a window is
set: the fallback ignores the window (the forward / backward dispatch mismatch of a
provider that checks fewer features for the backward than the forward did). Both kernels
are reference_py's float64 attention; the worker says which served each pass
(problem.ran), so the verdict names them and the window cases get their own buckets.

    attnfuzz run CASE --backend worker:planted-dispatch \\
        --worker-cmd "python3 -m attnfuzz_worker.examples.planted_dispatch"

Not a kernel to fuzz: ci/tests/test_worker_dispatch.sh runs it."""
from attnfuzz_worker import serve
from attnfuzz_worker.examples import reference_py as ref
from attnfuzz_worker.problem import Problem


def windowed(problem):
    return problem.window_left >= 0 or problem.window_right >= 0


def without_window(problem):
    """The same problem as the fallback sees it: the window's fields left out."""
    fields = dict(problem.fields)
    fields["window_left"] = fields["window_right"] = -1
    return Problem(fields)


def kernel(q, k, v, problem, do=None):
    fallback = do is not None and windowed(problem)
    problem.ran(forward="main", backward=("fallback" if fallback else "main") if do is not None else None)
    if not fallback:
        return ref.kernel(q, k, v, problem, do=do)
    kv = ref.kv_rows(k, v, problem)
    blind = without_window(problem)

    def head(b, hq, hk):
        nq = problem.seqlens_q[b]
        kr, vr = kv(b, hk)
        qr = q.rows(b, hq, nq)
        o, lse, _, _, _ = ref.attention_head(qr, kr, vr, None, problem, b, hq)  # the forward: right
        # the fallback recomputes its own softmax, without the window
        _, _, dq, dk, dv = ref.attention_head(qr, kr, vr, do.rows(b, hq, nq), blind, b, hq)
        return o, lse, dq, dk, dv

    return ref.each_head(problem, head)


if __name__ == "__main__":
    serve(kernel, name="planted-dispatch", description="planted: the backward's fallback ignores the window",
          device="cpu", dtypes=("fp16", "bf16"), supports=ref.supports, mode="python",
          features=("backward", "gqa", "causal", "window", "bottom_right", "padded"))
