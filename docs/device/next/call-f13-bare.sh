#!/usr/bin/env bash
# Device call (carry [".whl/fe"]; at most 5 min): F13 outside attnfuzz (two processes on the
# system cuDNN, two on the torch venv's). Output: r/bare-f13.txt.
exec bash docs/device/next/call-bare-py.sh docs/research-scripts/cudnn_fp8_long_q.py 290 f13
