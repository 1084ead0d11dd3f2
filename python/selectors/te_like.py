#!/usr/bin/env python3
"""python/selectors/te_like.py — an external selector for `attnfuzz select/run/gate
--selector-cmd` (or `cmd:python3 python/selectors/te_like.py` in a gate), modelled on
TransformerEngine's `get_attention_backend`.

Source of the facts: NVIDIA/TransformerEngine,
transformer_engine/pytorch/attention/dot_product_attention/utils.py at commit
002a3e573f49cb0345955745206084e289d0f346 (TE main during the 2.x series; a neighbouring
commit's build_tools/VERSION.txt reads 2.21.0-dev0). Read for facts, rewritten here in
this project's terms; nothing is copied.

TE's shape: three candidates start enabled; each filter below switches candidates off,
recording why; among those left FlashAttention wins, except that on sm90 and later
FusedAttention is preferred when both remain; UnfusedDotProductAttention comes last.
The candidates map to attnfuzz backends:

  FlashAttention  -> flash_ref (fp16/bf16; FA2's rules), flash_fp8 (fp8_e4m3: FA3, sm90
                     forward only)
  FusedAttention  -> cudnn
  Unfused         -> cpu (the plain reference)

Filters kept (TE's name of the filter, then the rule as applied to an attnfuzz case):
  environment    NVTE_FLASH_ATTN=0, NVTE_FUSED_ATTN=0, NVTE_UNFUSED_ATTN=0 switch one off.
  architecture   below sm80 flash (FA2) and fused are off; FA3 (our fp8 flash) only on
                 sm90. attnfuzz's flash_ref runs on the CPU, so an unknown arch (no GPU:
                 ATTNFUZZ_SELECTOR_SM unset) keeps flash_ref and switches fused off.
  dtype          flash: fp16/bf16 (FA3 adds fp8_e4m3); fused: fp16/bf16/fp8_e4m3;
                 mxfp8 is none of TE's types.
  FP8 execution  fp8 attention switches FA2 off, FA3 off for training (backward), and the
                 unfused path off unless NVTE_UnfusedDPA_Emulate_FP8=1. FP8 current
                 scaling (ATTNFUZZ_SELECTOR_FP8_RECIPE=current) needs sm100+ for fused,
                 cuDNN >= 9.14, and >= 9.18 when determinism is asked
                 (NVTE_ALLOW_NONDETERMINISTIC_ALGO=0).
  KV cache       paged KV: FA2 needs page_size >= 256; fused is off for KV caching on
                 sm89 and for FP8 KV caching; FA3 with FP8 KV caching needs thd.
  head dims      d_qk != d_v (MLA): FA2 off; fused off unless Q, K, V are separate
                 tensors (packing = separate). FA2: d_qk <= 256, % 8, and > 192 only on
                 sm80/90/100/120. FA3: d_qk <= 256, GQA groups divide the heads, and MLA
                 only for (128 < d_qk <= 192, 96 < d_v <= 128) or (d_qk <= 64, d_v <= 512).
                 Fused: what cuDNN serves (tex.get_fused_attn_backend): modelled as this
                 project's cuDNN envelope, both head dims % 8 and <= 256.
  layout         thd: the unfused path is off; thd with padding between sequences
                 (thd_gap > 0) switches flash off.
  softmax type   off-by-one / learnable (attnfuzz sinks): flash off; with fp8 fused and
                 unfused off too; with thd fused and unfused off.
  context par.   cp > 1: the unfused path is off; a bottom-right causal mask, or a causal
                 mask with s_q != s_kv, switches flash and fused off; FP8 switches flash
                 off. (attnfuzz's cpu and plugins do not serve cp > 1 themselves.)
  mask           flash only has the bottom-right causal diagonal: a top-left causal mask
                 with s_q != s_kv switches it off.
  window         fused: only (left, 0) windows (right bound 0), not for FP8, not with
                 s_q > s_kv. flash: any window, bottom-right aligned (a top-left window
                 with s_q != s_kv switches it off).
  bias           a bias other than ALiBi switches flash off; ALiBi switches FA3 off.
                 TE has no softcap, base-2 stats or dLSE inputs: a case asking for them is
                 served by nobody.
  determinism    deterministic (NVTE_ALLOW_NONDETERMINISTIC_ALGO=0) training switches fused
                 off below sm90, on sm100+, and for FP8.

Environment: ATTNFUZZ_SELECTOR_SM (e.g. 90; unset = no GPU), ATTNFUZZ_SELECTOR_CUDNN
(e.g. 9.14.0; unset = unknown), ATTNFUZZ_SELECTOR_FP8_RECIPE (delayed | current), and TE's
own NVTE_* switches above.

Reads the case's canonical text on stdin; prints one line: a backend name, or
`none: REASON` listing why each candidate was switched off.
"""
import os
import sys


def read_case(text):
    """The case's `key = value` lines (comments dropped) as a dict of strings."""
    case = {}
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if line:
            key, _, value = line.partition('=')
            case[key.strip()] = value.strip()
    return case


def version_tuple(text):
    parts = [int(p) for p in text.split('.') if p.isdigit()]
    return tuple((parts + [0, 0, 0])[:3]) if parts else None


class Candidates:
    """Which TE candidates are still on, and the first reason each was switched off."""

    def __init__(self):
        self.why = {}

    def off(self, name, reason):
        self.why.setdefault(name, reason)

    def on(self, name):
        return name not in self.why


def choose(case, env):
    dtype = case.get('dtype', 'fp16')
    dqk = int(case.get('head_dim_qk', case.get('head_dim', '64')))
    dv = int(case.get('head_dim_v', case.get('head_dim', '64')))
    sq = int(case.get('seqlen_q', case.get('seqlen', '64')))
    skv = int(case.get('seqlen_kv', case.get('seqlen', '64')))
    heads_q = int(case.get('heads_q', case.get('heads', '1')))
    heads_kv = int(case.get('heads_kv', case.get('heads', '1')))
    mask = case.get('mask', 'none')
    align = case.get('align', 'top_left')
    if mask.endswith('_bottom_right'):
        mask, align = mask[:-len('_bottom_right')], 'bottom_right'
    window = [int(w) for w in case.get('window', '-1,-1').split(',')]
    layout = case.get('layout', 'bshd')
    packing = case.get('packing', 'separate')
    thd_gap = int(case.get('thd_gap', '0'))
    page_size = int(case.get('page_size', '0'))
    training = case.get('backward', 'no') == 'yes'
    cp = int(case.get('cp', '1').split()[0])
    softmax = case.get('softmax', 'vanilla')
    bias = case.get('bias', 'none')
    alibi = case.get('alibi', 'no') == 'yes'
    unsupported_inputs = [k for k in ('softcap', 'stats', 'dlse') if k in case]
    sm = int(env.get('ATTNFUZZ_SELECTOR_SM', '0') or 0)
    cudnn = version_tuple(env.get('ATTNFUZZ_SELECTOR_CUDNN', ''))
    recipe = env.get('ATTNFUZZ_SELECTOR_FP8_RECIPE', 'delayed')
    deterministic = env.get('NVTE_ALLOW_NONDETERMINISTIC_ALGO', '1') == '0'
    fp8 = dtype == 'fp8_e4m3'
    causal = mask in ('causal', 'padding_causal')
    windowed = window != [-1, -1] and window != [-1, 0]

    c = Candidates()
    for name, var in (('flash', 'NVTE_FLASH_ATTN'), ('fused', 'NVTE_FUSED_ATTN'), ('unfused', 'NVTE_UNFUSED_ATTN')):
        if env.get(var) == '0':
            c.off(name, '%s=0' % var)

    # architecture
    if sm and sm < 80:
        c.off('flash', 'sm%d < sm80' % sm)
    if sm == 0:
        c.off('fused', 'needs an sm80+ GPU (arch unknown: no GPU)')
    elif sm < 80:
        c.off('fused', 'sm%d < sm80' % sm)

    # dtype and FP8 execution
    if dtype not in ('fp16', 'bf16', 'fp8_e4m3'):
        for name in ('flash', 'fused', 'unfused'):
            c.off(name, 'dtype %s is not one of TE\'s (fp16, bf16, fp8_e4m3)' % dtype)
    if fp8:
        if sm != 90:
            c.off('flash', 'fp8: only FlashAttention 3 serves it, on sm90 (%s)' % ('sm%d' % sm if sm else 'no GPU'))
        elif training:
            c.off('flash', 'fp8 training: FlashAttention 3 serves fp8 forward only')
        if env.get('NVTE_UnfusedDPA_Emulate_FP8', '0') != '1':
            c.off('unfused', 'fp8 attention (NVTE_UnfusedDPA_Emulate_FP8 is not 1)')
        if recipe == 'current':
            if sm < 100:
                c.off('fused', 'fp8 current scaling needs sm100+')
            elif cudnn is None or cudnn < (9, 14, 0):
                c.off('fused', 'fp8 current scaling needs cuDNN >= 9.14.0')
            elif deterministic and cudnn < (9, 18, 0):
                c.off('fused', 'deterministic fp8 current scaling needs cuDNN >= 9.18.0')

    # KV cache (paged)
    if page_size:
        if page_size < 256:
            c.off('flash', 'paged KV with page_size %d < 256 (FlashAttention 2)' % page_size)
        if sm == 89:
            c.off('fused', 'KV caching on sm89')
        if fp8:
            c.off('fused', 'fp8 KV caching')
            if layout != 'thd':
                c.off('flash', 'fp8 KV caching needs thd (FlashAttention 3)')

    # head dims
    if dqk != dv:
        if not fp8:
            c.off('flash', 'head_dim_qk %d != head_dim_v %d (FlashAttention 2 has no MLA)' % (dqk, dv))
        if packing != 'separate':
            c.off('fused', 'MLA (d_qk %d != d_v %d) with packing = %s' % (dqk, dv, packing))
    if not fp8:
        if dqk > 256 or dqk % 8 or (dqk > 192 and sm not in (0, 80, 90, 100, 120)):
            c.off('flash', 'head_dim_qk %d (FlashAttention 2: <= 256, %% 8, > 192 only on sm80/90/100/120)' % dqk)
    else:
        mla_ok = (128 < dqk <= 192 and 96 < dv <= 128) or (dqk <= 64 and dv <= 512)
        if dqk > 256 or heads_q % heads_kv or (dqk != dv and not mla_ok):
            c.off('flash', 'head dims %d, %d / heads %d, %d (FlashAttention 3)' % (dqk, dv, heads_q, heads_kv))
    if dqk > 256 or dv > 256 or dqk % 8 or dv % 8:
        c.off('fused', 'head dims %d, %d: cuDNN serves <= 256 and %% 8' % (dqk, dv))

    # layout
    if layout == 'thd':
        c.off('unfused', 'layout thd')
        if thd_gap:
            c.off('flash', 'thd with padding between sequences (thd_gap %d)' % thd_gap)

    # softmax type (attnfuzz: sinks)
    if softmax != 'vanilla':
        c.off('flash', 'softmax %s' % softmax)
        if fp8:
            c.off('fused', 'softmax %s with fp8' % softmax)
            c.off('unfused', 'softmax %s with fp8' % softmax)
        if layout == 'thd':
            c.off('fused', 'softmax %s with thd' % softmax)
            c.off('unfused', 'softmax %s with thd' % softmax)

    # context parallelism
    if cp > 1:
        c.off('unfused', 'context parallelism (cp %d)' % cp)
        for name in ('flash', 'fused'):
            if causal and align == 'bottom_right':
                c.off(name, 'context parallelism with a bottom-right causal mask')
            elif causal and sq != skv:
                c.off(name, 'context parallelism with causal cross-attention (s_q %d != s_kv %d)' % (sq, skv))
        if fp8:
            c.off('flash', 'context parallelism with fp8')
        for name in ('flash', 'fused'):
            c.off(name, 'cp %d: attnfuzz serves context parallelism through its cp wrapper only' % cp)

    # mask
    if causal and align == 'top_left' and sq != skv:
        c.off('flash', 'top-left causal mask with s_q %d != s_kv %d (flash has bottom-right only)' % (sq, skv))

    # window
    if windowed:
        if fp8:
            c.off('fused', 'sliding window with fp8')
        elif window[1] != 0 and not causal:
            c.off('fused', 'window %d,%d: cuDNN serves (left, 0) windows only' % (window[0], window[1]))
        elif sq > skv:
            c.off('fused', 'sliding window with s_q %d > s_kv %d' % (sq, skv))
        if align == 'top_left' and sq != skv:
            c.off('flash', 'top-left window with s_q %d != s_kv %d (flash aligns bottom-right)' % (sq, skv))

    # bias
    if bias != 'none':
        c.off('flash', 'bias %s (flash has ALiBi only)' % bias)
    if alibi and fp8:
        c.off('flash', 'ALiBi (FlashAttention 3)')
    if unsupported_inputs:
        for name in ('flash', 'fused', 'unfused'):
            c.off(name, 'TE has no %s input' % ', '.join(unsupported_inputs))

    # determinism
    if deterministic and training:
        if fp8:
            c.off('fused', 'deterministic fp8 training')
        if sm and sm < 90:
            c.off('fused', 'deterministic training below sm90')
        if sm >= 100:
            c.off('fused', 'deterministic training on sm100+')

    names = {'flash': 'flash_fp8' if fp8 else 'flash_ref', 'fused': 'cudnn', 'unfused': 'cpu'}
    order = ['fused', 'flash', 'unfused'] if sm >= 90 else ['flash', 'fused', 'unfused']
    for cand in order:
        if c.on(cand):
            return names[cand]
    return 'none: ' + '; '.join('%s: %s' % (names[n], c.why[n]) for n in ('flash', 'fused', 'unfused'))


def main():
    print(choose(read_case(sys.stdin.read()), os.environ))
    return 0


if __name__ == '__main__':
    sys.exit(main())
