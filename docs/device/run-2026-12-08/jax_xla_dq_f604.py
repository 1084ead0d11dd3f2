# jax_xla_dq_f604.py — the dQ element of jax-f604ad0c99ef's finding (b0 h2 r1 c1, causal top-left:
# row 1 sees keys 0..1) from the inputs that docs/device/run-2026-12-02/jax_dump_worker.py saved
# (NPZ, default /tmp/jaxcase.npz), exact and under the roundings JAX's xla path may make: dP =
# dO V^T as a bf16 einsum result (JAX's _dot_product_attention_core: einsum(probs, value) in the
# input dtype), P in bf16, dS in bf16 before dS K. Prints each variant's dQ beside JAX's.
import itertools, os, sys
import numpy as np, jax.numpy as jnp

z = np.load(os.environ.get("NPZ", "/tmp/jaxcase.npz"))
sc = float(z["scale"])
b, h, i, c = [int(x) for x in (sys.argv[1:5] if len(sys.argv) >= 5 else (0, 2, 1, 1))]


def b16(x):
    return np.asarray(jnp.asarray(np.asarray(x, dtype=np.float32)).astype(jnp.bfloat16).astype(jnp.float32)).astype(np.float64)


Q, K, V, dO = (z[n][b, h].astype(np.float64) for n in ("q", "k", "v", "do"))  # (S, D) each
n = i + 1  # causal top-left: keys 0..i
s = Q[i] @ K[:n].T * sc
P = np.exp(s - s.max())
P /= P.sum()
O = P @ V[:n]
dP = dO[i] @ V[:n].T
D = dO[i] @ O
exact = (P * (dP - D)) @ K[:n] * sc
print("element b%d h%d r%d c%d: jax %.7g exact %.7g" % (b, h, i, c, z["dq"][b, h, i, c], exact[c]))
print("P", P, "dP", dP, "bf16 dP", b16(dP), "D", D)
for rp, rdp, rds in itertools.product((0, 1), repeat=3):
    Px = b16(P) if rp else P
    dPx = b16(dP) if rdp else dP
    Dx = (dPx * Px).sum()  # autodiff's softmax backward: sum_j dP_ij P_ij
    dS = Px * (dPx - Dx) * sc
    if rds:
        dS = b16(dS)
    e = (dS @ K[:n])[c]
    print("P %-4s dP %-4s dS %-4s -> dq %.7g (bf16 %.7g)" % ("bf16" if rp else "fp32", "bf16" if rdp else "fp32",
                                                          "bf16" if rds else "fp32", e, b16(e)))
