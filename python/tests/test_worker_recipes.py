"""The hello's "recipes" list (docs/worker-protocol.md): a worker lists the kernel roundings it
declares, FlashInfer's worker lists lse_rowsum_dtype_p, a worker without any sends no list."""
import ast
import os
import unittest

from attnfuzz_worker import Worker
from attnfuzz_worker.examples import flashinfer_map as fm

HELLO = {"type": "hello", "protocol": 1, "shm_fd": 3}


class Recipes(unittest.TestCase):
    def test_a_worker_lists_its_recipes(self):
        w = Worker(lambda *a, **k: None, "x", mode="python", recipes=("lse_rowsum_dtype_p",))
        reply = w.hello(HELLO)
        self.assertEqual(reply["type"], "hello")
        self.assertEqual(reply["recipes"], ["lse_rowsum_dtype_p"])

    def test_a_worker_without_recipes_sends_no_list(self):
        reply = Worker(lambda *a, **k: None, "x", mode="python").hello(HELLO)
        self.assertNotIn("recipes", reply)

    def test_flashinfer_declares_the_row_sum_of_rounded_p(self):
        self.assertEqual(fm.RECIPES, ("lse_rowsum_dtype_p",))
        # the worker passes them to serve(): the call's recipes keyword is fm.RECIPES
        path = os.path.join(os.path.dirname(fm.__file__), "flashinfer_attn.py")
        tree = ast.parse(open(path).read())
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "serve"]
        self.assertEqual(len(calls), 1)
        kw = {k.arg: k.value for k in calls[0].keywords}
        self.assertIn("recipes", kw)
        self.assertEqual(ast.unparse(kw["recipes"]), "fm.RECIPES")
        reply = Worker(lambda *a, **k: None, "flashinfer", mode="python", recipes=fm.RECIPES).hello(HELLO)
        self.assertEqual(reply["recipes"], ["lse_rowsum_dtype_p"])

    def test_flashinfer_declares_it_for_the_prefill_calls_only(self):
        # measured on the prefill kinds (single, ragged, paged); decode's reply narrows to none
        for kind, want in (("single", ["lse_rowsum_dtype_p"]), ("ragged", ["lse_rowsum_dtype_p"]),
                           ("paged", ["lse_rowsum_dtype_p"]), ("decode", [])):
            self.assertEqual(fm.call_recipes({"kind": kind}), want, kind)
        path = os.path.join(os.path.dirname(fm.__file__), "flashinfer_attn.py")
        self.assertIn("problem.recipes = fm.call_recipes(call)", open(path).read())


if __name__ == "__main__":
    unittest.main()
