#!/usr/bin/env python3
"""criterion_cases.py N DIR — write N seeded fp16/bf16 backward cases into DIR for
test_criterion.sh: a correct kernel (flash_ref) must pass every one. The draw is a
pure function of the case index (random.Random(index)), so a failing case number
always names the same case. Sizes stay small (the oracle runs MPFR on most of them);
every 16th case has 257-700 keys so split-KV and several 64-key tiles are covered."""
import os
import random
import sys

n, out = int(sys.argv[1]), sys.argv[2]
os.makedirs(out, exist_ok=True)
dims = [8, 16, 24, 32, 40, 64, 72, 104, 128]
for idx in range(n):
    r = random.Random(idx)
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
    lines = [f"# criterion case {idx}", f"dtype = {r.choice(['fp16', 'bf16'])}", f"heads_q = {hq}",
             f"heads_kv = {hkv}", f"seqlen_q = {sq}", f"seqlen_kv = {skv}", f"head_dim_qk = {dqk}",
             f"head_dim_v = {dv}", f"mask = {mask}", "backward = yes", f"seed = {idx + 1}", f"data = {data}"]
    if r.random() < 0.2:
        lines.append(f"window = {r.randint(0, 20)},{r.choice([-1, 0, 3])}")
    with open(os.path.join(out, f"c{idx:04d}.case"), "w") as f:
        f.write("\n".join(lines) + "\n")
