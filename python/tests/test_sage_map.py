"""sage_map: what SageAttention 1.0.6 serves and its call arguments; the package's paging
(pure Python; run by ci/tests/test_serving_targets.sh)."""
import unittest

from attnfuzz_worker.examples import sage_map as sm
from attnfuzz_worker.worker import paging_of
from test_flashinfer_map import problem


class Sage(unittest.TestCase):
    def test_default_engine(self):
        self.assertEqual(sm.default_engine(problem()), "dense")
        self.assertEqual(sm.default_engine(problem(padded=True)), "varlen")
        self.assertEqual(sm.default_engine(problem(ragged=True)), "varlen")

    def test_dense_causal_call(self):
        call, why = sm.plan(problem(mask="causal", seqlen_q=256, seqlen_kv=256))
        self.assertIsNone(why)
        self.assertEqual(call, {"engine": "dense", "is_causal": True, "sm_scale": 0.088388})

    def test_varlen_call(self):
        p = problem(batch=2, seqlens_q=[5, 8], seqlens_kv=[5, 8], padded=True, mask="causal", head_dim_qk=64,
                    head_dim_v=64)
        call, why = sm.plan(p)
        self.assertIsNone(why)
        self.assertEqual((call["cu_seqlens_q"], call["cu_seqlens_k"], call["max_seqlen_q"], call["max_seqlen_k"]),
                         ([0, 5, 13], [0, 5, 13], 8, 8))

    def test_declines(self):
        cases = [(problem(dtype="mxfp8"), "", "fp16 and bf16"), (problem(backward=True), "", "forward only"),
                 (problem(head_dim_qk=32, head_dim_v=32), "", "head_dim 32 (it takes 64, 96, 128)"),
                 (problem(head_dim_qk=96, head_dim_v=96), "varlen", "head_dim 96 (it takes 64, 128)"),
                 (problem(head_dim_v=64), "", "head_dim_v 64 != head_dim_qk 128"),
                 (problem(window_left=4), "", "no sliding window"), (problem(window_right=0), "", "no sliding window"),
                 (problem(padded=True), "dense", "runs on the varlen engine"),
                 (problem(mask="causal", seqlen_q=4), "dense", "causal needs qo_len == kv_len"),
                 (problem(batch=2, seqlens_q=[8, 3], padded=True, mask="causal"), "", "sequence 1: 3, 8"),
                 (problem(), "int4", "unknown engine")]
        for p, engine, want in cases:
            call, why = sm.plan(p, engine)
            self.assertIsNone(call, want)
            self.assertIn(want, why)
        self.assertEqual(sm.plan(problem(head_dim_qk=96, head_dim_v=96))[1], None)  # dense takes 96

    def test_score_features_declined_when_present(self):
        p = problem()
        p.softcap = 20.0
        self.assertIn("soft cap", sm.plan(p)[1])
        p = problem()
        p.softmax = "learnable"
        self.assertIn("sinks", sm.plan(p)[1])


class Paging(unittest.TestCase):
    def test_paging_of_a_request(self):
        k = {"buffer": "k", "page_size": 16, "pages_per_seq": 2, "page_table": [3, 1, 0, 2], "shape": [2, 2, 32, 64]}
        self.assertEqual(paging_of({"k": k}), {"page_size": 16, "pages_per_seq": 2, "page_table": [3, 1, 0, 2]})
        self.assertIsNone(paging_of({"k": {"buffer": "k"}}))
        self.assertIsNone(paging_of({}))


if __name__ == "__main__":
    unittest.main()
