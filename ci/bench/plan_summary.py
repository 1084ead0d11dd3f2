#!/usr/bin/env python3
"""plan_summary.py VERDICTS.jsonl — where a mix run's backend time went (bench_judge.sh).

Prints one line: cases, how many ran on a padded graph (the "plan" key), how many waited
for graph / plan builds (build_seconds > 0), the build seconds in all, and the mean per
case of the judge's run, probes, oracle and compare seconds.
"""
import json
import sys


def main(path):
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    if not rows:
        print("plan summary: no verdicts")
        return
    padded = sum(1 for r in rows if r.get("plan"))
    built = sum(1 for r in rows if (r.get("build_seconds") or 0) > 0)
    build_s = sum(r.get("build_seconds") or 0 for r in rows)
    secs = [r.get("judge", {}).get("seconds", {}) for r in rows]

    def mean(key):
        vals = [s.get(key) or 0 for s in secs]
        return sum(vals) / len(vals)

    print("plan summary: %d cases, %d on a padded graph, %d waited for builds (%.2f s in all, %.3f s per build); "
          "mean per case: run %.3f s, probes %.3f s, oracle %.3f s, compare %.3f s"
          % (len(rows), padded, built, build_s, build_s / built if built else 0, mean("run"), mean("probes"),
             mean("oracle"), mean("compare")))


if __name__ == "__main__":
    main(sys.argv[1])
