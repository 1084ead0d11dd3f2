"""Problems for the mapping tests, built as the C side sends them (docs/worker-protocol.md,
"problem"): make(**fields) starts from a small fp16 forward case and overrides fields;
case_text extras (page_size, page_tail, thd_gap) go into the canonical case text; engine is
what a run request names."""
from attnfuzz_worker import Problem


def make(case_extra=None, engine="", **fields):
    p = {"dtype": "bf16", "batch": 2, "heads_q": 4, "heads_kv": 4, "seqlen_q": 64, "seqlen_kv": 64,
         "head_dim_qk": 64, "head_dim_v": 64, "mask": "none", "align": "top_left", "window_left": -1,
         "window_right": -1, "scale": 0.125, "backward": False, "padded": False, "ragged": False, "paged": False,
         "layout": "bshd", "packing": "separate", "cp_size": 1, "features": [], "dropout_p": 0.0}
    p.update(fields)
    p.setdefault("seqlens_q", [p["seqlen_q"]] * p["batch"])
    p.setdefault("seqlens_kv", [p["seqlen_kv"]] * p["batch"])
    lines = ["dtype = %s" % p["dtype"], "layout = %s" % p["layout"]]
    lines += ["%s = %s" % kv for kv in (case_extra or {}).items()]
    p["case"] = "\n".join(lines) + "\n"
    problem = Problem(p)
    problem.engine = engine  # the worker sets it from the run request
    return problem
