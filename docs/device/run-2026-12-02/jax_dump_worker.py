# jax_dump_worker.py — jax_dpa worker that also saves the inputs and dQ of a backward case to
# /tmp/jaxcase.npz (the analysis of docs/targets.md, "JAX xla dQ"). Run:
#   PYTHONPATH=python:docs/device/run-2026-12-02 build/attnfuzz run corpora/gpu/bf16-thd-causal-bwd.case \
#     --backend worker:jax --engine xla --no-probes --worker-cmd "python3 docs/device/run-2026-12-02/jax_dump_worker.py --device cpu"
import sys, numpy as np
from attnfuzz_worker.examples import jax_dpa
orig = jax_dpa.kernel
def kernel(q, k, v, problem, do=None):
    out = orig(q, k, v, problem, do)
    if do is not None:
        np.savez("/tmp/jaxcase.npz", q=q.numpy(), k=k.numpy(), v=v.numpy(), do=do.numpy(), dq=out[2].numpy(),
                 o=out[0].numpy(), lens=np.array(problem.seqlens_q), scale=problem.scale)
    return out
jax_dpa.kernel = kernel
jax_dpa.main(sys.argv[1:])
