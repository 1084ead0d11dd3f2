"""A numpy attention worker for test_numpy_api (README's kernel), with planted bugs:
python3 numpy_kernel.py [--bug none|scale|nocausal]."""
import argparse

import numpy as np

from attnfuzz_worker import Decline, serve


def make_kernel(bug):
    def kernel(q, k, v, problem, do=None):
        if problem.backward:
            raise Decline("numpy_kernel: forward only")
        scale = problem.scale * (1.01 if bug == "scale" else 1.0)
        k = np.repeat(k, problem.group, axis=1)
        v = np.repeat(v, problem.group, axis=1)
        s = scale * np.einsum("bhid,bhjd->bhij", q, k)
        if bug == "nocausal":  # every key of the sequence, whatever the mask
            seen = np.array([[[j < problem.seqlens_kv[b] for j in range(problem.seqlen_kv)]
                              for i in range(problem.seqlen_q)] for b in range(problem.batch)])
        else:
            seen = np.array([[[problem.visible(b, i, j) for j in range(problem.seqlen_kv)]
                              for i in range(problem.seqlen_q)] for b in range(problem.batch)])
        s = np.where(seen[:, None], s, -np.inf)
        m = np.max(s, axis=-1, keepdims=True)
        w = np.exp(s - np.where(np.isfinite(m), m, 0))
        total = w.sum(axis=-1, keepdims=True)
        total = np.where(total > 0, total, 1)
        o = np.einsum("bhij,bhjd->bhid", w, v) / total
        return o, (m + np.log(total))[..., 0]
    return kernel


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--bug", default="none", choices=("none", "scale", "nocausal"))
    args = parser.parse_args()
    serve(make_kernel(args.bug), name="numpy-kernel", mode="numpy")
