#!/usr/bin/env bash
# ci/sarif_schema.sh [DIR] — put the SARIF 2.1.0 JSON schema where test_sarif_schema.sh
# looks for it (DIR, default .cache/sarif in the repository; ignored by git) and print its
# path. The schema is not in Debian; it comes from PyPI, inside Microsoft's sarif-om source
# distribution (sarif-2.1.0-rtm.4.json, the OASIS 2.1.0 schema at its rtm.4 revision),
# pinned by the archive's SHA-256. The file is only read by the test, never committed.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.cache/sarif}
want=cd5f416b3083e00d402a92e449a7ff67af46f11241073eea0461802a3b5aef98
schema=$dir/sarif-2.1.0-rtm.4.json
if [ -s "$schema" ]; then
  echo "$schema"
  exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! python3 -m pip download -q --no-cache-dir --no-deps --no-binary :all: -d "$tmp" "sarif-om==1.0.4" >"$tmp/log" 2>&1; then
  echo "sarif_schema: pip download of sarif-om 1.0.4 failed: $(tail -1 "$tmp/log")" >&2
  exit 1
fi
got=$(sha256sum "$tmp/sarif_om-1.0.4.tar.gz" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
  echo "sarif_schema: sarif_om-1.0.4.tar.gz has SHA-256 $got, want $want" >&2
  exit 1
fi
tar xzf "$tmp/sarif_om-1.0.4.tar.gz" -C "$tmp" sarif_om-1.0.4/sarif-2.1.0-rtm.4.json
mv "$tmp/sarif_om-1.0.4/sarif-2.1.0-rtm.4.json" "$schema"
echo "$schema"
