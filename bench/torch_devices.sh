#!/usr/bin/env bash
# Measure the torch-device pair (CPU against CUDA, or MPS on a Mac) on a machine that has one.
#
#   bench/torch_devices.sh [N] [PYTHON]
#
# N       proteins (default 6000; the built-in synthetic set unless Swiss-Prot is cached)
# PYTHON  optional: an interpreter that already holds torch and kit's runtime packages (numpy,
#         scipy, scikit-learn, rich, tabulate, threadpoolctl), e.g. a GPU image's or a cluster
#         module's python3 on a machine that cannot reach the package index. kit then runs from
#         this checkout in it (`PYTHON -m kit`), and the torch runs use it as an external stack
#         (`kit stacks add`). Without PYTHON: ./bootstrap.sh sets kit up, and the catalogue's
#         torch stack for the accelerator is built (on Linux the CUDA build from PyPI, ~3 GB).
#
# Runs torch-device, torch-seed and torch-deterministic, prints the budget and the device pairs,
# and writes the budget as JSON (to $OUT when set, else ./torch_devices.json) with the torch
# stack's doctor report beside it (torch_stack.json).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-6000}"
PY="${2:-}"
export KIT_HOME="${KIT_HOME:-$PWD/.kit-home}"
DEST="${OUT:-.}"
if [ "$(uname -s)" = Darwin ]; then DEVICE=mps; else DEVICE=cuda; fi

if [ -n "$PY" ]; then
  KIT=("$PY" -m kit)
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
  "${KIT[@]}" stacks remove accel-torch >/dev/null 2>&1 || true
  "${KIT[@]}" stacks add accel-torch "$(command -v "$PY")"
  TORCH=(--torch-stack accel-torch)
  STACK=accel-torch
else
  ./bootstrap.sh --no-stacks --no-audit --no-fetch
  KIT=(.venv/bin/kit)
  TORCH=()
  STACK=$("${KIT[@]}" stacks --json | .venv/bin/python -c "
import json, sys
rows = [r for r in json.load(sys.stdin) if r['kind'] == 'torch' and '$DEVICE' in r['devices']
        and r['status'] != 'unavailable']
print(rows[0]['name'] if rows else '')")
  [ -n "$STACK" ] || { echo "torch_devices: no torch stack with $DEVICE can exist here (kit stacks)" >&2; exit 1; }
  "${KIT[@]}" stacks build "$STACK"
fi

"${KIT[@]}" stacks doctor "$STACK" --json > "$DEST/torch_stack.json"
"${KIT[@]}" run --factor torch-device --device "$DEVICE" --n "$N" --threads 1 "${TORCH[@]}"
"${KIT[@]}" run --factor torch-seed,torch-deterministic --n "$N" --seeds 0-9 "${TORCH[@]}"
"${KIT[@]}" budget --n "$N" --dataset synthetic
"${KIT[@]}" budget --n "$N" --dataset synthetic --json > "$DEST/torch_devices.json"
"${KIT[@]}" budget --n "$N" --dataset synthetic --factor torch-device
