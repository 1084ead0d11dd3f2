#!/usr/bin/env bash
# Device call (carry [".whl/fe"]; at most 4 min): D1 outside attnfuzz (processes on the system
# cuDNN and on the torch venv's). Output: r/bare-d1.txt.
exec bash docs/device/next/call-bare-py.sh docs/research-scripts/cudnn_dropout_band_bias.py 200 d1
