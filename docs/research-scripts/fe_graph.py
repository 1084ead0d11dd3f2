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
