#!/usr/bin/env python3
"""ci/skip_reasons.py BUILD_DIR [CTEST_OUTPUT] — after ctest: one line per skipped test
with its reason. The skipped tests are the "***Skipped" lines of ctest's own output
(CTEST_OUTPUT, default BUILD_DIR/ctest.log, which ci/test.sh tees); each reason is the
test's own "SKIP ..." line (util/check.h, the shell tests' "skip ..."), read from
BUILD_DIR/Testing/Temporary/LastTest.log. Prints nothing when no test was skipped;
exit 2 when a file cannot be read."""
import re
import sys

build = sys.argv[1]
ctest_out = sys.argv[2] if len(sys.argv) > 2 else build + "/ctest.log"
log_path = build + "/Testing/Temporary/LastTest.log"
try:
    summary = open(ctest_out, encoding="utf-8", errors="replace").read()
    log = open(log_path, encoding="utf-8", errors="replace").read()
except OSError as e:
    print(f"skip_reasons: cannot read {e.filename}: {e.strerror}", file=sys.stderr)
    sys.exit(2)
skipped = re.findall(r"Test +#\d+: (\S+) \.*\*\*\*Skipped", summary)
outputs = {}
for block in re.split(r"^\d+/\d+ Testing: ", log, flags=re.M)[1:]:
    name = block.split("\n", 1)[0].strip()
    body = block.split("Output:\n", 1)[-1].split("<end of output>")[0]
    outputs[name] = [l.strip() for l in body.splitlines() if l.strip() and not l.startswith("-----")]
if skipped:
    print(f"== {len(skipped)} skipped test(s) and why")
for name in skipped:
    lines = outputs.get(name, [])
    reason = next((l for l in lines if re.match(r"(SKIP|skip)\b", l)), lines[-1] if lines else "(no output)")
    print(f"  skipped {name}: {reason}")
