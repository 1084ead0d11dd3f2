#!/usr/bin/env python3
"""verdict_compare.py A.jsonl B.jsonl — are two runs' JSON verdicts the same, timings aside?

For a change that must not change behaviour (a refactor, a rename, a speed-up): run the same
cases with the binary before and after (`attnfuzz run CASES --backend cpu --json > A.jsonl`),
then compare. Verdicts pair up by their "case" (and "engine"); every field must be equal
except wall-clock figures (any key named "seconds", "build_seconds" (a GPU backend's graph
builds), "copy_seconds", "kernel_seconds" (a GPU backend's run split), "cert_wait", "elapsed_s",
or under "seconds"), which differ from run to run, and "prepared_ahead" (whether the case was
prepared while the one before it was judged: how it was scheduled, not what was judged). Floats compare exactly: the judge is deterministic
on one machine (oracle, reference and criterion give the same bits whatever the thread count).
Prints one line per difference (case, field path, A's and B's values) and a summary; exit 0
when equal, 1 when not, 2 on bad input (a file missing, a line that is not JSON, a case twice).
"""
import json
import sys

TIMING = {"seconds", "build_seconds", "copy_seconds", "kernel_seconds", "cert_wait", "elapsed_s", "prepared_ahead"}


def load(path):
    out = {}
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        print("verdict_compare: %s: %s" % (path, e.strerror), file=sys.stderr)
        sys.exit(2)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            v = json.loads(line)
        except ValueError as e:
            print("verdict_compare: %s:%d: not JSON (%s)" % (path, n, e), file=sys.stderr)
            sys.exit(2)
        key = (v.get("case"), v.get("engine", ""))
        if key in out:
            print("verdict_compare: %s:%d: case %s engine %r twice" % (path, n, key[0], key[1]), file=sys.stderr)
            sys.exit(2)
        out[key] = v
    return out


def diff(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in TIMING:
                continue
            if k not in a or k not in b:
                out.append((path + "." + k, a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                diff(a[k], b[k], path + "." + k, out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append((path + ".length", len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, "%s[%d]" % (path, i), out)
    elif a != b and not (a != a and b != b):  # NaN equals NaN here
        out.append((path, a, b))


def main():
    if len(sys.argv) != 3:
        print("usage: verdict_compare.py A.jsonl B.jsonl", file=sys.stderr)
        sys.exit(2)
    a, b = load(sys.argv[1]), load(sys.argv[2])
    bad = 0
    for key in sorted(set(a) | set(b), key=lambda k: (str(k[0]), str(k[1]))):
        if key not in a or key not in b:
            print("%s [%s]: only in %s" % (key[0], key[1], sys.argv[1] if key in a else sys.argv[2]))
            bad += 1
            continue
        d = []
        diff(a[key], b[key], "", d)
        for path, x, y in d[:20]:
            print("%s [%s]: %s: %r != %r" % (key[0], key[1], path.lstrip("."), x, y))
        bad += bool(d)
    print("verdict_compare: %d of %d verdicts differ" % (bad, len(set(a) | set(b))))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
