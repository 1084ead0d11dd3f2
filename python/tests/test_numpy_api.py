"""mode="numpy" and attnfuzz_worker.testing (ci/tests/test_numpy_api.sh runs this with the
attnfuzz binary in $ATTNFUZZ_BIN; without numpy or the binary the tests skip)."""
import os
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:
    np = None

from attnfuzz_worker import storage as st
from attnfuzz_worker.host_tensor import HostTensor
from attnfuzz_worker.worker import Worker, write_outputs

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KERNEL = os.path.join(HERE, "numpy_kernel.py")
TINY = ("causal-gqa.case", "paged-kv.case", "thd-ragged.case")  # corpora/quickstart cases


class FakeProblem:
    def __init__(self, seqlens):
        self.seqlens_q = self.seqlens_kv = seqlens


def tensor(storage, shape, values=None):
    """A plain (B, H, S, D) HostTensor over a fresh bytearray (bshd strides)."""
    B, H, S, D = shape
    elem = st.ELEM_BYTES[storage]
    n = B * H * S * D
    desc = {"storage": storage, "shape": list(shape), "strides": [S * H * D, D, H * D, 1], "offset": 0,
            "buffer_elems": n}
    region = bytearray(n * elem)
    t = HostTensor("x", desc, region, 0)
    for i, value in enumerate(values or []):
        st.store(storage, region, i * elem, value)
    return t


@unittest.skipIf(np is None, "numpy is not installed")
class NumpyMapTest(unittest.TestCase):
    def test_bf16_values_arrive_exact_in_float32_past_length_zero(self):
        from attnfuzz_worker.numpy_map import host_array

        # bf16 values no float16 holds (1e30, 2^-130) and one that rounds (1/3)
        vals = [1e30, 2.0 ** -130, 1 / 3, -7.5] * 4
        t = tensor("bf16", (2, 1, 4, 2), vals)
        a = host_array(t, [3, 4])
        self.assertEqual(a.dtype, np.float32)
        self.assertEqual(a.shape, (2, 1, 4, 2))
        want = [struct.unpack("<f", struct.pack("<I", struct.unpack("<H", t.region[2 * i:2 * i + 2])[0] << 16))[0]
                for i in range(16)]
        self.assertEqual(a[0, 0, :3].ravel().tolist(), want[:6])
        self.assertEqual(a[1, 0].ravel().tolist(), want[8:16])
        self.assertEqual(a[0, 0, 3].tolist(), [0.0, 0.0])  # past seqlens[0] = 3

    def test_lse_past_length_is_minus_inf(self):
        from attnfuzz_worker.numpy_map import host_array

        t = tensor("f32", (1, 1, 3, 1), [0.5, 1.5, 2.5])
        self.assertEqual(host_array(t, [2], lse=True).tolist(), [[[0.5, 1.5, -np.inf]]])

    def test_arrays_are_written_as_lists_are(self):
        out_list = tensor("f16", (1, 2, 2, 3))
        out_arr = tensor("f16", (1, 2, 2, 3))
        lse_list = tensor("f32", (1, 2, 2, 1))
        lse_arr = tensor("f32", (1, 2, 2, 1))
        o = np.arange(12, dtype=np.float32).reshape(1, 2, 2, 3) / 3
        lse = np.array([[[0.25, -np.inf], [1.0, 2.0]]], dtype=np.float32)
        write_outputs({"o": out_list, "lse": lse_list}, (o.tolist(), lse.tolist()), FakeProblem([2]))
        write_outputs({"o": out_arr, "lse": lse_arr}, (o, lse), FakeProblem([2]))
        self.assertEqual(bytes(out_arr.region), bytes(out_list.region))
        self.assertEqual(bytes(lse_arr.region), bytes(lse_list.region))
        self.assertNotEqual(bytes(out_arr.region), bytes(12 * 2))

    def test_an_array_of_the_wrong_shape_is_refused(self):
        o = tensor("f16", (1, 2, 2, 3))
        lse = tensor("f32", (1, 2, 2, 1))
        with self.assertRaisesRegex(ValueError, r"kernel returned lse of shape \(1, 2, 2, 1\); want \(1, 2, 2\)"):
            write_outputs({"o": o, "lse": lse}, (np.zeros((1, 2, 2, 3)), np.zeros((1, 2, 2, 1))), FakeProblem([2]))


class DeviceTest(unittest.TestCase):
    def test_host_modes_refuse_cuda(self):
        for mode in ("python", "numpy"):
            with self.assertRaisesRegex(ValueError, "device='cuda' with mode='%s'.*mode='torch'" % mode):
                Worker(None, "k", device="cuda", mode=mode)

    def test_auto_with_cuda_is_torch(self):
        self.assertTrue(Worker(None, "k", device="cuda", mode="auto").use_torch)

    def test_unknown_mode(self):
        with self.assertRaisesRegex(ValueError, "mode='jax'"):
            Worker(None, "k", mode="jax")

    def test_numpy_mode_requires_numpy(self):
        w = Worker(None, "k", mode="numpy")
        self.assertIn("numpy", w.requires)
        self.assertFalse(w.use_torch)


@unittest.skipIf(np is None, "numpy is not installed")
class FuzzKernelTest(unittest.TestCase):
    """attnfuzz_worker.testing.fuzz_kernel with the binary of $ATTNFUZZ_BIN (else skipped)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.corpus = os.path.join(self.tmp, "corpus")
        os.mkdir(self.corpus)
        for name in TINY:
            shutil.copy(os.path.join(ROOT, "corpora", "quickstart", name), self.corpus)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def fuzz(self, bug, out):
        from attnfuzz_worker.testing import fuzz_kernel

        script = os.path.join(self.tmp, "kernel_%s.py" % bug)
        with open(script, "w") as f:  # a kernel file of the user's own: numpy_kernel with its bug fixed
            f.write("import sys\nsys.path.insert(0, %r)\nfrom numpy_kernel import make_kernel\n"
                    "from attnfuzz_worker import serve\nserve(make_kernel(%r), name='k', mode='numpy')\n" % (HERE, bug))
        # 3 s: on a loaded 2-core machine the worker's start and the first case took over 1 s
        return fuzz_kernel(script, seconds=3, corpus=self.corpus, out_dir=os.path.join(self.tmp, out))

    def test_correct_kernel_passes(self):
        out = self.fuzz("none", "good")
        self.assertTrue(os.path.isfile(os.path.join(out, "stats.json")))
        self.assertEqual(os.listdir(os.path.join(out, "findings")) if os.path.isdir(os.path.join(out, "findings"))
                         else [], [])

    def test_planted_bugs_raise_with_reproducer_and_command(self):
        for bug in ("scale", "nocausal"):
            with self.subTest(bug=bug):
                with self.assertRaises(AssertionError) as caught:
                    self.fuzz(bug, "bad-" + bug)
                message = str(caught.exception)
                cases = [line.split("reproducer: ", 1)[1] for line in message.splitlines() if "reproducer: " in line]
                self.assertTrue(cases, message)
                for case in cases:
                    self.assertTrue(os.path.isfile(case), case)
                    self.assertTrue(case.endswith("finding.case"), case)
                repro = [line.split("repro: ", 1)[1] for line in message.splitlines() if "  repro: " in line][0]
                # the command replays the finding: still fails (exit 1)
                rc = subprocess.run(repro, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
                self.assertEqual(rc, 1, repro)
                self.assertIn(shlex.quote(cases[0]), repro)


def test_fixture_runs_a_kernel(attnfuzz_kernel, tmp_path):
    """pytest style: the attnfuzz_kernel fixture (collected by pytest only)."""
    import pytest

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in TINY:
        shutil.copy(os.path.join(ROOT, "corpora", "quickstart", name), corpus)
    script = tmp_path / "mine.py"
    script.write_text("import sys\nsys.path.insert(0, %r)\nfrom numpy_kernel import make_kernel\n"
                      "from attnfuzz_worker import serve\nserve(make_kernel('scale'), name='m', mode='numpy')\n" % HERE)
    with pytest.raises(AssertionError, match=r"reproducer: .*/campaign/findings/[0-9a-f]+/finding\.case"):
        attnfuzz_kernel(str(script), seconds=3, corpus=str(corpus))


try:  # the fixture, for the pytest-style test above
    from attnfuzz_worker.testing import attnfuzz_kernel  # noqa: F401
except ImportError:
    pass
