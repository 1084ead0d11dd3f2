#!/usr/bin/env bash
# Device call (carry ["build-uf"]; 15 s, ran inline on the warm machine after call6): the oracle
# tests the fp64 tiers' underflow allowance touches (oracle/README.md, "Underflow"), built
# here in Debug from the change (build-uf: the stripped test binaries): test_oracle_gpu (its
# element-by-element check takes the allowance), test_oracle_cert, test_oracle_underflow
# (AUTO serves the GPU tier there) and test_oracle_pipeline.
for t in test_oracle_gpu test_oracle_cert test_oracle_underflow test_oracle_pipeline; do
  echo "== $t"; timeout 200 build-uf/$t > /tmp/$t.txt 2>&1; echo "rc $?"; tail -4 /tmp/$t.txt | cut -c1-400
done
