#!/usr/bin/env python3
"""gen_mix.py N OUTDIR [SEED] — the benchmark's config mix as attnfuzz cases and as JSON.

Writes OUTDIR/case-NNNN.case (attnfuzz) and OUTDIR/mix.jsonl (one object per case, the
same configuration, for ci/bench/torch_loop.py). The mix (issue 9): dtype in {bf16, fp16},
batch in {1, 2}, heads_kv in {1, 2, 4}, heads_q = heads_kv * {1, 2, 4}, head_dim in
{64, 128}, s_q and s_kv uniform in [1, 1024], causal (top-left) half the time with
s_kv = s_q, layout bhsd, backward, normal inputs.
"""
import json
import os
import random
import sys


def main():
    n = int(sys.argv[1])
    out = sys.argv[2]
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 2026)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'mix.jsonl'), 'w') as mix:
        for i in range(n):
            hkv = rng.choice([1, 2, 4])
            c = {
                'dtype': rng.choice(['bf16', 'fp16']),
                'batch': rng.choice([1, 2]),
                'heads_kv': hkv,
                'heads_q': hkv * rng.choice([1, 2, 4]),
                'head_dim': rng.choice([64, 128]),
                'seqlen_q': rng.randint(1, 1024),
                'causal': rng.random() < 0.5,
                'seed': i + 1,
            }
            c['seqlen_kv'] = c['seqlen_q'] if c['causal'] else rng.randint(1, 1024)
            mix.write(json.dumps(c) + '\n')
            with open(os.path.join(out, 'case-%04d.case' % i), 'w') as f:
                f.write('# benchmark mix case %d (ci/bench/gen_mix.py)\n' % i)
                for k in ('dtype', 'batch', 'heads_q', 'heads_kv', 'seqlen_q', 'seqlen_kv', 'head_dim'):
                    f.write('%s = %s\n' % (k, c[k]))
                f.write('layout = bhsd\nmask = %s\nbackward = yes\nseed = %d\ndata = normal:1\n' % (
                    'causal' if c['causal'] else 'none', c['seed']))


if __name__ == '__main__':
    main()
