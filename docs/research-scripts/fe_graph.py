"""fe_graph.py — the one piece the bare cuDNN scripts here share (no attnfuzz): build a
cudnn-frontend pygraph's plans (heuristics A, then the fallback), give it a workspace, run it
on the tensors of `pack` and wait for it."""
import torch


def execute(cudnn, g, pack, handle):
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    ws = torch.empty(g.get_workspace_size(), device="cuda", dtype=torch.uint8)
    g.execute(pack, ws, handle=handle)
    torch.cuda.synchronize()


def sdpa_forward(cudnn, g, pack, handle, kw, o, stats):
    """g.sdpa(**kw) with O written into o and the Stats (natural-log LSE, FLOAT) into stats
    ([b, h, s_q, 1]), run; returns O and the LSE as float64 ([b, h, s_q, d], [b, h, s_q])."""
    to, ts = g.sdpa(**kw)
    to.set_output(True).set_dim(list(o.shape)).set_stride(list(o.stride()))
    ts.set_output(True).set_data_type(cudnn.data_type.FLOAT).set_dim(list(stats.shape)).set_stride(
        list(stats.stride()))
    pack[to], pack[ts] = o, stats
    execute(cudnn, g, pack, handle)
    return o.double(), stats[..., 0].double()


def bind(g, pack, x):
    """A graph tensor like torch tensor x, bound to it in pack (the graph's variant pack)."""
    t = g.tensor_like(x)
    pack[t] = x
    return t
