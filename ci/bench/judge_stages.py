#!/usr/bin/env python3
"""judge_stages.py VERDICT.json [LABEL] — one line: the judge's seconds per stage of a
`attnfuzz run --json` verdict (its "judge" summary), their serial sum, and the
certification that ran beside them (cert: its wall time on CPU threads, overlapping the
stages; cert_wait: what the judge waited for it at the end)."""
import json
import sys

v = json.load(open(sys.argv[1]))
label = sys.argv[2] if len(sys.argv) > 2 else sys.argv[1]
j = v["judge"]
sec = j["seconds"]
stages = ["gen", "oracle", "magnitudes", "reference", "run", "compare", "probes"]
serial = sum(sec.get(k) or 0.0 for k in stages) + (sec.get("cert_wait") or 0.0)
print("  judge stages %s: %s, cert_wait %.2f | sum %.2f s; cert %.2f s beside them (oracle_gpu %.2f); "
      "tier %s, reference %s, gen_gpu %s, %d rows + %d keys certified, gap/bound %.3g" % (
          label, ", ".join("%s %.2f" % (k, sec.get(k) or 0.0) for k in stages), sec.get("cert_wait") or 0.0,
          serial, sec.get("cert") or 0.0, sec.get("oracle_gpu") or 0.0, j["oracle_tier"], j["reference"],
          j.get("gen_gpu"), j["cert_rows"], j["cert_keys"], j["cert_gap_over_bound"]))
