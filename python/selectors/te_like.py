#!/usr/bin/env python3
"""python/selectors/te_like.py — an external selector for `attnfuzz select/run/gate
--selector-cmd` (or `cmd:python3 python/selectors/te_like.py` in a gate), modelled on the
shape of TransformerEngine's get_attention_backend: three candidates, each switched off by
its own rules, then a fixed preference among those left.

  FlashAttention  -> flash_ref (attnfuzz's flash-style kernel plugin)
  FusedAttention  -> cudnn
  Unfused         -> cpu (the plain reference)

Facts used (TE's public docs of its attention backends, written from memory of them, not
copied): FlashAttention and FusedAttention serve fp16/bf16 (FusedAttention also FP8);
head dims up to 256 and multiples of 8; FlashAttention wants d_qk == d_v; FusedAttention
needs an sm80+ GPU and cuDNN; neither serves context parallelism here; NVTE_FLASH_ATTN=0,
NVTE_FUSED_ATTN=0, NVTE_UNFUSED_ATTN=0 switch a candidate off; on sm90 FusedAttention is
preferred over FlashAttention. The GPU arch comes from ATTNFUZZ_SELECTOR_SM (e.g. 90); it
is unknown (no GPU) when unset.

Reads the case's canonical text on stdin, prints one line: a backend name, or
`none: REASON` listing why each candidate was switched off.
"""
import os
import sys


def read_case(text):
    case = {}
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if line:
            key, _, value = line.partition('=')
            case[key.strip()] = value.strip()
    return case


def main():
    case = read_case(sys.stdin.read())
    dtype = case.get('dtype', 'fp16')
    dqk = int(case.get('head_dim_qk', '64'))
    dv = int(case.get('head_dim_v', '64'))
    cp = case.get('cp', '1').split()[0]
    features = any(k in case for k in ('softmax', 'softcap', 'bias', 'alibi', 'stats', 'dlse'))
    sm = int(os.environ.get('ATTNFUZZ_SELECTOR_SM', '0') or 0)
    why = {}

    def off(name, reason):
        why.setdefault(name, reason)

    for name, env in (('flash', 'NVTE_FLASH_ATTN'), ('fused', 'NVTE_FUSED_ATTN'), ('unfused', 'NVTE_UNFUSED_ATTN')):
        if os.environ.get(env) == '0':
            off(name, '%s=0' % env)
    if cp != '1':
        for name in ('flash', 'fused', 'unfused'):
            off(name, 'context parallelism (cp %s) is not served here' % cp)
    if dtype not in ('fp16', 'bf16'):
        off('flash', 'dtype %s' % dtype)
        if dtype != 'fp8_e4m3':
            off('fused', 'dtype %s' % dtype)
    if dqk > 256 or dv > 256 or dqk % 8 or dv % 8:
        off('flash', 'head dims %d, %d (needs <= 256 and %% 8)' % (dqk, dv))
        off('fused', 'head dims %d, %d (needs <= 256 and %% 8)' % (dqk, dv))
    if dqk != dv:
        off('flash', 'head_dim_qk %d != head_dim_v %d' % (dqk, dv))
    if features:
        off('flash', 'softmax variants, softcap, bias, ALiBi, stats, dLSE')
        off('fused', 'softmax variants, softcap, bias, ALiBi, stats, dLSE')
    if sm < 80:
        off('fused', 'needs an sm80+ GPU (arch unknown)' if sm == 0 else 'sm%d < sm80' % sm)
    if dtype == 'mxfp8':
        off('unfused', 'dtype mxfp8')
    order = ['fused', 'flash', 'unfused'] if sm >= 90 else ['flash', 'fused', 'unfused']
    names = {'flash': 'flash_ref', 'fused': 'cudnn', 'unfused': 'cpu'}
    for cand in order:
        if cand not in why:
            print(names[cand])
            return 0
    print('none: ' + '; '.join('%s: %s' % (names[c], why[c]) for c in order))
    return 0


if __name__ == '__main__':
    sys.exit(main())
