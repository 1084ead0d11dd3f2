"""Planted workers for test_worker.sh: the reference_py kernel with one deliberate
misbehaviour, chosen by argv[1], on the case whose seed is PLANT_SEED (other seeds run
correctly, so the test sees the next case pass on a restarted worker):
  crash_exit   os._exit(3) mid-case          segfault   SIGSEGV through ctypes
  exit0        exit(0) mid-case              hang       sleeps past any deadline
  garbage      a reply that is not JSON      guard      writes past O into the guard
  decline      declines with a reason        error      raises (a kernel error)
  noop         replies ok at once on every case, writing nothing (overhead measurement)
  given_writes_o, given_writes_lse   offers backward_given (reference_py's) and, on the
               planted seed, also writes O (LSE) there, an input in that mode
  no_given     the reference without backward_given (its hello does not list it)
  adapter_error  marks its kernel call (marks_kernel): a TypeError in the adapter before
               the call (an adapter error, no verdict on the kernel)
  kernel_error_marked  marks its kernel call: the kernel raises inside it (a crash)
  lazy_import  imports a module that does not exist while serving the case (unavailable)
  requires_missing  requires a module that does not exist: says unavailable, no hello
  writes_k     computes correctly, then writes K's element (0, 0, 1, 0) in the shared region
               (attnfuzz compares the inputs after the reply: an input_mutation of K)
  reports_k    computes correctly and replies with "inputs_written": [{"tensor": "k",
               "index": 9}], as the torch mapping does for a kernel that wrote its K argument
  reports_bad  the same with a malformed entry ({"tensor": "page_table"}): a protocol error"""
import ctypes
import os
import sys
import time

from attnfuzz_worker import Decline, Worker
from attnfuzz_worker.examples import reference_py

PLANT_SEED = 666
MODE = sys.argv[1]


MISSING = "attnfuzz_no_such_module_planted"


def planted(q, k, v, problem, do=None):
    if "seed = %d\n" % PLANT_SEED not in problem.case:
        with problem.kernel_call():
            return reference_py.kernel(q, k, v, problem, do=do)
    if MODE == "adapter_error":
        scale = len(problem.scale)  # the adapter's bug: a float has no len(), before any kernel call
        with problem.kernel_call():
            return reference_py.kernel(q, k, v, problem, do=do) if scale else None
    if MODE == "kernel_error_marked":
        with problem.kernel_call():
            raise ValueError("planted kernel error inside the marked call")
    if MODE == "lazy_import":
        __import__(MISSING)
    if MODE == "crash_exit":
        os._exit(3)
    if MODE == "segfault":
        ctypes.string_at(0)
    if MODE == "exit0":
        sys.stdout.flush()
        os._exit(0)
    if MODE == "hang":
        time.sleep(3600)
    if MODE == "garbage":
        os.write(worker_reply_fd[0], b"this is {not json\n")
        time.sleep(3600)
    if MODE == "decline":
        raise Decline("planted: declines seed %d" % PLANT_SEED)
    if MODE == "error":
        raise ValueError("planted kernel error")
    out = reference_py.kernel(q, k, v, problem, do=do)
    if MODE == "writes_k":
        k.set(0, 0, 1, 0, k.get(0, 0, 1, 0) + 0.5)
    if MODE == "guard":
        o = problem_tensors[0]["o"]
        back_guard = o.base + 256 + o.buffer_elems * o.elem  # first byte after O's data
        o.region[back_guard + 8] = 0
    return out


def planted_given(q, k, v, o, lse, do, problem):
    grads = reference_py.backward_given(q, k, v, o, lse, do, problem)
    if "seed = %d\n" % PLANT_SEED in problem.case:
        if MODE == "given_writes_o":
            o.set(0, 0, 0, 0, o.get(0, 0, 0, 0) + 1.0)
        else:
            lse.set(0, 0, 0, 0, lse.get(0, 0, 0, 0) + 0.5)
    return grads


worker_reply_fd = [None]
problem_tensors = [None]


class PlantedWorker(Worker):
    def run(self, msg):
        reply = super().run(msg)
        planted_case = "seed = %d\n" % PLANT_SEED in msg["problem"].get("case", "")
        if planted_case and reply.get("type") == "ok" and MODE == "reports_k":
            reply["inputs_written"] = [{"tensor": "k", "index": 9}]
        if planted_case and reply.get("type") == "ok" and MODE == "reports_bad":
            reply["inputs_written"] = [{"tensor": "page_table"}]
        return reply

    def _run_python(self, msg, problem):
        if MODE == "noop":  # measures the protocol and the copies: writes nothing
            return
        if problem.given:
            return super()._run_python(msg, problem)
        from attnfuzz_worker.host_tensor import HostTensor
        from attnfuzz_worker.worker import write_outputs

        region = self.region.get()
        t = {n: HostTensor(n, d, region, msg["buffers"][d["buffer"]]["offset"]) for n, d in msg["tensors"].items()}
        problem_tensors[0] = t
        out = self.kernel(t["q"], t["k"], t["v"], problem, do=t.get("do"))
        write_outputs(t, out, problem)


if __name__ == "__main__":
    given = planted_given if MODE.startswith("given_") else None
    w = PlantedWorker(planted, name="planted-" + MODE, device="cpu", mode="python", backward_given=given,
                      marks_kernel=MODE in ("adapter_error", "kernel_error_marked"),
                      requires=(MISSING,) if MODE == "requires_missing" else ())
    orig_dup = os.dup

    def dup_and_remember(fd):  # the worker's private reply fd, for the garbage mode
        r = orig_dup(fd)
        if fd == 1 and worker_reply_fd[0] is None:
            worker_reply_fd[0] = r
        return r

    os.dup = dup_and_remember
    sys.exit(w.serve())
