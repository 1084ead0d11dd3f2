#!/usr/bin/env bash
# test_probe_capacity_cli.sh ATTNFUZZ — the capacity probe from the command line: on a
# seed whose allocation is tight, planted:pad_to_tile (keys up to the 64-key tile read
# unmasked, cut at the allocation) is a `leak` whose detail says "capacity", and the
# probe's time is judge.seconds.per_probe.capacity in the JSON; with --no-probes the same
# run passes (exit 0) and no probe time is reported; the cpu backend passes with the probe.
set -u
bin=${1:?usage: test_probe_capacity_cli.sh path/to/attnfuzz}
source "$(dirname "$0")/lib_probe_cli.sh"
check bug 1 "d['verdict'] == 'leak' and 'capacity' in f[0]['detail'] and per.get('capacity', 0) > 0" \
  -- --backend planted:pad_to_tile
check bug_no_probes 0 "d['verdict'] == 'pass' and 'capacity' not in per" -- --backend planted:pad_to_tile --no-probes
check cpu 0 "d['verdict'] == 'pass' and per.get('capacity', 0) > 0" -- --backend cpu
finish test_probe_capacity_cli
