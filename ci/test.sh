#!/usr/bin/env bash
# ci/test.sh — the test command: set up, build (normal and ASan+UBSan), run every test.
# GPU tests skip with a visible reason where no GPU is present; the summary after each
# ctest run lists every skipped test with that reason (ci/skip_reasons.py). Long campaigns
# and case sweeps run short here and long in ci/nightly_tests.sh; the ASan build runs every
# C unit test and leaves out the campaign tests whose runs the normal build already covers
# (the campaign, planted, feature, dropout, scale and claims campaigns) and the fp8
# criterion sweep.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
echo "== build (normal)"
bash ci/build.sh build
echo "== tests (normal build)"
rc=0
(cd build && ctest --output-on-failure -j"$jobs" --timeout 900 2>&1 | tee ctest.log) || rc=$?
python3 ci/skip_reasons.py build
[ $rc -eq 0 ] || exit $rc
echo "== build (ASan + UBSan, clang, libFuzzer targets)"
CC=clang bash ci/build.sh build-asan -DATTNFUZZ_SANITIZE=ON -DATTNFUZZ_FUZZERS=ON
echo "== tests (ASan + UBSan build)"
# The ASan run leaves out what the normal run covers and memory checking adds little to: the
# long campaign tests, the criterion sweeps over plugin kernels (the normal run's 96 cases and
# the nightly's 320 check the criterion), the Slurm and gate orchestration, and the tests of
# the README's snippets, the Python target mappings, orphaned children and the worker score
# features, the print golden, the Python worker end-to-end runs (numpy API too, and the per-pass
# engines' planted worker), the fp8_e5m2 / out_dtype end-to-end campaigns (a 12 s campaign under
# ASan ran 0 cases), the SARIF schema campaigns, and the isolation and crash
# orchestration (CLI- and process-level checks of code the C unit tests and the bounded
# libFuzzer runs exercise under ASan), and the CLI-level runs whose C parts have unit tests
# under ASan: the input-mutation check end to end (test_mutation), the worker's GPU budget,
# prepare-ahead's verdict comparisons (test_prepare_ahead), --gpus, the nightly driver and
# the campaign's deduplication (under ASan these six took 75, 62, 48, 27, 25 and 22 s against
# 5, 2, 26, 26, 23 and 22 s in the normal build), to keep CI near 20 minutes. Every C unit test runs
# under ASan. test_did_you_mean (option spellings) also runs in the normal build only: under
# ASan its 1 s in-process campaigns ended three times in two CI runs with LeakSanitizer's own
# tracer crashing at exit ("Tracer caught signal 11 ... LeakSanitizer has encountered a fatal
# error") after a clean campaign; 70 direct reruns of the same command did not repeat it.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest --output-on-failure -j"$jobs" --timeout 1800 \
   -E 'campaign|planted|^test_criterion_fp8$|^test_criterion_kernels$|^test_features$|^test_dropout$|^test_scale$|^test_claims_hdim$|^test_slurm$|^test_gate$|^test_readme$|^test_pymap$|^test_serving_targets$|^test_orphans$|^test_worker_score_features$|^test_case_print_stable$|^test_worker$|^test_worker_given$|^test_isolation$|^test_crash_stats$|^test_numpy_api$|^test_did_you_mean$|^test_fp8_e5m2_end_to_end$|^test_fp8_out_dtype_end_to_end$|^test_fp8_kv_end_to_end$|^test_fp8_head_descale_end_to_end$|^test_outputs$|^test_sarif_schema$|^test_worker_dispatch$|^test_input_mutation$|^test_worker_gpu_budget$|^test_prepare_ahead_cli$|^test_gpus$|^test_nightly$|^test_dedup$' \
   2>&1 | tee ctest.log) || rc=$?
python3 ci/skip_reasons.py build-asan
exit $rc
