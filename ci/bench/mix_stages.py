#!/usr/bin/env python3
"""mix_stages.py VERDICTS.jsonl — the judge's time per stage over a config mix (`attnfuzz run
--json` lines): per stage the median and mean in milliseconds, and the median of the case's
time outside the backend's run (every stage but `run`: the judge's own share, which includes
the GPU passes the judge launches and waits for), and the same less the backend runs inside
the compare (repeats) and probes stages; the backend's builds over the case's runs by phase; run 0's copies and device passes where the backend times them. Also how many cases had the element budgets
and how many got them from the GPU pass."""
import json
import statistics
import sys

v = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
v = [x for x in v if "judge" in x]
stages = ["gen", "oracle", "oracle_gpu", "magnitudes", "terms_gpu", "reference", "run", "compare", "compare_runs",
          "probes", "probes_run", "cert_wait", "cert"]
print("mix stages over %d verdicts (ms): stage median mean" % len(v))
for k in stages:
    xs = [1e3 * (x["judge"]["seconds"].get(k) or 0.0) for x in v]
    if xs:
        print("  %-11s %9.1f %9.1f" % (k, statistics.median(xs), statistics.mean(xs)))
for k in ["buffers", "read", "criterion", "criterion_terms", "criterion_rows"]:  # every judged run's host checks (run 0, repeats, probes' reruns)
    xs = [1e3 * ((x["judge"]["seconds"].get("checks") or {}).get(k) or 0.0) for x in v]
    print("  checks %-14s %5.1f %9.1f" % (k, statistics.median(xs), statistics.mean(xs)))
# CPU seconds of the thread that ran each part (verdict.h: cpu_*); the process's CPU beyond
# their sum is on other threads
for k in ["prepare", "run", "compare", "probes", "cert"]:
    xs = [1e3 * ((x["judge"]["seconds"].get("cpu") or {}).get(k) or 0.0) for x in v]
    print("  cpu %-17s %5.1f %9.1f" % (k, statistics.median(xs), statistics.mean(xs)))
xs = [1e3 * sum((x["judge"]["seconds"].get("cpu") or {}).values()) for x in v]
print("  cpu %-17s %5.1f %9.1f" % ("sum", statistics.median(xs), statistics.mean(xs)))
probes = sorted({k for x in v for k in (x["judge"]["seconds"].get("per_probe") or {})})
for k in probes:
    xs = [1e3 * ((x["judge"]["seconds"].get("per_probe") or {}).get(k) or 0.0) for x in v]
    print("  probe %-15s %5.1f %9.1f" % (k, statistics.median(xs), statistics.mean(xs)))
# the backend's builds over every run of the case (run 0, repeats, probes), by phase
for k in ["total", "graph", "heuristics", "enumerate", "plans", "ahead", "waited"]:  # ahead: built on the backend's thread before the run; waited: the runs' waits for it
    xs = [1e3 * ((x["judge"]["seconds"].get("builds") or {}).get(k) or 0.0) for x in v]
    if xs and any("builds" in x["judge"]["seconds"] for x in v):
        print("  builds %-14s %5.1f %9.1f" % (k, statistics.median(xs), statistics.mean(xs)))
# plans read from / written to a plan folder (cudnn: ATTNFUZZ_CUDNN_PLAN_DIR), summed
disk = [sum(((x["judge"]["seconds"].get("builds") or {}).get(k) or 0) for x in v) for k in ("plans_from_disk", "plans_to_disk")]
if any(disk):
    print("  plan folder: %d plans read, %d written" % (disk[0], disk[1]))
own = ["gen", "oracle", "magnitudes", "reference", "compare", "probes", "cert_wait"]
host = [1e3 * sum(x["judge"]["seconds"].get(k) or 0.0 for k in own) for x in v]
if host:
    print("  judge time outside the backend's run: median %.1f ms, mean %.1f ms" % (statistics.median(host),
                                                                                     statistics.mean(host)))
# the host share: the judge's own stages less every backend run inside them (the
# repeats' runs in compare, the probes' reruns), graph builds included in those runs
runs_inside = ["compare_runs", "probes_run"]
hs = [h - 1e3 * sum(x["judge"]["seconds"].get(k) or 0.0 for k in runs_inside) for h, x in zip(host, v)]
if hs:
    print("  host time outside every backend run (repeats' and probes' runs too): median %.1f ms, mean %.1f ms" % (
        statistics.median(hs), statistics.mean(hs)))
print("  element budgets on %d of %d cases, from the GPU pass on %d" % (
    sum(bool(x["judge"].get("element_terms")) for x in v), len(v), sum(bool(x["judge"].get("terms_gpu")) for x in v)))
# the backend's run 0 split, when it times its parts (cudnn: copy_seconds, kernel_seconds)
timed = [x for x in v if x.get("kernel_seconds") is not None]
if timed:
    for k in ["seconds", "copy_seconds", "kernel_seconds", "build_seconds"]:
        xs = [1e3 * (x.get(k) or 0.0) for x in timed]
        print("  run 0 %-15s %5.1f %9.1f" % (k, statistics.median(xs), statistics.mean(xs)))
# the cases prepared while the one before was judged (ATTNFUZZ_PREPARE_AHEAD) and the judge's wait for them
ahead = [x for x in v if x["judge"].get("prepared_ahead")]
if ahead:
    xs = [1e3 * (x["judge"]["seconds"].get("ahead_wait") or 0.0) for x in ahead]
    print("  prepared ahead: %d of %d cases; their wait median %.1f ms, mean %.1f ms" % (
        len(ahead), len(v), statistics.median(xs), statistics.mean(xs)))
