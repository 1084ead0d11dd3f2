#!/usr/bin/env python3
"""criterion_fp8_cases.py N DIR — write N seeded fp8_e4m3 cases into DIR for
test_criterion_fp8.sh: the correct flash-style fp8 kernel (flash_fp8) must pass every
one. The draw is a pure function of the case index (random.Random(1000 + index)), so a
failing case number always names the same case. Two in three have a backward; every
16th has 257-700 keys (split-KV, several 64-key tiles)."""
import os
import random
import sys

n, out = int(sys.argv[1]), sys.argv[2]
os.makedirs(out, exist_ok=True)
dims = [8, 16, 24, 32, 40, 64, 72, 104, 128]
for idx in range(n):
    r = random.Random(1000 + idx)
    hkv = r.choice([1, 1, 2])
    hq = hkv * r.choice([1, 2, 4])
    sq = r.randint(1, 48)
    skv = r.randint(257, 700) if idx % 16 == 15 else r.randint(1, 96)
    if idx % 16 == 15:
        sq = r.randint(1, 8)
    dqk = r.choice(dims)
    dv = dqk if r.random() < 0.6 else r.choice(dims)
    mask = r.choice(["none", "causal", "causal_bottom_right"])
    data = r.choice(["normal:1", "normal:4", "normal:16", "normal:1 outlier_channels:2:16"])
    bwd = "yes" if idx % 3 else "no"
    lines = [f"# fp8 criterion case {idx}", "dtype = fp8_e4m3", f"heads_q = {hq}", f"heads_kv = {hkv}",
             f"seqlen_q = {sq}", f"seqlen_kv = {skv}", f"head_dim_qk = {dqk}", f"head_dim_v = {dv}",
             f"mask = {mask}", f"backward = {bwd}", f"seed = {idx + 1}", f"data = {data}"]
    if r.random() < 0.2:
        lines.append(f"window = {r.randint(0, 20)},{r.choice([-1, 0, 3])}")
    with open(os.path.join(out, f"f{idx:04d}.case"), "w") as f:
        f.write("\n".join(lines) + "\n")
