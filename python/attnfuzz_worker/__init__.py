"""attnfuzz_worker: fuzz a Python attention kernel with attnfuzz.

    from attnfuzz_worker import serve, Decline

    def kernel(q, k, v, problem, do=None):   # (B, H, S, D) tensors, problem.scale, .causal...
        o, lse = my_attention(q, k, v, problem)
        return o, lse                        # backward: o, lse, dq, dk, dv

    serve(kernel, name="mine", device="cuda")

    attnfuzz run corpora/seed/*.case --backend worker:mine --worker-cmd "python3 mine.py"

The protocol is docs/worker-protocol.md."""
from .problem import Problem
from .worker import Decline, Resource, Worker, serve

__all__ = ["Decline", "Problem", "Resource", "Worker", "serve"]
