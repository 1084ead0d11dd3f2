"""A request's engine runs up to its first '+': a reproducer that names the engine as a
reply gave it ("dense+lse32") replays that engine (docs/worker-protocol.md, run)."""
import unittest

from attnfuzz_worker.worker import Worker

PROBLEM = {"dtype": "fp16", "batch": 1, "heads_q": 1, "heads_kv": 1, "seqlen_q": 4, "seqlen_kv": 4,
           "head_dim_qk": 8, "head_dim_v": 8, "mask": "none", "backward": False}


class EngineAnnotation(unittest.TestCase):
    def run_engine(self, engine):
        w = Worker(kernel=None, name="t", mode="python")
        seen = []
        w._run_python = lambda msg, problem: seen.append(problem.engine)
        reply = w.run({"type": "run", "engine": engine, "problem": PROBLEM, "transport": "shm"})
        return seen[0], reply

    def test_annotation_is_dropped_before_the_run(self):
        self.assertEqual(self.run_engine("dense+lse32")[0], "dense")
        self.assertEqual(self.run_engine("default+xfail-bwd-local")[0], "default")

    def test_plain_and_empty_engines_are_kept(self):
        self.assertEqual(self.run_engine("sdpa")[0], "sdpa")
        self.assertEqual(self.run_engine("")[0], "")


if __name__ == "__main__":
    unittest.main()
