"""The worker loop: speak docs/worker-protocol.md on fd 0 / fd 1, call the kernel.

The kernel is a function
    kernel(q, k, v, problem, do=None) -> (o, lse) or (o, lse, dq, dk, dv)
q, k, v, do are logical (B, H, S, D) tensors, by mode:
  - "torch": torch float32 tensors on the worker's device (device="cuda" or "cpu");
  - "numpy": float32 numpy arrays on the host holding the exact stored values (numpy_map);
  - "python": HostTensor views (element access, pure Python);
  - "auto": "torch" where torch is installed or device is not "cpu", else "python".
The kernel returns o (B, Hq, Sq, Dv) and lse (B, Hq, Sq) (and dq, dk, dv): tensors in
mode "torch", arrays or nested lists o[b][h][s][d], lse[b][h][s] otherwise (rows past a
sequence's length may be left out of lists; write_outputs stores them). "python" and
"numpy" run on the host: serve() refuses another device at its start (ValueError).
Raise Decline(reason) for a problem the kernel does not serve.

A worker that can run a backward from GIVEN forward outputs (the CP wrapper's ranks:
the global O rows and LSE of their queries) passes a second function
    backward_given(q, k, v, o, lse, do, problem) -> (dq, dk, dv)
o is (B, Hq, S, Dv) and lse (B, Hq, S) (HostTensor views: lse.get(b, h, s)); P = exp(S - lse)
and D = rowsum(do * o) come from them. The hello then lists "backward_given" among its
features, and such a request ("given": ["o", "lse"]) writes dQ, dK, dV only.

Failures, as the protocol tells them apart (docs/worker-protocol.md):
  - a module the worker needs is missing: requires=("torch", ...) are imported before
    the hello, and one that does not import is said instead of it ({"type":
    "unavailable"}: the backend is unavailable, e.g. "python module 'torch' not
    found"); locate=(("flash_attn.cute", "flash-attn-4"), ...) are only looked for
    (importlib.util.find_spec, no import: a heavy library is imported at the first run),
    and a missing one is said the same way, naming the pip package ("python module
    'cutlass' not found (pip package nvidia-cutlass-dsl)"); an ImportError raised
    later, in any request, is the same reply;
  - the kernel under test raised: an "error" reply (a crash finding);
  - with marks_kernel=True the adapter wraps its kernel call in `with
    problem.kernel_call():`, and an exception raised outside that block (building a
    mask, a TypeError in the adapter, this package's own tensor mapping) is an "error"
    reply with "where": "adapter": no verdict on the kernel. Without marks_kernel every
    exception is the kernel's, as before."""
import importlib
import json
import mmap
import os
import sys
import time
import traceback

from .host_tensor import HostTensor
from .problem import Problem

PROTOCOL = 1
TENSORS = ("q", "k", "v", "o", "lse", "do", "dq", "dk", "dv")
# problem.features names (docs/worker-protocol.md); an absent hello list allows all of
# them but dropout, so a worker without a list that adds backward_given sends these
CASE_FEATURES = ("backward", "gqa", "head_dim_v", "causal", "window", "bottom_right", "padded", "ragged", "paged",
                 "packed", "stride_gap", "cp")
GIVEN = ["o", "lse"]
MODES = ("auto", "python", "numpy", "torch")


class Decline(Exception):
    """The kernel does not serve this problem; the message is the reason."""


class Resource(Exception):
    """Out of memory or another resource; the message says which."""


def _torch_available():
    """Whether torch is installed, without importing it: a worker's start (hello and
    supports queries, all attnfuzz's availability probe asks) then costs no torch import;
    the first run imports it (torch_map)."""
    import importlib.util

    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def package_version(name):
    """A distribution's version from its metadata, without importing it ("?" if unknown)."""
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "?"


class _Region:
    """The shared memfd region (fd 3), remapped when attnfuzz grows it."""

    def __init__(self, fd):
        self.fd = fd
        self.map = None
        self.size = 0

    def get(self):
        size = os.fstat(self.fd).st_size
        if size != self.size:
            if self.map is not None:
                try:
                    self.map.close()
                except BufferError:  # a torch view still exports it; leave it to the GC
                    pass
            self.map = mmap.mmap(self.fd, size) if size else None
            self.size = size
        return self.map


class Worker:
    def __init__(self, kernel, name, description="", device="cpu", dtypes=("fp16", "bf16"), features=None,
                 deterministic=True, supports=None, engines=None, versions=None, mode="auto",
                 backward_given=None, requires=(), marks_kernel=False, locate=(), recipes=()):
        self.kernel = kernel
        # legitimate kernel roundings the judge models for this worker when listed (hello
        # "recipes", docs/worker-protocol.md), e.g. "lse_rowsum_dtype_p"
        self.recipes = list(recipes)
        self.backward_given_fn = backward_given
        self.name = name
        self.description = description
        self.device = device
        self.dtypes = list(dtypes)
        self.features = features
        self.deterministic = deterministic
        self.supports_fn = supports
        self.engines_fn = engines
        self.versions = dict(versions or {})
        self.requires = tuple(requires)
        if mode not in MODES:
            raise ValueError("serve: mode=%r: the modes are %s" % (mode, ", ".join(MODES)))
        if mode in ("python", "numpy") and device != "cpu":
            raise ValueError("serve: device=%r with mode=%r: that mode runs the kernel on the host (device='cpu'); "
                             "use mode='torch' for device=%r" % (device, mode, device))
        # auto: torch where it is installed, or where the device is not the host (a missing
        # torch then makes the backend unavailable at the first run, never a silent host run)
        self.use_torch = mode == "torch" or (mode == "auto" and (device != "cpu" or _torch_available()))
        self.use_numpy = mode == "numpy"
        if self.use_numpy:
            self.requires = self.requires + ("numpy",)
            self.versions.setdefault("numpy", package_version("numpy"))
        if self.use_torch:
            self.versions.setdefault("torch", package_version("torch"))
        self.versions.setdefault("python", sys.version.split()[0])
        self.region = None
        self.locate = tuple(locate)
        self.marks_kernel = marks_kernel
        self.request_problem = None  # the Problem of the request being served (run), for errors

    # ---- messages ---------------------------------------------------------------
    def hello(self, msg):
        self.region = _Region(msg.get("shm_fd", 3))
        for name in self.requires:  # imported now: a missing one is said instead of the hello
            importlib.import_module(name)
        missing = missing_package(self.locate)
        if missing:
            return {"type": "unavailable", "reason": missing}
        reply = {"type": "hello", "protocol": PROTOCOL, "name": self.name, "description": self.description,
                 "device": self.device, "dtypes": self.dtypes, "deterministic": self.deterministic,
                 "engines": self.engines_fn is not None, "versions": self.versions,
                 "transports": ["shm", "cuda_ipc"] if self.use_torch and self.device == "cuda" else ["shm"]}
        if self.recipes:
            reply["recipes"] = list(self.recipes)
        if self.features is not None:
            reply["features"] = list(self.features)
        if self.backward_given_fn is not None:
            reply["features"] = list(CASE_FEATURES if self.features is None else self.features) + ["backward_given"]
        return reply

    def supports(self, problem):
        reason = self.supports_fn(problem) if self.supports_fn else None
        return {"type": "decline", "reason": reason} if reason else {"type": "ok"}

    def run(self, msg):
        problem = Problem(msg["problem"])
        self.request_problem = problem
        reason = self.supports_fn(problem) if self.supports_fn else None
        if reason:
            return {"type": "decline", "reason": reason}
        # a reply's engine may carry annotations after '+' ("dense+lse32", "sdpa+nogap"): a
        # reproducer names the engine as a reply gave it, and it runs that engine
        problem.engine = msg.get("engine", "").split("+", 1)[0]
        problem.given = tuple(msg.get("given", ()))
        problem.paging = paging_of(msg.get("tensors", {}))
        if problem.given:
            if self.backward_given_fn is None:
                raise RuntimeError("a backward_given request, but this worker's hello did not list backward_given")
            if list(problem.given) != GIVEN or not problem.backward:
                raise RuntimeError("given %r: the protocol's given inputs are %r of a backward problem"
                                   % (list(problem.given), GIVEN))
        if self.use_torch:
            written = self._run_torch(msg, problem)
        else:
            self._run_python(msg, problem)  # the kernel writes the shared region: attnfuzz compares it
            written = []
        reply = {"type": "ok", "engine": problem.engine}
        if getattr(problem, "recipes", None) is not None:  # this call's recipes, narrowing the hello's
            reply["recipes"] = list(problem.recipes)
        if problem.engines:
            reply["engines"] = dict(problem.engines)
        if written:
            reply["inputs_written"] = written
        return reply

    # ---- pure Python and numpy ---------------------------------------------------
    def _run_python(self, msg, problem):
        if msg.get("transport") != "shm":
            raise RuntimeError("transport: modes python and numpy serve only shm")
        region = self.region.get()
        t = {}
        for name, desc in msg["tensors"].items():
            base = msg["buffers"][desc["buffer"]]["offset"]
            t[name] = HostTensor(name, desc, region, base)
        a = self._numpy_inputs(t, problem) if self.use_numpy else t
        if problem.given:
            grads = self.backward_given_fn(a["q"], a["k"], a["v"], a["o"], a["lse"], a["do"], problem)
            write_outputs(t, grads, problem, names=("dq", "dk", "dv"))
            return
        out = self.kernel(a["q"], a["k"], a["v"], problem, do=a.get("do"))
        write_outputs(t, out, problem)

    @staticmethod
    def _numpy_inputs(t, problem):
        """The request's inputs as float32 arrays (numpy_map): (B, H, S, D), lse (B, H, S)."""
        from . import numpy_map

        a = {}
        for name in ("q", "k", "v", "do", "o", "lse"):
            if name in t and (name in ("q", "k", "v", "do") or problem.given):
                lengths = problem.seqlens_kv if name in ("k", "v") else problem.seqlens_q
                a[name] = numpy_map.host_array(t[name], lengths, lse=(name == "lse"))
        return a

    # ---- torch -----------------------------------------------------------------
    def _run_torch(self, msg, problem):
        """Run the kernel on torch tensors; returns the inputs it wrote ("inputs_written")."""
        from . import input_check
        from . import torch_map as tm

        ipc = tm.IpcBuffers()
        try:
            region = self.region.get() if any(b["kind"] == "shm" for b in msg["buffers"].values()) else None
            flat = tm.flat_buffers(msg["buffers"], region, ipc)
            t = {n: tm.TorchTensor(d, flat[d["buffer"]], is_lse=(n == "lse"), region=self.region.get())
                 for n, d in msg["tensors"].items()}
            dev = self.device
            problem.views = t  # the tensors as attnfuzz laid them out (TorchTensor.raw), for exact-layout adapters
            q = t["q"].dense(dev, problem.seqlens_q)
            k = t["k"].dense(dev, problem.seqlens_kv)
            v = t["v"].dense(dev, problem.seqlens_kv)
            do = t["do"].dense(dev, problem.seqlens_q) if "do" in t else None
            if problem.given:  # O and LSE are inputs: only the gradients are written
                o = t["o"].dense(dev, problem.seqlens_q)
                lse = t["lse"].dense_lse(dev, problem.seqlens_q)
                args = input_check.snapshot({"q": q, "k": k, "v": v, "do": do, "o": o, "lse": lse})
                out = self.backward_given_fn(q, k, v, o, lse, do, problem)
                names = ("dq", "dk", "dv")
            else:
                args = input_check.snapshot({"q": q, "k": k, "v": v, "do": do})
                out = self.kernel(q, k, v, problem, do=do)
                names = ("o", "lse", "dq", "dk", "dv")
            # the kernel's arguments, then the adapter's own (problem.watch), against their clones
            written = input_check.written(args)
            seen = {w["tensor"] for w in written}
            written += [w for w in input_check.written(problem.watched) if w["tensor"] not in seen]
            for name, value in zip(names, out):
                if value is None:
                    raise Decline("kernel returned no %s" % name.upper())
                lengths = problem.seqlens_kv if name in ("dk", "dv") else problem.seqlens_q
                t[name].write(value, lengths)
            return written
        finally:
            if ipc.ptrs:
                ipc.close()

    # ---- the loop ----------------------------------------------------------------
    def _where_failed(self):
        """"kernel" or "adapter": who raised the exception of the request being served.
        Without marks_kernel, or outside a run, it is the kernel's (as before)."""
        p = self.request_problem
        if self.marks_kernel and p is not None and not p.kernel_raised:
            return "adapter"
        return "kernel"

    def serve(self):
        # replies go to a private copy of fd 1; fd 1 itself then points at stderr so
        # that a stray print() in a kernel cannot corrupt the protocol
        reply_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        out = os.fdopen(reply_fd, "wb", buffering=0)
        inp = os.fdopen(0, "rb")
        trace = _Trace(os.environ.get("ATTNFUZZ_WORKER_TRACE"))
        trace.line("serve", 0.0, "pid %d" % os.getpid(), "started")
        for line in inp:
            msg = json.loads(line)
            kind = msg.get("type")
            t_msg = time.time()
            if kind == "bye":
                break
            self.request_problem = None
            try:
                if kind == "hello":
                    reply = self.hello(msg)
                elif kind == "supports":
                    reply = self.supports(Problem(msg["problem"]))
                elif kind == "engines":
                    reply = {"type": "engines", "names": list(self.engines_fn(Problem(msg["problem"])))}
                elif kind == "run":
                    reply = self.run(msg)
                else:
                    reply = {"type": "error", "message": "unknown request type %r" % kind}
            except Decline as e:
                reply = {"type": "decline", "reason": str(e) or "declined"}
            except (Resource, MemoryError) as e:
                reply = {"type": "resource", "message": "%s: %s" % (type(e).__name__, e)}
            except ImportError as e:  # a module it needs is missing here: unavailable, no kernel ran
                if kind != "hello":  # a lazy import: where it came from (a requires= one needs no traceback)
                    traceback.print_exc(file=sys.stderr)
                reply = {"type": "unavailable", "reason": missing_module_reason(e)}
            except Exception as e:  # one line, the traceback on stderr
                traceback.print_exc(file=sys.stderr)
                text = "%s: %s" % (type(e).__name__, e)
                kind_of = "resource" if "out of memory" in text.lower() else "error"
                reply = {"type": kind_of, "message": " ".join(text.split())[:400]}
                if kind_of == "error":
                    reply["where"] = self._where_failed()
            if "id" in msg:
                reply["id"] = msg["id"]
            out.write((json.dumps(reply) + "\n").encode())
            trace.line(kind, time.time() - t_msg, _shape(msg.get("problem")), reply.get("type"))
        return 0


def write_outputs(t, out, problem, names=("o", "lse", "dq", "dk", "dv")):
    """Store a host kernel's outputs (modes python and numpy) into the request's HostTensors
    t, each element rounded once to its storage: o[b][h][s][d], lse[b][h][s], nested lists
    or arrays. Rows past a sequence's length are not written (a list may leave them out);
    an array (anything with .shape) must have the tensor's full logical shape."""
    for name, value in zip(names, out):
        if value is None:
            raise Decline("kernel returned no %s" % name.upper())
        tensor = t[name]
        B, H, S, D = tensor.shape
        want = (B, H, S) if name == "lse" else (B, H, S, D)
        shape = getattr(value, "shape", None)
        if shape is not None and tuple(shape) != want:
            raise ValueError("kernel returned %s of shape %s; want %s" % (name, tuple(shape), want))
        kv = name in ("dk", "dv")
        for b in range(B):
            n = (problem.seqlens_kv if kv else problem.seqlens_q)[b]
            for h in range(H):
                rows = value[b][h]
                for s in range(min(n, len(rows))):
                    if name == "lse":
                        tensor.set(b, h, s, 0, rows[s])
                    else:
                        for d in range(D):
                            tensor.set(b, h, s, d, rows[s][d])


def paging_of(tensors):
    """{page_size, pages_per_seq, page_table} of a request's paged K (the harness's own
    table, for a kernel that takes pages), or None when K is not paged."""
    k = tensors.get("k", {})
    if "page_table" not in k:
        return None
    return {key: k[key] for key in ("page_size", "pages_per_seq", "page_table")}


def missing_package(modules):
    """The first of (module, pip package) pairs whose module is not found, as one line
    ("python module 'cutlass' not found (pip package nvidia-cutlass-dsl)"), or None.
    find_spec imports a dotted name's parents, not the module itself."""
    import importlib.util

    for module, package in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return "python module '%s' not found (pip package %s)" % (module, package)
    return None


def missing_module_reason(e):
    """One line for an ImportError: "python module 'torch' not found" when a module is
    missing, else what the import said."""
    if isinstance(e, ModuleNotFoundError) and e.name:
        return "python module '%s' not found" % e.name
    return "python import failed: %s" % " ".join(str(e).split())[:300]


def _shape(p):
    """One short text of a problem dict for the trace (the fields that set a compile)."""
    if not isinstance(p, dict):
        return "-"
    keys = ("dtype", "batch", "heads_q", "heads_kv", "seqlen_q", "seqlen_kv", "head_dim_qk", "head_dim_v", "backward")
    return " ".join("%s=%s" % (k, p[k]) for k in keys if k in p)


class _Trace:
    """ATTNFUZZ_WORKER_TRACE=FILE: one line per request appended to FILE (unix time at
    the reply, seconds the request took, its type, the problem's shape, the reply's type);
    unset: nothing. The line of type serve is written when the loop starts: its time
    minus the process's start is the worker's import and start-up cost."""

    def __init__(self, path):
        self.f = open(path, "a", buffering=1) if path else None

    def line(self, kind, seconds, shape, reply):
        if self.f:
            self.f.write("%.3f %.4f %s [%s] -> %s\n" % (time.time(), seconds, kind, shape, reply))


def serve(kernel, name, **options):
    """Serve kernel until attnfuzz closes the connection (see Worker for options)."""
    sys.exit(Worker(kernel, name, **options).serve())
