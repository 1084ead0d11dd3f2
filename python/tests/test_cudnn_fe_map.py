"""cudnn_fe_map: a problem -> cudnn.sdpa_torch / flex_attn_func arguments, or a decline (no torch)."""
import unittest

from attnfuzz_worker import Decline
from attnfuzz_worker.examples import cudnn_fe_map
from problems import make


class CudnnFeMap(unittest.TestCase):
    def declines(self, problem, text):
        with self.assertRaises(Decline) as cm:
            cudnn_fe_map.plan(problem)
        self.assertIn(text, str(cm.exception))

    def test_plain_dense_sdpa(self):
        p = cudnn_fe_map.plan(make())
        self.assertEqual((p["engine"], p["entry"], p["inputs"]), ("sdpa", "sdpa_torch", "dense"))
        self.assertEqual(p["kwargs"], {"is_causal": False, "causal_bottom_right": False, "window_left": -1,
                                       "window_right": -1, "scale": 0.125, "return_lse": True})

    def test_left_window_is_the_cudnn_bound_counting_the_diagonal(self):
        # case window_left w = keys left of the diagonal; cuDNN's left bound w + 1 includes the diagonal
        a = cudnn_fe_map.sdpa_mask_args(make(window_left=0, window_right=0))
        self.assertEqual((a["window_left"], a["window_right"], a["is_causal"]), (1, 0, False))
        a = cudnn_fe_map.sdpa_mask_args(make(window_left=5, window_right=-1))
        self.assertEqual((a["window_left"], a["window_right"]), (6, -1))

    def test_causal_takes_the_right_bound_and_alignment_needs_a_band(self):
        a = cudnn_fe_map.sdpa_mask_args(make(mask="causal", window_left=3, window_right=9, align="bottom_right"))
        self.assertEqual(a, {"is_causal": True, "causal_bottom_right": True, "window_left": 4, "window_right": -1})
        # bottom-right without causal or a window: no band, the op refuses the flag
        a = cudnn_fe_map.sdpa_mask_args(make(align="bottom_right", seqlen_q=10, seqlen_kv=40))
        self.assertFalse(a["causal_bottom_right"])
        a = cudnn_fe_map.sdpa_mask_args(make(mask="causal", align="top_left"))
        self.assertFalse(a["causal_bottom_right"])

    def test_inputs_per_layout(self):
        self.assertEqual(cudnn_fe_map.plan(make(seqlens_q=[64, 3], seqlens_kv=[64, 64]))["inputs"], "dense_padded")
        thd = dict(ragged=True, layout="thd", seqlens_q=[17, 64], seqlens_kv=[17, 64])
        p = cudnn_fe_map.plan(make(case_extra={"thd_gap": 0}, **thd))
        self.assertEqual((p["engine"], p["inputs"]), ("sdpa", "thd"))
        # gaps between sequences cannot be said with cu_seqlens: packed, and the engine says so
        p = cudnn_fe_map.plan(make(case_extra={"thd_gap": 3}, **thd))
        self.assertEqual((p["engine"], p["inputs"]), ("sdpa+nogap", "thd_packed"))
        p = cudnn_fe_map.plan(make(engine="flex", case_extra={"thd_gap": 3}, **thd))
        self.assertEqual((p["engine"], p["inputs"]), ("flex+nogap", "thd_packed"))

    def test_declines(self):
        self.declines(make(paged=True, case_extra={"page_size": 16}), "paged K/V")
        self.declines(make(head_dim_qk=576, head_dim_v=512), "head dims up to 512")
        self.declines(make(dtype="mxfp8"), "fp16 and bf16")
        self.declines(make(engine="native"), "unknown engine 'native'")
        # d 512 (the FROST forward on SM90) is not declined here: the router decides
        self.assertEqual(cudnn_fe_map.plan(make(head_dim_qk=512, head_dim_v=512))["entry"], "sdpa_torch")

    def test_flex_plan_and_deterministic_flag(self):
        p = cudnn_fe_map.plan(make(engine="flex-det", mask="causal"))
        self.assertEqual((p["entry"], p["inputs"]), ("flex_attn_func", "bshd"))
        self.assertEqual(p["kwargs"], {"softmax_scale": 0.125, "deterministic": True, "return_lse": True})

    def test_flex_intervals_follow_the_case_rule(self):
        # bottom-right causal, s_q 2, s_kv 5: row 0 sees keys 0..3, row 1 keys 0..4
        rows = cudnn_fe_map.flex_intervals(make(batch=1, seqlen_q=2, seqlen_kv=5, mask="causal",
                                                align="bottom_right"))
        self.assertEqual(rows, [(0, 0, 4), (0, 0, 5)])
        # top-left window (1, 0), padded: row 2 of sequence 1 is past its length (empty), lengths bound keys
        rows = cudnn_fe_map.flex_intervals(make(batch=2, seqlen_q=3, seqlen_kv=3, seqlens_q=[3, 2],
                                                seqlens_kv=[3, 1], window_left=1, window_right=0))
        self.assertEqual(rows, [(0, 0, 1), (0, 0, 2), (0, 1, 3), (0, 0, 1), (0, 0, 1), (0, 0, 0)])
        # a fully masked row (bottom-right causal with s_q > s_kv) is empty
        rows = cudnn_fe_map.flex_intervals(make(batch=1, seqlen_q=3, seqlen_kv=1, mask="causal",
                                                align="bottom_right"))
        self.assertEqual(rows, [(0, 0, 0), (0, 0, 0), (0, 0, 1)])
        # thd: only the real rows, sequence after sequence
        rows = cudnn_fe_map.flex_intervals(make(batch=2, seqlen_q=3, seqlen_kv=3, seqlens_q=[1, 2],
                                                seqlens_kv=[1, 2], ragged=True, layout="thd", mask="causal"))
        self.assertEqual(rows, [(0, 0, 1), (0, 0, 1), (0, 0, 2)])


if __name__ == "__main__":
    unittest.main()
