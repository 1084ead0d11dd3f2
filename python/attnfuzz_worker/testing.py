"""A pytest entry point for kernel authors: fuzz a worker script with attnfuzz.

    from attnfuzz_worker.testing import fuzz_kernel

    def test_mykernel():
        fuzz_kernel("mykernel.py", seconds=5)

fuzz_kernel runs `attnfuzz campaign CORPUS --backend worker:NAME --worker-cmd "PYTHON SCRIPT"`
into out_dir (default: a fresh temporary folder) and raises AssertionError naming each
finding's reproducer (OUT/findings/BUCKET/finding.case) and a shell-quoted command that
replays it. Without an attnfuzz binary or a corpus it skips the test (pytest.skip in a pytest
run, else unittest.SkipTest), saying why. The `attnfuzz_kernel` fixture is the same function."""
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder holding attnfuzz_worker
DEFAULT_CORPUS = os.path.join("corpora", "quickstart")


def _skip(reason):
    """pytest.skip inside a pytest run, else unittest.SkipTest (a unittest runner's skip)."""
    if os.environ.get("PYTEST_CURRENT_TEST"):
        import pytest

        pytest.skip(reason)
    import unittest

    raise unittest.SkipTest(reason)


def find_attnfuzz(attnfuzz=None):
    """The attnfuzz binary: the argument, else $ATTNFUZZ_BIN, else `attnfuzz` on PATH;
    (path, None) or (None, why not)."""
    for given, origin in ((attnfuzz, "the attnfuzz argument"), (os.environ.get("ATTNFUZZ_BIN"), "$ATTNFUZZ_BIN")):
        if given:
            if os.path.isfile(given) and os.access(given, os.X_OK):
                return os.path.abspath(given), None
            return None, "%s names %r, which is not an executable file" % (origin, given)
    found = shutil.which("attnfuzz")
    if found:
        return found, None
    return None, "no attnfuzz binary: pass attnfuzz=PATH, set ATTNFUZZ_BIN or put attnfuzz on PATH"


def default_corpus(binary):
    """corpora/quickstart where attnfuzz looks for its data (harness/util/datadir.h's order:
    $ATTNFUZZ_DATA_DIR, the current folder, the install's share/attnfuzz, the checkout
    above the binary's folder), or None."""
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(binary)))
    roots = [os.environ.get("ATTNFUZZ_DATA_DIR") or None, os.getcwd(), os.path.join(prefix, "share", "attnfuzz"),
             prefix]
    for root in roots:
        if root and os.path.isdir(os.path.join(root, DEFAULT_CORPUS)):
            return os.path.abspath(os.path.join(root, DEFAULT_CORPUS))
    return None


def findings_of(out_dir):
    """The reproducers a campaign folder holds: [OUT/findings/BUCKET/finding.case], sorted."""
    root = os.path.join(out_dir, "findings")
    if not os.path.isdir(root):
        return []
    cases = (os.path.join(root, b, "finding.case") for b in sorted(os.listdir(root)))
    return [c for c in cases if os.path.isfile(c)]


def fuzz_kernel(kernel_script, seconds=5, corpus=None, backend_name=None, attnfuzz=None, out_dir=None,
                python=None, extra_args=()):
    """Fuzz the worker kernel_script (a file that calls serve()) for `seconds` from corpus
    (a folder or .case files; default corpora/quickstart) with attnfuzz; returns the
    campaign's folder when it found nothing, else raises AssertionError naming every
    finding.case and the command that replays it. python: the worker's interpreter
    (default this one); backend_name: NAME of worker:NAME (default the script's stem)."""
    binary, why = find_attnfuzz(attnfuzz)
    if binary is None:
        _skip("fuzz_kernel: " + why)
    if corpus is None:
        corpus = default_corpus(binary)
        if corpus is None:
            _skip("fuzz_kernel: no corpus given and %s found nowhere attnfuzz looks (set ATTNFUZZ_DATA_DIR)"
                  % DEFAULT_CORPUS)
    corpora = [corpus] if isinstance(corpus, (str, os.PathLike)) else list(corpus)
    script = os.path.abspath(kernel_script)
    if not os.path.isfile(script):
        raise FileNotFoundError("fuzz_kernel: kernel script %s does not exist" % script)
    name = backend_name or "".join(c if c.isalnum() or c in "-_" else "-"
                                   for c in os.path.splitext(os.path.basename(script))[0])
    worker_cmd = shlex.join([python or sys.executable, script])
    if out_dir is None:
        out_dir = os.path.join(tempfile.mkdtemp(prefix="attnfuzz-%s-" % name), "campaign")
    out_dir = os.path.abspath(out_dir)
    worker_args = ["--backend", "worker:" + name, "--worker-cmd", worker_cmd]
    argv = ([binary, "campaign"] + [os.path.abspath(c) for c in corpora]
            + ["--time", str(seconds), "--out", out_dir] + worker_args + list(extra_args))
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    found = findings_of(out_dir)
    if found:
        lines = ["attnfuzz found %d bucket(s) in %s (campaign exit %d):" % (len(found), name, proc.returncode)]
        for case in found:
            repro = shlex.join(["env", "PYTHONPATH=" + env["PYTHONPATH"], binary, "repro", case] + worker_args)
            lines += ["  reproducer: " + case, "  repro: " + repro]
        raise AssertionError("\n".join(lines))
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-8:])
        raise AssertionError("attnfuzz campaign exited %d without a finding (%s):\n%s"
                             % (proc.returncode, shlex.join(argv), tail))
    return out_dir


try:
    import pytest

    @pytest.fixture
    def attnfuzz_kernel(tmp_path):
        """fuzz_kernel with out_dir under the test's tmp_path (unless given)."""

        def run(kernel_script, **options):
            options.setdefault("out_dir", str(tmp_path / "campaign"))
            return fuzz_kernel(kernel_script, **options)

        return run
except ImportError:  # the fixture needs pytest; fuzz_kernel does not
    pass
