"""The walk of a command through kit's modules: how many stays, and how many return to a module
already left (issue 38's measure of a path that goes back and forth between layers), counted
over modules and over floors (kit.cli, kit.app, kit.analysis, kit.runs, ...).

The walk starts at the command's own function (kit.cli's `_cmd_NAME`, not the parser's making)
and follows kit's calls at most DEPTH deep below it. A *stay* is a maximal run of consecutive
Python calls (sys.setprofile 'call' events, the main thread) in one kit module; a *return* is a
stay in a module the walk had already stayed in and
left. Measured on a command that has everything it needs stored (the second of two identical
runs), so the walk is the command's own path, not the workers'.

    .venv/bin/python bench/walk.py [--tree DIR] [-- kit arguments]

``--tree DIR``: the kit of another checkout (a worktree of an earlier commit) as the baseline,
run in the same process setup, same store folder layout, same arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

_DEFAULT = [
    "run",
    "--factor",
    "repeat",
    "--dataset",
    "synthetic",
    "--n",
    "120",
    "--threads",
    "1",
    "--yes",
]

_TRACE = r"""
import json, sys
DEPTH = int(sys.argv[2])
sys.argv = ["kit", *json.loads(sys.argv[1])]
from kit import cli
stays, last, root = [], None, None
def _depth(frame):
    # how many kit frames deep frame is below the command's function (itself: 0); None outside
    n = 0
    while frame is not None and frame is not root:
        if frame.f_globals.get("__name__", "").startswith("kit"):
            n += 1
        frame = frame.f_back
    return n if frame is root else None
def prof(frame, event, arg):
    global last, root
    if event != "call":
        return
    mod = frame.f_globals.get("__name__", "")
    if root is None:  # the walk starts at the command's own function (kit.cli's _cmd_NAME)
        if not (mod.startswith("kit.cli") and frame.f_code.co_name.startswith("_cmd_")):
            return
        root = frame
    if not mod.startswith("kit") or mod == last:
        return
    depth = _depth(frame)
    if depth is None or depth > DEPTH:
        return
    stays.append(mod)
    last = mod
code = None
sys.setprofile(prof)
try:
    code = cli.main()
except SystemExit as e:
    code = e.code
finally:
    sys.setprofile(None)
def walk(rooms):
    # (stays, returns) of a sequence of rooms, consecutive repeats one stay
    seq = [r for i, r in enumerate(rooms) if i == 0 or r != rooms[i - 1]]
    returns, left = 0, set()
    for i, r in enumerate(seq):
        if r in left:
            returns += 1
        if i:
            left.add(seq[i - 1])
    return len(seq), returns
floors = [".".join(m.split(".")[:2]) for m in stays]
(ms, mr), (fs, fr) = walk(stays), walk(floors)
print(json.dumps({"exit": code, "walk": stays, "stays": ms, "returns": mr,
                  "modules": len(set(stays)), "floor_stays": fs, "floor_returns": fr}),
      file=sys.stderr)
"""


def _walk(tree: str, args: list, home: str, depth: int) -> dict:
    env = {**os.environ, "KIT_HOME": home, "PYTHONPATH": tree, "COLUMNS": "100"}
    cmd = [sys.executable, "-c", _TRACE, json.dumps(args), str(depth)]
    subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree)  # makes the runs
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree)
    return json.loads(out.stderr.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", help="a checkout of another commit: its walk beside this one's")
    ap.add_argument(
        "--depth",
        type=int,
        default=3,
        help="kit calls at most this deep below "
        "the command's function (default 3: what it calls, what those call, one more; "
        "the rooms a reader walks through, not every helper)",
    )
    ap.add_argument("--show", action="store_true", help="print each walk, one stay a line")
    ap.add_argument("args", nargs="*", help=f"kit's arguments (default: {' '.join(_DEFAULT)})")
    a = ap.parse_args()
    args = a.args or _DEFAULT
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = [("this kit", here)] + ([("--tree", os.path.abspath(a.tree))] if a.tree else [])
    print(
        "kit " + " ".join(args) + f"  (from the command's function, calls at most {a.depth} deep)"
    )
    for label, tree in rows:
        with tempfile.TemporaryDirectory() as home:
            w = _walk(tree, args, home, a.depth)
        print(
            f"{label:9} exit {w['exit']}: modules {w['stays']} stays ({w['modules']} modules), "
            f"{w['returns']} returns to one already left; floors (kit.cli, kit.app, ...) "
            f"{w['floor_stays']} stays, {w['floor_returns']} returns"
        )
        if a.show:
            print("  " + "\n  ".join(w["walk"]))


if __name__ == "__main__":
    main()
