#!/usr/bin/env bash
# test_probe_history_cli.sh ATTNFUZZ — the history probe from the command line (the
# backend found through the registry: the CP wrapper over the plugin, its fresh instance
# made through both): planted:kernel_cache_scale (compiled kernels cached by shape, the
# first scale baked in) fails (the feature probe's scale toggle sees it first) with a
# `nondeterministic` finding whose detail names the scale,
# and the probe's time is judge.seconds.per_probe.history in the JSON; with --no-probes
# the same run passes; planted:none and flash_ref pass with the probe run.
set -u
bin=${1:?usage: test_probe_history_cli.sh path/to/attnfuzz}
source "$(dirname "$0")/lib_probe_cli.sh"
check bug 1 "d['verdict'] in ('feature_ignored', 'nondeterministic') and [x['kind'] for x in f if x['detail'].startswith('history: scale')][:1] == ['nondeterministic'] and per.get('history', 0) > 0" \
  -- --backend planted:kernel_cache_scale
check bug_no_probes 0 "d['verdict'] == 'pass' and 'history' not in per" -- --backend planted:kernel_cache_scale --no-probes
check none 0 "d['verdict'] == 'pass' and per.get('history', 0) > 0" -- --backend planted:none
check flash_ref 0 "d['verdict'] == 'pass' and per.get('history', 0) > 0" -- --backend flash_ref
finish test_probe_history_cli
