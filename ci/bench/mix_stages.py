#!/usr/bin/env python3
"""mix_stages.py VERDICTS.jsonl — the judge's time per stage over a config mix (`attnfuzz run
--json` lines): per stage the median and mean in milliseconds, and the median of the case's
time outside the backend's run (every stage but `run`: the judge's own share, which includes
the GPU passes the judge launches and waits for). Also how many cases had the element budgets
and how many got them from the GPU pass."""
import json
import statistics
import sys

v = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
v = [x for x in v if "judge" in x]
stages = ["gen", "oracle", "oracle_gpu", "magnitudes", "terms_gpu", "reference", "run", "compare", "probes",
          "probes_run", "cert_wait"]
print("mix stages over %d verdicts (ms): stage median mean" % len(v))
for k in stages:
    xs = [1e3 * (x["judge"]["seconds"].get(k) or 0.0) for x in v]
    if xs:
        print("  %-11s %9.1f %9.1f" % (k, statistics.median(xs), statistics.mean(xs)))
probes = sorted({k for x in v for k in (x["judge"]["seconds"].get("per_probe") or {})})
for k in probes:
    xs = [1e3 * ((x["judge"]["seconds"].get("per_probe") or {}).get(k) or 0.0) for x in v]
    print("  probe %-15s %5.1f %9.1f" % (k, statistics.median(xs), statistics.mean(xs)))
own = ["gen", "oracle", "magnitudes", "reference", "compare", "probes", "cert_wait"]
host = [1e3 * sum(x["judge"]["seconds"].get(k) or 0.0 for k in own) for x in v]
if host:
    print("  judge time outside the backend's run: median %.1f ms, mean %.1f ms" % (statistics.median(host),
                                                                                     statistics.mean(host)))
print("  element budgets on %d of %d cases, from the GPU pass on %d" % (
    sum(bool(x["judge"].get("element_terms")) for x in v), len(v), sum(bool(x["judge"].get("terms_gpu")) for x in v)))
