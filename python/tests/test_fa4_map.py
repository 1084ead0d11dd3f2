"""fa4_map: a problem -> FlashAttention 4's entry point and arguments, or a decline (no torch)."""
import unittest

from attnfuzz_worker import Decline
from attnfuzz_worker.examples import fa4_map
from problems import make

SM90 = 90


class Fa4Map(unittest.TestCase):
    def declines(self, problem, text, arch=SM90):
        with self.assertRaises(Decline) as cm:
            fa4_map.plan(problem, arch)
        self.assertIn(text, str(cm.exception))
        return str(cm.exception)

    def test_plain_dense_goes_to_flash_attn_func_with_scale_and_lse(self):
        p = fa4_map.plan(make(), SM90)
        self.assertEqual(p["entry"], "flash_attn_func")
        self.assertEqual(p["inputs"], "dense")
        self.assertFalse(p["seqused"])
        self.assertEqual(p["kwargs"], {"softmax_scale": 0.125, "causal": False, "window_size": (None, None),
                                       "deterministic": False, "return_lse": True})
        self.assertEqual(p["engine"], "default")

    def test_deterministic_engine_sets_the_flag(self):
        p = fa4_map.plan(make(engine="deterministic"), SM90)
        self.assertTrue(p["kwargs"]["deterministic"])
        self.declines(make(engine="fast"), "unknown engine 'fast'")

    def test_bottom_right_causal_and_windows_pass_unchanged(self):
        p = fa4_map.plan(make(mask="causal", align="bottom_right", seqlen_q=33, seqlen_kv=77), SM90)
        self.assertEqual((p["kwargs"]["causal"], p["kwargs"]["window_size"]), (True, (None, None)))
        # a window left of the diagonal and right of it: both inclusive, as the case model counts them
        p = fa4_map.plan(make(align="bottom_right", window_left=5, window_right=3, seqlen_q=33, seqlen_kv=77), SM90)
        self.assertEqual((p["kwargs"]["causal"], p["kwargs"]["window_size"]), (False, (5, 3)))
        # causal with a right window: FA4's causal is right = 0, so only the left is passed
        p = fa4_map.plan(make(mask="causal", window_left=7, window_right=4), SM90)
        self.assertEqual((p["kwargs"]["causal"], p["kwargs"]["window_size"]), (True, (7, None)))
        p = fa4_map.plan(make(window_left=-1, window_right=0), SM90)
        self.assertEqual(p["kwargs"]["window_size"], (None, 0))

    def test_top_left_band_served_only_where_the_alignments_agree(self):
        fa4_map.plan(make(mask="causal", align="top_left"), SM90)  # len_q == len_kv: same diagonal
        why = self.declines(make(mask="causal", align="top_left", seqlen_q=32, seqlen_kv=64),
                            "fa4 aligns causal masks and windows bottom-right")
        self.assertIn("len_q 32 != len_kv 64 in sequence 0", why)
        # padded: the per-sequence lengths decide, not the maxima
        self.declines(make(window_left=4, seqlens_q=[64, 10], seqlens_kv=[64, 20]), "in sequence 1")
        # no band: alignment does not matter, top-left with s_q != s_kv runs
        self.assertEqual(fa4_map.plan(make(seqlen_q=32, seqlen_kv=64), SM90)["inputs"], "dense")

    def test_padded_dense_goes_to_varlen_with_seqused(self):
        p = fa4_map.plan(make(seqlens_q=[64, 9], seqlens_kv=[64, 30]), SM90)
        self.assertEqual((p["entry"], p["inputs"], p["seqused"]), ("flash_attn_varlen_func", "dense_seqused", True))

    def test_thd_uses_seqused_only_when_the_case_has_gaps(self):
        p = fa4_map.plan(make(ragged=True, layout="thd", seqlens_q=[17, 64], seqlens_kv=[17, 64],
                              case_extra={"thd_gap": 0}), SM90)
        self.assertEqual((p["entry"], p["inputs"], p["seqused"]), ("flash_attn_varlen_func", "thd", False))
        p = fa4_map.plan(make(ragged=True, layout="thd", seqlens_q=[17, 64], seqlens_kv=[17, 64],
                              case_extra={"thd_gap": 3}), SM90)
        self.assertTrue(p["seqused"])

    def test_paged_forward_and_the_tma_page_tail_contract(self):
        paged = dict(paged=True, seqlen_q=32, seqlen_kv=256, seqlens_q=[32, 5], seqlens_kv=[256, 77],
                     head_dim_qk=128, head_dim_v=128)
        p = fa4_map.plan(make(case_extra={"page_size": 64, "page_tail": "nan"}, **paged), SM90)
        self.assertEqual((p["inputs"], p["seqused"]), ("paged", True))
        # page_size = the d128 key tile (128): TMA pages, whose tails FA4 requires finite
        self.declines(make(case_extra={"page_size": 128, "page_tail": "nan"}, **paged), "must be finite")
        self.assertEqual(fa4_map.plan(make(case_extra={"page_size": 128, "page_tail": "finite"}, **paged),
                                      SM90)["inputs"], "paged")

    def test_thd_queries_over_paged_kv_declined(self):
        self.declines(make(paged=True, ragged=True, seqlen_q=8, seqlen_kv=64, seqlens_q=[8, 3], seqlens_kv=[64, 20],
                           case_extra={"page_size": 16, "thd_gap": 2}), "ragged (thd) queries with paged")

    def test_head_dims_per_arch(self):
        self.declines(make(head_dim_qk=512, head_dim_v=512), "head dims 8..256")
        self.declines(make(head_dim_qk=72, head_dim_v=68), "multiples of 8")
        self.assertEqual(fa4_map.plan(make(head_dim_qk=256, head_dim_v=256), SM90)["entry"], "flash_attn_func")
        self.declines(make(head_dim_qk=256, head_dim_v=128), "SM100/SM110", arch=100)
        fa4_map.plan(make(head_dim_qk=192, head_dim_v=128), 100)

    def test_dtype_and_dropout_declined(self):
        self.declines(make(dtype="fp8_e4m3"), "fp16 and bf16")
        self.declines(make(dropout_p=0.1), "no dropout")

    def test_expected_failure_cells_run_and_are_tagged(self):
        p = fa4_map.plan(make(backward=True, head_dim_qk=256, head_dim_v=256), SM90)
        self.assertEqual(p["engine"], "default+xfail-bwd-hdim>192")
        p = fa4_map.plan(make(backward=True, heads_q=8, heads_kv=2, head_dim_qk=128, head_dim_v=64), SM90)
        self.assertEqual(p["engine"], "default+xfail-bwd-gqa-dqk!=dv")
        p = fa4_map.plan(make(backward=True, mask="causal", window_left=16), SM90)
        self.assertEqual(p["engine"], "default+xfail-bwd-local")
        # plain causal is not local; forward cells carry no tag; other arches no tag
        self.assertEqual(fa4_map.plan(make(backward=True, mask="causal"), SM90)["engine"], "default")
        self.assertEqual(fa4_map.plan(make(head_dim_qk=256, head_dim_v=256), SM90)["engine"], "default")
        self.assertEqual(fa4_map.plan(make(backward=True, head_dim_qk=256, head_dim_v=256), 100)["engine"], "default")

    def test_sm90_tile_n(self):
        self.assertEqual(fa4_map.sm90_tile_n(64, 64, False, False), 128)
        self.assertEqual(fa4_map.sm90_tile_n(96, 96, False, False), 144)
        self.assertEqual(fa4_map.sm90_tile_n(96, 96, True, False), 128)
        self.assertEqual(fa4_map.sm90_tile_n(192, 192, False, False), 112)
        self.assertEqual(fa4_map.sm90_tile_n(192, 128, False, True), 96)
        self.assertEqual(fa4_map.sm90_tile_n(256, 256, False, False), 80)
        self.assertEqual(fa4_map.sm90_tile_n(256, 256, False, True), 64)


if __name__ == "__main__":
    unittest.main()
