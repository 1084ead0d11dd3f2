"""cudnn_thd_unaligned_hang.py [driver | VARIANT] — a bare check (no attnfuzz) of the cuDNN
SDPA forward that attnfuzz saw hang (docs/cudnn-findings.md, "H1"): the capacity probe's
enlarged case of campaign bucket 9d325e1a036c, fp16, packed (thd, ragged offsets) Q, K, V, O
and Stats, heads 2 over 1 (GQA), d 32, maximum lengths s_q = s_kv = 65 with actual lengths
1 (seq_len_q / seq_len_kv, a padding mask), 64 unused tokens after the sequence, a token row
one element longer than its heads (Q's row 2 x 32 + 1 = 65 elements, K's and V's 33: rows
not 16-byte aligned), causal bottom-right with the band's left bound 1 (one key: the
diagonal), scale 0.01, batch 1.

The graph is built with cudnn-frontend's graph API (heuristics A, then the fallback) and
every plan it ranks is built and run in turn, each start and end printed at once, so that a
plan that never returns is named by the last "start" line. The driver runs each variant in
its own process with a timeout: the mirror of attnfuzz's case (GAP 1) and the control with
aligned rows (GAP 0). A variant's process that outlives its timeout has hung in the plan it
last started. Needs the nvidia-cudnn-frontend wheel and torch with CUDA. Exit 0 always: it
reports.
"""
import subprocess
import sys

VARIANTS = {  # name: (S max, gap after each token row, unused tokens after the sequence)
    "mirror": (65, 1, 64),
    "aligned": (65, 0, 64),
}
TIMEOUT_S = 50


def run_variant(name):
    import torch
    import cudnn

    dev = "cuda"
    S, gap, thd_gap = VARIANTS[name]
    hq, hk, d, scale = 2, 1, 32, 0.01
    tq, tk = hq * d + gap, hk * d + gap  # token row strides (elements)
    ntok = 1 + thd_gap  # the sequence's one token, then the unused ones
    torch.manual_seed(1)
    qbuf = torch.randn(ntok * tq + 64, device=dev).half()
    kbuf = torch.randn(ntok * tk + 64, device=dev).half()
    vbuf = torch.randn(ntok * tk + 64, device=dev).half()
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device=dev)  # noqa: E731
    rq, rk, rs = i32([0, ntok * tq]), i32([0, ntok * tk]), i32([0, ntok * hq])
    lens = i32([1])
    handle = cudnn.create_handle()
    print("cudnn backend %s; variant %s: S %d, token rows %d / %d elements, %d unused tokens" %
          (cudnn.backend_version(), name, S, tq, tk, thd_gap), flush=True)

    def graph():
        g = cudnn.pygraph(io_data_type=cudnn.data_type.HALF, intermediate_data_type=cudnn.data_type.FLOAT,
                          compute_data_type=cudnn.data_type.FLOAT, handle=handle)
        idx = lambda nm: g.tensor(name=nm, dim=[2, 1, 1, 1], stride=[1, 1, 1, 1],  # noqa: E731
                                  data_type=cudnn.data_type.INT32)
        Rq, Rk, Rv, Ro, Rs = idx("rq"), idx("rk"), idx("rv"), idx("ro"), idx("rs")
        q = g.tensor(name="q", dim=[1, hq, S, d], stride=[S * tq, d, tq, 1], data_type=cudnn.data_type.HALF,
                     ragged_offset=Rq)
        k = g.tensor(name="k", dim=[1, hk, S, d], stride=[S * tk, d, tk, 1], data_type=cudnn.data_type.HALF,
                     ragged_offset=Rk)
        v = g.tensor(name="v", dim=[1, hk, S, d], stride=[S * tk, d, tk, 1], data_type=cudnn.data_type.HALF,
                     ragged_offset=Rv)
        sq = g.tensor(name="seq_q", dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=cudnn.data_type.INT32)
        skv = g.tensor(name="seq_kv", dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=cudnn.data_type.INT32)
        o, st = g.sdpa(name="sdpa", q=q, k=k, v=v, generate_stats=True, attn_scale=scale, use_padding_mask=True,
                       seq_len_q=sq, seq_len_kv=skv, diagonal_alignment=cudnn.diagonal_alignment.BOTTOM_RIGHT,
                       diagonal_band_left_bound=1, diagonal_band_right_bound=0)
        o.set_output(True).set_dim([1, hq, S, d]).set_stride([S * tq, d, tq, 1]).set_ragged_offset(Ro)
        st.set_output(True).set_data_type(cudnn.data_type.FLOAT).set_dim([1, hq, S, 1]).set_stride(
            [S * hq, 1, hq, 1]).set_ragged_offset(Rs)
        return g, (q, k, v, o, st, Rq, Rk, Rv, Ro, Rs, sq, skv)

    g, (q, k, v, o, st, Rq, Rk, Rv, Ro, Rs, sq, skv) = graph()
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    n = g.get_execution_plan_count()
    print("%d plan(s)" % n, flush=True)
    for i in range(n):
        try:
            pname = g.get_plan_name_at_index(i)
        except Exception as e:  # noqa: BLE001 - a name is only a label
            pname = "? (%s)" % str(e).splitlines()[0][:80]
        obuf = torch.full((ntok * tq + 64,), float("nan"), device=dev).half()
        sbuf = torch.full((ntok * hq + 16,), float("nan"), device=dev)
        pack = {q: qbuf, k: kbuf, v: vbuf, o: obuf, st: sbuf, Rq: rq, Rk: rk, Rv: rk, Ro: rq, Rs: rs, sq: lens,
                skv: lens}
        try:
            g.build_plan_at_index(i)
            ws = torch.empty(max(g.get_workspace_size_plan_at_index(i), 1), device=dev, dtype=torch.uint8)
        except Exception as e:  # noqa: BLE001 - a plan that does not build is a result too
            print("plan %d %s: not built: %s" % (i, pname, str(e).splitlines()[0][:160]), flush=True)
            continue
        print("plan %d %s: start" % (i, pname), flush=True)
        g.execute_plan_at_index(pack, ws, i, handle=handle)
        torch.cuda.synchronize()
        # one key visible: O's row of head h is V's row of its kv head, LSE = scale q.k
        ref_o = vbuf[:d].double()
        err = max((obuf[h * d:(h + 1) * d].double() - ref_o).abs().max().item() for h in range(hq))
        ref_l = [scale * (qbuf[h * d:(h + 1) * d].double() @ kbuf[:d].double()).item() for h in range(hq)]
        lse = [sbuf[h].item() for h in range(hq)]
        print("plan %d %s: done, max |O - V| %.3g, LSE %s vs %s" % (i, pname, err, lse,
                                                                    ["%.6f" % x for x in ref_l]), flush=True)


def driver():
    for name in VARIANTS:
        try:
            out = subprocess.run([sys.executable, sys.argv[0], name], capture_output=True, text=True,
                                 timeout=TIMEOUT_S)
            print(out.stdout, end="")
            tail = [ln for ln in out.stderr.splitlines() if ln.strip()][-3:]
            print("variant %s: exit %d%s" % (name, out.returncode, (" | " + " | ".join(tail)) if tail else ""))
        except subprocess.TimeoutExpired as e:
            text = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            print(text, end="")
            print("variant %s: HUNG, no exit within %d s (the last 'start' above never returned)" %
                  (name, TIMEOUT_S))


if len(sys.argv) > 1 and sys.argv[1] in VARIANTS:
    run_variant(sys.argv[1])
else:
    driver()
