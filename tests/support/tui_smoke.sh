#!/usr/bin/env bash
# Drive `kit tui` in a real terminal under tmux: walk the tabs, run a tiny plan, read the screen.
#   tests/support/tui_smoke.sh [KIT]      (KIT: the kit executable; default .venv/bin/kit)
# Exits non-zero with the failing screen printed if an expected text is missing.
set -euo pipefail
KIT="${1:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/kit}"
command -v tmux >/dev/null || { echo "tui_smoke: tmux is not installed" >&2; exit 2; }
export KIT_HOME="${KIT_HOME:-$(mktemp -d)}"
S="kit-smoke-$$"
trap 'tmux kill-session -t "$S" 2>/dev/null || true' EXIT
tmux new-session -d -s "$S" -x 100 -y 30 "$KIT tui --n 120 --threads 1 --seeds 0-1"

screen() { tmux capture-pane -pt "$S"; }
expect() {  # expect TEXT [SECONDS]: wait until TEXT is on the screen
  local deadline=$((SECONDS + ${2:-20}))
  until screen | grep -qF -- "$1"; do
    if [ $SECONDS -ge $deadline ]; then
      echo "tui_smoke: expected '$1' on the screen:" >&2; screen >&2; exit 1
    fi
    sleep 0.3
  done
}

expect "Dataset synthetic-120" 30
expect "SYNTHETIC"
key() { tmux send-keys -t "$S" "$@"; sleep 0.5; }
key 2
expect "iterations"
expect "3 runs"     # the plan summary: repeat and seed 0-1 at one thread
key C-r
expect "finished: 3 run(s)" 240
key 4
expect "repeat"
expect "seed"
key 6
expect "null experiment held"
key "?"
expect "Walk the tabs in order"
key Escape
key q
echo "tui_smoke: ok"
