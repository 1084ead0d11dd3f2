# jax_xla_dq_explained.py — from /tmp/jaxcase.npz (jax_dump_worker.py): the exact dQ of element
# b1 h0 r1 c31 and three emulations; JAX xla's value is the one whose dP = dO V^T is rounded to bf16.
import numpy as np, jax.numpy as jnp
z=np.load("/tmp/jaxcase.npz"); sc=float(z["scale"])
bf=jnp.bfloat16
def b16(x): return np.asarray(jnp.asarray(x).astype(bf).astype(jnp.float64))
b,h,i,c=1,0,1,31
Q=z["q"][b,h].astype(np.float64); K=z["k"][b,h].astype(np.float64); V=z["v"][b,h].astype(np.float64); dO=z["do"][b,h].astype(np.float64)
n=i+1
s=Q[i]@K[:n].T*sc; P=np.exp(s-s.max()); P/=P.sum()
O=P@V[:n]; dP=dO[i]@V[:n].T; D=dO[i]@O
exact=(P*(dP-D))@K[:n]*sc
print("jax", z["dq"][b,h,i,c], "exact", exact[c])
Pb=b16(P); Ob=b16(Pb@V[:n])
for name,dPx,Dx in [("fp32 dP, D=dO.O",dP,D),("bf16 dP, D=sum dPb P",b16(dP),(b16(dP)*P).sum()),("bf16 dP, D=dO.Ob",b16(dP),dO[i]@Ob)]:
    dS=P*(dPx-Dx); e=b16(b16(dS*sc)@K[:n]); e2=(dS*sc)@K[:n]
    print("%-24s dq[c]=%.6f (unrounded %.6f)"%(name,e[c],e2[c]))
print("dP", dP, "bf16 dP", b16(dP), "D", D, "P", P)
