#!/usr/bin/env bash
# Measure the torch-device pair (CPU against CUDA, or MPS on a Mac) on a machine that has one.
#
#   bench/torch_devices.sh [N]        # N proteins (default 6000)
#
# Sets up kit without the sklearn stacks, builds the torch stack for the accelerator (on Linux
# the CUDA build from PyPI, ~3 GB), runs torch-device, torch-seed and torch-deterministic, and
# prints the budget and writes it as JSON (to $OUT when set, else ./torch_devices.json).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-6000}"
export KIT_HOME="${KIT_HOME:-$PWD/.kit-home}"
./bootstrap.sh --no-stacks --no-audit --no-fetch
if [ "$(uname -s)" = Darwin ]; then DEVICE=mps; else DEVICE=cuda; fi
.venv/bin/kit stacks --json >/dev/null
.venv/bin/kit run --factor torch-device --device "$DEVICE" --n "$N" --threads 1
.venv/bin/kit run --factor torch-seed,torch-deterministic --n "$N" --seeds 0-9
.venv/bin/kit budget --n "$N" --dataset synthetic
.venv/bin/kit budget --n "$N" --dataset synthetic --json > "${OUT:-.}/torch_devices.json"
.venv/bin/kit budget --n "$N" --dataset synthetic --factor torch-device
