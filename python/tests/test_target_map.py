"""target_map and the package's locate option: case text fields, the refusal rule, and a
worker whose packages are missing saying unavailable with the module and pip package."""
import unittest

from attnfuzz_worker import Worker
from attnfuzz_worker.examples import target_map
from attnfuzz_worker.worker import missing_package
from problems import make


def raised_in(path, exc_type, text="refused"):
    """An exception of exc_type whose innermost frame is in a file named path."""
    code = compile("raise %s(%r)" % (exc_type.__name__, text), path, "exec")
    try:
        exec(code, {exc_type.__name__: exc_type})
    except exc_type as e:
        return e
    raise AssertionError("not raised")


class TargetMap(unittest.TestCase):
    def test_case_fields(self):
        p = make(case_extra={"page_size": 64, "page_tail": "nan"})
        self.assertEqual(target_map.case_fields(p)["page_tail"], "nan")
        self.assertEqual(target_map.case_int(p, "page_size"), 64)
        self.assertEqual(target_map.case_int(p, "thd_gap"), 0)

    def test_refusal_needs_the_type_and_the_raising_file(self):
        rules = (("AssertionError", "flash_attn/cute/interface.py"),)
        e = raised_in("/site/flash_attn/cute/interface.py", AssertionError, "head_dim must be <= 256")
        self.assertEqual(target_map.refusal(e, rules), "AssertionError: head_dim must be <= 256")
        # the same type raised inside the DSL compiler: the kernel failed, not a refusal
        self.assertIsNone(target_map.refusal(raised_in("/site/cutlass/cute/core.py", AssertionError), rules))
        self.assertIsNone(target_map.refusal(raised_in("/site/flash_attn/cute/interface.py", RuntimeError), rules))

    def test_refusal_by_type_name_alone(self):
        class cudnnGraphNotSupportedError(RuntimeError):
            pass

        e = raised_in("<pybind>", cudnnGraphNotSupportedError, "no engine")
        rules = (("cudnnGraphNotSupportedError", ""),)
        self.assertEqual(target_map.refusal(e, rules), "cudnnGraphNotSupportedError: no engine")

    def test_missing_package_names_module_and_package(self):
        self.assertIsNone(missing_package((("json", "stdlib"),)))
        self.assertEqual(missing_package((("json", "x"), ("no_such_mod_xyz.cute", "flash-attn-4"))),
                         "python module 'no_such_mod_xyz.cute' not found (pip package flash-attn-4)")

    def test_hello_says_unavailable(self):
        w = Worker(lambda *a, **k: None, "fa4", locate=(("no_such_mod_xyz", "flash-attn-4"),), mode="python")
        reply = w.hello({"type": "hello", "protocol": 1, "shm_fd": 3})
        self.assertEqual(reply, {"type": "unavailable",
                                 "reason": "python module 'no_such_mod_xyz' not found (pip package flash-attn-4)"})
        w = Worker(lambda *a, **k: None, "ok", locate=(("json", "stdlib"),), mode="python")
        self.assertEqual(w.hello({"type": "hello", "protocol": 1, "shm_fd": 3})["type"], "hello")


if __name__ == "__main__":
    unittest.main()
