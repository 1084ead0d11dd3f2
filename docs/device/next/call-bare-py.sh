#!/usr/bin/env bash
# call-bare-py.sh SCRIPT [TIMEOUT_S [LABEL]] — a device call (carry [".whl/fe"]) that runs one bare
# research script of docs/research-scripts/ (no attnfuzz) with cudnn-frontend installed from
# .whl/fe, its output in the summary (the script's own driver picks the cuDNN versions).
source ci/device_preamble.sh
export PYTHONUNBUFFERED=1
script=$1 name=${3:-$(basename "$1" .py)} # output: $R/bare-LABEL.txt
[ -f /tmp/fe/env.sh ] || stamp install-fe bash ci/wheels/install.sh /tmp/fe .whl/fe > $R/install-fe.txt 2>&1
( . /tmp/fe/env.sh && timeout "${2:-290}" python3 "$script" ) > $R/bare-$name.txt 2>&1
echo "== $name: exit $?" >> $S
grep -vE "Warning|warn" $R/bare-$name.txt | tail -60 >> $S
tail -70 $S
device_pack
