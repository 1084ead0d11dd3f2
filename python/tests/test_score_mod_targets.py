"""score_mod (torch Flex's named nonlinear score modifiers, oracle/feature_spec.h) in the
worker targets: the pure-Python reference and the flex-attention worker map each name to a
function of their own; every mapped library target (fa4, cudnn-fe, sage, flashinfer) declines
a score_mod with a reason that names it, and a problem without one is not declined for it."""
import math
import unittest

from attnfuzz_worker import Decline
from attnfuzz_worker.examples import cudnn_fe_map, fa4_map, flashinfer_map, reference_py, sage_map
from attnfuzz_worker.examples import flex_attention
from problems import make

NAMES = ("squared", "trig", "trig2")


def reason_of(target, problem):
    """The decline reason of a mapped target for problem, or None when it plans a call."""
    try:
        if target == "fa4":
            fa4_map.plan(problem, 90)
            return None
        if target == "cudnn-fe":
            cudnn_fe_map.plan(problem)
            return None
    except Decline as e:
        return str(e)
    plan = sage_map.plan if target == "sage" else flashinfer_map.plan
    return plan(problem)[1]


class ScoreModTargets(unittest.TestCase):
    def test_mapped_targets_decline_it(self):
        for target in ("fa4", "cudnn-fe", "sage", "flashinfer"):
            self.assertNotIn("score_mod", reason_of(target, make(head_dim_qk=128, head_dim_v=128)) or "", target)
            for name in NAMES:
                why = reason_of(target, make(head_dim_qk=128, head_dim_v=128, score_mod=name))
                self.assertIsNotNone(why, "%s serves score_mod %s" % (target, name))
                self.assertIn("score_mod", why)
                self.assertIn(name, why)

    def test_problem_carries_the_name(self):
        self.assertEqual(make().score_mod, "none")  # an older harness sends none
        self.assertEqual(make(score_mod="trig2").score_mod, "trig2")

    def test_reference_forms(self):
        p = make(score_mod="none", scale=0.5)
        q, k = [1.5, -0.25], [[1.0, 2.0], [-3.0, 0.5]]
        r = [0.5 * (1.5 * 1.0 - 0.25 * 2.0), 0.5 * (1.5 * -3.0 - 0.25 * 0.5)]
        self.assertEqual(reference_py.scores(q, k, 0, 1, p, 0), (r, [1.0, 1.0]))
        want = {"squared": lambda x, b: (x * x, 2 * x),
                "trig": lambda x, b: (math.sin(math.cos(x)) + math.tan(b), -math.sin(x) * math.cos(math.cos(x))),
                "trig2": lambda x, b: (math.cos(x) * math.sin(x) + math.tan(b), math.cos(x) ** 2 - math.sin(x) ** 2)}
        for name in NAMES:
            p.score_mod = name
            s, d = reference_py.scores(q, k, 0, 1, p, 3)
            for j in range(2):
                f, df = want[name](r[j], 3)
                self.assertAlmostEqual(s[j], f, places=14)
                self.assertAlmostEqual(d[j], df, places=14)
                # the derivative is f''s: a central difference of f agrees
                h = 1e-6
                fd = (want[name](r[j] + h, 3)[0] - want[name](r[j] - h, 3)[0]) / (2 * h)
                self.assertAlmostEqual(d[j], fd, places=6)

    def test_named_forms_only(self):
        for mod in (reference_py, flex_attention):
            self.assertEqual(sorted(mod.SCORE_MODS), sorted(NAMES))
            self.assertIsNone(mod.supports(make(score_mod="trig")))
            why = mod.supports(make(score_mod="lambda s: s"))
            self.assertIn("score_mod", why or "")
        self.assertIn("score_mod", reference_py.FEATURES)
        self.assertIn("score_mod", flex_attention.features())

    def test_flex_tan_of_the_batch_is_fp32(self):
        # the flex worker's functions on a stand-in for torch (no torch here): tan must get the
        # batch index as float32 whatever the score's dtype (the eager path hands the score in
        # the input dtype; a tan(1) rounded to fp16 moved the LSE by 2.09e-4 on CPU, torch 2.15)
        import sys
        import types

        class T:
            def __init__(self, dtype):
                self.dtype = dtype

            def to(self, dtype):
                return T(dtype)

            def __add__(self, other):
                return T(self.dtype)

            __mul__ = __add__

        seen = []
        fake = types.ModuleType("torch")
        fake.float32, fake.float16 = "float32", "float16"
        fake.sin = fake.cos = lambda x: T(x.dtype)
        fake.tan = lambda x: seen.append(x.dtype) or T(x.dtype)
        saved = sys.modules.get("torch")
        sys.modules["torch"] = fake
        try:
            for name in ("trig", "trig2"):
                del seen[:]
                flex_attention.SCORE_MODS[name](T("float16"), T("int32"), None, None, None)
                self.assertEqual(seen, ["float32"], name)
        finally:
            if saved is None:
                del sys.modules["torch"]
            else:
                sys.modules["torch"] = saved

if __name__ == "__main__":
    unittest.main()
