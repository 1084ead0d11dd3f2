#!/usr/bin/env python3
"""ci/skip_reasons.py BUILD_DIR — after ctest: one line per skipped test with its reason,
read from the test's own output in BUILD_DIR/Testing/Temporary/LastTest.log (the line
that says skip / no GPU). Prints nothing when no test was skipped."""
import re
import sys

log_path = sys.argv[1] + "/Testing/Temporary/LastTest.log"
try:
    text = open(log_path, encoding="utf-8", errors="replace").read()
except OSError as e:
    sys.exit(f"skip_reasons: cannot read {log_path}: {e.strerror}")
# each test: "N/M Testing: NAME" ... "Output:" ---- OUTPUT "<end of output>" ... 'Test Skipped' or 'Test Passed'
blocks = re.split(r"^\d+/\d+ Testing: ", text, flags=re.M)[1:]
skipped = []
for block in blocks:
    name = block.split("\n", 1)[0].strip()
    if not re.search(r'^"?Test Skipped|^Test Skipped|Skipped', block.split("<end of output>")[-1], re.M):
        continue
    out = block.split("----------------------------------------------------------", 1)[-1].split("<end of output>")[0]
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    reason = next((l for l in lines if re.search(r"skip|no gpu|not available|unavailable|no cuda", l, re.I)),
                  lines[-1] if lines else "(the test printed no reason)")
    skipped.append((name, reason))
if skipped:
    print(f"== {len(skipped)} skipped test(s) and why")
    for name, reason in skipped:
        print(f"  skipped {name}: {reason}")
