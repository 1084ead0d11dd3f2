#!/usr/bin/env python3
"""cudnn_engine_table.py TAG corpus.jsonl — per engine config: cases, passed, declined,
worst error ratio, from `attnfuzz run --backend cudnn --engine all --json` output.

An engine name "F+bwd_B" is one forward config F and one backward config B: F is
credited with the O/LSE ratios, B with dQ/dK/dV; the run's verdict counts for both.
Declined runs (no engine name) count under "(case declined)". Prints Markdown."""
import json
import sys
from collections import OrderedDict


def main():
    tag, path = sys.argv[1], sys.argv[2]
    rows = OrderedDict()
    verdicts = {}
    findings = []

    def row(name):
        return rows.setdefault(name, {"cases": set(), "runs": 0, "passed": 0, "declined": 0, "worst": 0.0,
                                      "worst_case": ""})

    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        v = r.get("verdict", "?")
        verdicts[v] = verdicts.get(v, 0) + 1
        eng = r.get("engine") or ("(case declined)" if v == "declined" else "(default)")
        parts = eng.split("+")
        tens = r.get("tensors", {})
        for i, part in enumerate(parts):
            names = ("O", "LSE") if i == 0 else ("dQ", "dK", "dV")
            if len(parts) == 1:
                names = ("O", "LSE", "dQ", "dK", "dV")
            x = row(part)
            x["cases"].add(r["case"])
            x["runs"] += 1
            if v == "pass":
                x["passed"] += 1
            elif v == "declined":
                x["declined"] += 1
            for t in names:
                ratio = tens.get(t, {}).get("ratio")
                if ratio is not None and ratio > x["worst"]:
                    x["worst"], x["worst_case"] = ratio, r["case"].split("/")[-1]
        if v not in ("pass", "declined"):
            findings.append((r["case"], eng, v, r.get("reason", ""), [f.get("kind", "") for f in r.get("findings", [])]))

    print(f"\n### engines ({tag})\n")
    print("verdicts: " + ", ".join(f"{k} {n}" for k, n in sorted(verdicts.items())) + "\n")
    print("| engine config | cases | runs | passed | declined | worst ratio | worst case |")
    print("|---|---|---|---|---|---|---|")
    for name, x in sorted(rows.items()):
        print(f"| {name} | {len(x['cases'])} | {x['runs']} | {x['passed']} | {x['declined']} | {x['worst']:.3f} | {x['worst_case']} |")
    if findings:
        print("\nnon-pass runs:\n")
        for case, eng, v, reason, kinds in findings:
            print(f"- {case} [{eng}]: {v} {','.join(kinds)} {reason[:300]}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
