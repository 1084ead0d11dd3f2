"""Triton kernels of the MXFP8 targets (triton_mxfp8.py): one forward attention kernel
over MXFP8 operands, decoded inside the kernel (E4M3 payload bytes and E8M0 scale
bytes -> bf16), scores in fp32, online softmax in fp32, P rounded to bf16 before P*V.

Hopper (the H200) has no MXFP8 tensor-core instruction and the CPU interpreter has none
either, so the kernel never uses tl.dot_scaled: it decodes and multiplies in bf16 on every
machine. What leaks is the recipe (which tokens share a V scale), not the instruction.

Key selection (PASS): 0 = every visible key; 1 = only keys whose 32-token block is
complete for the row (every existing token of the block visible); 2 = visible keys whose
block is not complete. Passes 1 and 2 partition pass 0, so their partials merge exactly
through their log-sum-exps (merge_partials)."""
import os

import torch
import triton
import triton.language as tl

MX_BLOCK = 32  # tokens (V) or channels (Q, K) that share one E8M0 scale


@triton.jit
def _decode_e4m3(byte):
    """OCP E4M3FN byte (uint8 tensor) -> float32 value, exact (0x7F / 0xFF are NaN)."""
    b = byte.to(tl.int32)
    e = (b >> 3) & 0xF
    m = (b & 0x7).to(tl.float32)
    normal = (1.0 + m * 0.125) * tl.exp2((e - 7).to(tl.float32))
    mag = tl.where(e == 0, m * 0.001953125, normal)  # subnormal: m * 2^-9
    mag = tl.where((e == 15) & (m == 7.0), float("nan"), mag)
    return tl.where((b & 0x80) != 0, -mag, mag)


@triton.jit
def _decode_e8m0(byte):
    """E8M0 scale byte -> 2^(byte - 127)."""
    return tl.exp2(byte.to(tl.float32) - 127.0)


@triton.jit
def _visible(rows, cols, len_q, len_kv, CAUSAL, BOTTOM_RIGHT, WL, WR):
    """plugin.h's mask rule: rows (M, 1), cols (1, N) -> (M, N) bool. CAUSAL and
    BOTTOM_RIGHT are runtime 0/1 integers (one compiled kernel serves every mask)."""
    diag = rows + BOTTOM_RIGHT * (len_kv - len_q)
    ok = (cols < len_kv) & (cols >= 0) & (rows < len_q)
    ok = ok & ((CAUSAL == 0) | (cols <= diag))
    ok = ok & ((WL < 0) | (cols >= diag - WL))
    ok = ok & ((WR < 0) | (cols <= diag + WR))
    return ok


# Every integer argument is a runtime value that Triton must not specialise on (it would
# otherwise compile a variant per "== 1" / "% 16 == 0" pattern of the shape): one compile
# per (head-dim bucket, PASS) serves every shape, mask and window.
RUNTIME_INTS = ["WL", "WR", "H", "GROUP", "S_Q", "S_KV", "QS_D", "VS_TOK", "VS_D", "DQK", "DV", "CAUSAL",
                "BOTTOM_RIGHT"]


@triton.jit(do_not_specialize=RUNTIME_INTS)
def mxfp8_fwd_kernel(q_ptr, qs_ptr, k_ptr, ks_ptr, v_ptr, vs_ptr, o_ptr, lse_ptr, lens_q_ptr, lens_kv_ptr,
                     sm_scale, WL, WR, H, GROUP, S_Q, S_KV, QS_D, VS_TOK, VS_D, DQK, DV, CAUSAL, BOTTOM_RIGHT,
                     D_QK: tl.constexpr, D_V: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     PASS: tl.constexpr,
                     V_TOK_GROUP: tl.constexpr, V_D_GROUP: tl.constexpr, DOT_T: tl.constexpr):
    """One program: BLOCK_M query rows of one (batch, query head).
    q (B, Hq, S_Q, DQK) uint8 E4M3, qs (B, Hq, S_Q, QS_D) E8M0 (blocks of 32 along d);
    k (B, Hkv, S_KV, DQK), ks (B, Hkv, S_KV, QS_D); v (B, Hkv, S_KV, DV) uint8 E4M3,
    vs (B, Hkv, VS_TOK, VS_D) E8M0: token s, channel d use vs[s // V_TOK_GROUP, d // V_D_GROUP];
    o (B, Hq, S_Q, DV) fp32, lse (B, Hq, S_Q) fp32 natural log. All contiguous.
    D_QK >= DQK and D_V >= DV are the compiled head-dim buckets (powers of two): channels
    past DQK / DV load as 0 (they add exact zeros to the dot) and are not stored.
    DOT_T: the operand type of tl.dot, bf16 when compiled; under the interpreter float32
    holding bf16 values (Triton 3.9's interpreter multiplies bf16 dot operands as their
    raw bit patterns; a product of two bf16 values is exact in fp32, so only the order of
    the fp32 accumulation can differ from a bf16 tensor-core dot)."""
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    hk = h // GROUP
    len_q = tl.load(lens_q_ptr + b)
    len_kv = tl.load(lens_kv_ptr + b)

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dq = tl.arange(0, D_QK)
    dv = tl.arange(0, D_V)
    q_base = (b * H + h) * S_Q
    kv_base = (b * (H // GROUP) + hk) * S_KV
    row_ok = rows < len_q
    dq_ok = dq < DQK
    dv_ok = dv < DV
    q_in = row_ok[:, None] & dq_ok[None, :]
    q_bytes = tl.load(q_ptr + (q_base + rows[:, None]) * DQK + dq[None, :], mask=q_in, other=0)
    q_sc = tl.load(qs_ptr + (q_base + rows[:, None]) * QS_D + dq[None, :] // 32, mask=q_in, other=127)
    q = (_decode_e4m3(q_bytes) * _decode_e8m0(q_sc)).to(tl.bfloat16).to(DOT_T)

    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, D_V), tl.float32)
    for start in range(0, S_KV, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        col_ok = cols < len_kv
        k_in = col_ok[:, None] & dq_ok[None, :]
        v_in = col_ok[:, None] & dv_ok[None, :]
        k_bytes = tl.load(k_ptr + (kv_base + cols[:, None]) * DQK + dq[None, :], mask=k_in, other=0)
        k_sc = tl.load(ks_ptr + (kv_base + cols[:, None]) * QS_D + dq[None, :] // 32, mask=k_in, other=127)
        k = (_decode_e4m3(k_bytes) * _decode_e8m0(k_sc)).to(tl.bfloat16).to(DOT_T)
        v_bytes = tl.load(v_ptr + (kv_base + cols[:, None]) * DV + dv[None, :], mask=v_in, other=0)
        vs_off = ((b * (H // GROUP) + hk) * VS_TOK + cols[:, None] // V_TOK_GROUP) * VS_D + dv[None, :] // V_D_GROUP
        v_sc = tl.load(vs_ptr + vs_off, mask=v_in, other=127)
        v = (_decode_e4m3(v_bytes) * _decode_e8m0(v_sc)).to(tl.bfloat16).to(DOT_T)

        s = tl.dot(q, tl.trans(k)).to(tl.float32) * sm_scale  # (BLOCK_M, BLOCK_N)
        vis = _visible(rows[:, None], cols[None, :], len_q, len_kv, CAUSAL, BOTTOM_RIGHT, WL, WR)
        if PASS != 0:
            first = (cols // 32) * 32
            last = tl.minimum(first + 31, len_kv - 1)
            complete = _visible(rows[:, None], first[None, :], len_q, len_kv, CAUSAL, BOTTOM_RIGHT, WL, WR) & \
                _visible(rows[:, None], last[None, :], len_q, len_kv, CAUSAL, BOTTOM_RIGHT, WL, WR)
            if PASS == 1:
                vis = vis & complete
            else:
                vis = vis & ~complete
        s = tl.where(vis, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16).to(DOT_T), v).to(tl.float32)
        m_i = m_new

    seen = l_i > 0
    o = tl.where(seen[:, None], acc / tl.where(seen, l_i, 1.0)[:, None], 0.0)
    lse = tl.where(seen, m_i + tl.log(tl.where(seen, l_i, 1.0)), float("-inf"))
    tl.store(o_ptr + (q_base + rows[:, None]) * DV + dv[None, :], o, mask=row_ok[:, None] & dv_ok[None, :])
    tl.store(lse_ptr + q_base + rows, lse, mask=row_ok)


def interpreted():
    """Triton runs its interpreter (TRITON_INTERPRET=1, the CPU mode)."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def mx_quantise(x, tok_group, d_group, rule="floor"):
    """x (B, H, S, D) float32 -> (payload (B, H, S, D) uint8 E4M3FN, scales uint8 E8M0 of
    shape (B, H, ceil(S / tok_group), ceil(D / d_group))): one scale per tok_group x
    d_group block, payload e4m3(x / scale) saturated to 448. The scale's rule:
      floor: 2^(floor(log2 amax) - 8), OCP MX v1.0 (and the harness's own, gen.c): the
             block's amax lands in [256, 512), so a value of mantissa 1.875 in the top
             binade saturates to 448;
      ceil:  2^ceil(log2(amax / 448)): the amax lands in (224, 448], nothing saturates."""
    B, H, S, D = x.shape
    St, Dt = -(-S // tok_group), -(-D // d_group)
    pad = torch.zeros((B, H, St * tok_group, Dt * d_group), dtype=torch.float32, device=x.device)
    pad[:, :, :S, :D] = x
    blocks = pad.view(B, H, St, tok_group, Dt, d_group)
    amax = blocks.abs().amax(dim=(3, 5))  # (B, H, St, Dt)
    safe = torch.where(amax > 0, amax, 1.0)
    e = torch.floor(torch.log2(safe)) - 8 if rule == "floor" else torch.ceil(torch.log2(safe / 448.0))
    e = torch.where(amax > 0, e, torch.zeros_like(e)).clamp(-127, 127)
    inv = torch.exp2(-e)[:, :, :, None, :, None]
    payload = (blocks * inv).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)
    payload = payload.view(B, H, St * tok_group, Dt * d_group)[:, :, :S, :D].contiguous()
    return payload, (e + 127).to(torch.uint8).contiguous()


def head_dim_bucket(d, device_type):
    """The compiled head dim for d (16..256, a power of two): on a GPU 64, 128 or 256, so
    that a campaign compiles at most three variants per operand instead of one per head
    dim; under the interpreter (nothing is compiled) d itself."""
    return d if device_type == "cpu" else max(64, d)


def attention(qp, qs, kp, ks, vp, vs, v_groups, problem, pass_kind):
    """Run mxfp8_fwd_kernel: (O (B, Hq, Sq, Dv) fp32, LSE (B, Hq, Sq) fp32)."""
    B, H, Sq, Dqk = qp.shape
    Skv, Dv = kp.shape[2], vp.shape[3]
    dev = qp.device
    o = torch.empty((B, H, Sq, Dv), dtype=torch.float32, device=dev)
    lse = torch.empty((B, H, Sq), dtype=torch.float32, device=dev)
    lens_q = torch.tensor(problem.seqlens_q, dtype=torch.int32, device=dev)
    lens_kv = torch.tensor(problem.seqlens_kv, dtype=torch.int32, device=dev)
    block_m = (16 if Sq <= 16 else 32) if dev.type == "cpu" else 64
    grid = (triton.cdiv(Sq, block_m), B * H)
    mxfp8_fwd_kernel[grid](qp, qs, kp, ks, vp, vs, o, lse, lens_q, lens_kv, problem.scale, problem.window_left,
                           problem.window_right, H, problem.group, Sq, Skv, qs.shape[3], vs.shape[2], vs.shape[3],
                           Dqk, Dv, int(bool(problem.causal)), int(problem.align == "bottom_right"),
                           D_QK=head_dim_bucket(Dqk, dev.type), D_V=head_dim_bucket(Dv, dev.type), BLOCK_M=block_m, BLOCK_N=32,
                           PASS=pass_kind, V_TOK_GROUP=v_groups[0],
                           V_D_GROUP=v_groups[1], DOT_T=tl.float32 if interpreted() else tl.bfloat16)
    return o, lse


def merge_partials(o1, lse1, o2, lse2):
    """Two attention partials over disjoint key sets -> the attention over their union:
    LSE = log(e^lse1 + e^lse2), O = O1 e^(lse1 - LSE) + O2 e^(lse2 - LSE); a row that
    neither saw stays O = 0, LSE = -inf."""
    lse = torch.logaddexp(lse1, lse2)
    dead = torch.isneginf(lse)
    safe = torch.where(dead, 0.0, lse)
    w1 = torch.where(dead, 0.0, torch.exp(lse1 - safe))[..., None]
    w2 = torch.where(dead, 0.0, torch.exp(lse2 - safe))[..., None]
    return o1 * w1 + o2 * w2, lse
