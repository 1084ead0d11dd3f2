#!/usr/bin/env bash
# test_probe_metadata_cli.sh ATTNFUZZ — the metadata probe from the command line: on a thd
# seed, planted:metadata_unchecked (token starts used as addresses unchecked) is found by
# the probe alone: an out_of_bounds finding (O's guard) whose detail names the variant
# "metadata offset_past_end", and a finding of the variant "offsets_decreasing": a crash
# (its run is isolated in a child: attnfuzz and the probe go on) or, where its writes past
# a buffer land in memory the child may write (which depends on where the allocator put the
# buffers: the case's pool of copies, judge/clone.h, reuses them), the guards it changed; its
# time is judge.seconds.per_probe.metadata. With --no-probes the same run passes. On a
# paged seed the plugin's own scratch overflows on a length past its pages: a crash
# finding naming "metadata len_past_pages". planted:none and flash_ref (which check the
# metadata) and cpu (not probed) pass both seeds.
set -u
bin=${1:?usage: test_probe_metadata_cli.sh path/to/attnfuzz}
source "$(dirname "$0")/lib_probe_cli.sh"
seed=corpora/seed/fp16-thd-ragged-gaps.case
check bug_thd 1 "any(x['kind'] == 'out_of_bounds' and 'metadata offset_past_end' in x['detail'] for x in f) and \
any(x['kind'] in ('crash', 'out_of_bounds') and 'metadata offsets_decreasing' in x['detail'] for x in f) and \
per.get('metadata', 0) > 0" \
  -- --backend planted:metadata_unchecked
check bug_no_probes 0 "d['verdict'] == 'pass' and 'metadata' not in per" -- --backend planted:metadata_unchecked --no-probes
for be in planted:none flash_ref cpu; do
  check "${be/:/_}_thd" 0 "d['verdict'] == 'pass'" -- --backend "$be"
done
seed=corpora/seed/fp16-paged-kv.case
check bug_paged 1 "any(x['kind'] == 'crash' and 'metadata len_past_pages' in x['detail'] for x in f)" \
  -- --backend planted:metadata_unchecked
for be in planted:none flash_ref; do
  check "${be/:/_}_paged" 0 "d['verdict'] == 'pass' and per.get('metadata', 0) > 0" -- --backend "$be"
done
check cpu_paged 0 "d['verdict'] == 'pass'" -- --backend cpu
finish test_probe_metadata_cli
