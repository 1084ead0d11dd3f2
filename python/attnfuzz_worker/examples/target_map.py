"""Pure-Python helpers the third-party targets (fa4, cudnn_fe) share to map a problem onto a
library call: no torch, no library import, so CPU CI tests them (python/tests/).

    case_fields(problem)        the canonical case text as {field: text}
    misaligned_sequence(problem) the first sequence where top-left and bottom-right differ
    score_mod_reason(name, problem) why a target without score_mods declines one, or None
    refusal(exc, rules)         whether an exception is the library refusing the call
                                (a decline) or the kernel failing (a crash finding)"""
import os
import traceback


def case_fields(problem):
    """{field: value text} of problem.case (the canonical text, `key = value` lines); {}
    when the request carried none."""
    fields = {}
    for line in (getattr(problem, "case", None) or "").splitlines():
        line = line.split("#", 1)[0]
        if "=" in line:
            key, value = line.split("=", 1)
            fields[key.strip()] = value.strip()
    return fields


def case_int(problem, key, default=0):
    """An integer field of the case text (default when absent)."""
    text = case_fields(problem).get(key)
    return int(text) if text not in (None, "") else default


def score_mod_reason(name, problem):
    """Why target `name` declines the problem's score_mod (torch Flex's named nonlinear
    score modifiers: squared, trig, trig2), or None without one: its library takes no
    score function, and running plain scores would be another function."""
    mod = getattr(problem, "score_mod", "none") or "none"
    if mod == "none":
        return None
    return "%s: no score_mod (%s): the library takes no score function" % (name, mod)


def band_active(problem):
    """Whether the mask has a diagonal (causal or a window): only then does alignment matter."""
    return problem.causal or problem.window_left >= 0 or problem.window_right >= 0


def misaligned_sequence(problem):
    """The first sequence b whose diagonal differs between top-left and bottom-right
    alignment (len_q != len_kv), or None: where None, a top-left case is also a
    bottom-right one."""
    for b, (lq, lkv) in enumerate(zip(problem.seqlens_q, problem.seqlens_kv)):
        if lq != lkv:
            return b
    return None


def padded(problem):
    """Whether some sequence is shorter than the batch maximum (dense layouts)."""
    return any(n != problem.seqlen_q for n in problem.seqlens_q) or \
        any(n != problem.seqlen_kv for n in problem.seqlens_kv)


def innermost_file(exc):
    """The source file of the innermost Python frame of exc's traceback ('' without one)."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    return frames[-1].filename if frames else ""


def refusal(exc, rules):
    """A one-line reason when exc is the library refusing the call, else None.

    rules: (exception type name, path fragment) pairs; exc matches a rule when its type
    (or a base class) has that name and, for a non-empty fragment, the innermost frame's
    file contains the fragment (with '/' as the separator). So an AssertionError raised by
    flash_attn/cute/interface.py's input checks is a refusal, while one raised inside the
    CuTe DSL compiler (a kernel that accepted the call and then failed) is not."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    where = innermost_file(exc).replace(os.sep, "/")
    for type_name, fragment in rules:
        if type_name in names and (not fragment or fragment in where):
            text = " ".join(str(exc).split()) or type(exc).__name__
            return "%s: %s" % (type(exc).__name__, text[:300])
    return None
