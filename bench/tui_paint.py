"""How long `kit tui` takes to show its first screen, against a bare Textual app (issue 43).

Each round starts, in a real 80x24 terminal (tmux), `kit tui` on a store holding every kind of
run (tests/support/stored.py's hand-made one, at 120 synthetic proteins) and a bare Textual app (a
header, one line, a footer: what any Textual app pays to paint at all), alternating which goes
first, and reads the screen every 20 ms: the first paint is the time from starting the process
to its tab bar on the screen; for kit also the time until the Setup tab's data (the dataset
line, read by a worker after the first paint) is there. Medians over ROUNDS, and their ratio:

    .venv/bin/python bench/tui_paint.py [--rounds 5] [--home KIT_HOME] [--tree DIR]

``--home``: an existing KIT_HOME instead of the hand-made store (your own store, say).
``--tree``: the kit of another checkout (a worktree of another commit: `python -m kit` run in
it imports its kit), to compare before and after on the same store. Needs tmux. The target (issue 43): first paint
under 1.5 s on a quiet machine; on a shared one the CPU seconds say more than the wall time.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
N = 120
BARE = (
    "from textual.app import App\n"
    "from textual.widgets import Footer, Header, Static\n"
    "class Bare(App):\n"
    "    def compose(self):\n"
    "        yield Header()\n"
    "        yield Static('1 Setup  bare textual app')\n"
    "        yield Footer()\n"
    "Bare().run()\n"
)


def _store(home: Path) -> None:
    """tests/support/stored.py's store of every kind, at 120 synthetic proteins, in ``home``."""
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    os.environ["KIT_HOME"] = str(home)
    from stored import every_kind_store

    from kit.data import load_dataset

    made = home.parent / "made"  # where the hand-made runs' arrays are written first
    made.mkdir(parents=True, exist_ok=True)
    every_kind_store(made, dataset=load_dataset("synthetic", N), home=home)


def _screen(session: str) -> str:
    return subprocess.run(
        ["tmux", "capture-pane", "-pt", session], capture_output=True, text=True
    ).stdout


def _cpu(pid: int) -> float:
    """CPU seconds (user + system, every thread) process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _time(command: list, marks: tuple, env: str, tree: Path, timeout: float = 120) -> list:
    """[(wall seconds, CPU seconds)] from starting ``command`` (with the variables ``env``,
    "NAME=value ...", in the folder ``tree``: `python -m kit` imports the kit there) in an
    80x24 tmux window until each of ``marks`` is on its screen (in order). The CPU seconds are
    the process's own: on a shared machine they say what the wall time cannot."""
    session = f"paint-{os.getpid()}-{time.monotonic_ns()}"
    found = []
    t0 = time.perf_counter()
    # `exec`: the window's process is the command itself, whose CPU time is read
    subprocess.run(
        [
            "tmux",
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "80",
            "-y",
            "24",
            "-c",
            str(tree),
            # the server's environment, not this process's, is the window's: said here
            f"exec env {env} " + " ".join(map(shlex.quote, command)),
        ],
        check=True,
    )
    try:
        pid = int(
            subprocess.run(
                ["tmux", "display-message", "-p", "-t", session, "#{pane_pid}"],
                capture_output=True,
                text=True,
            ).stdout
        )
        for mark in marks:
            while mark not in _screen(session):
                if time.perf_counter() - t0 > timeout:
                    raise SystemExit(
                        f"tui_paint: {mark!r} not on the screen after {timeout} s:\n"
                        + _screen(session)
                    )
                time.sleep(0.02)
            found.append((time.perf_counter() - t0, _cpu(pid)))
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    return found


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--home", type=Path, help="an existing KIT_HOME (default: a hand-made store)")
    p.add_argument("--tree", type=Path, help="run the kit of this checkout (default: this one)")
    a = p.parse_args()
    if not shutil.which("tmux"):
        raise SystemExit("tui_paint: tmux is not installed")
    home = a.home
    if home is None:
        home = Path(tempfile.mkdtemp(prefix="tui-paint-")) / "home"
        _store(home)
    runs = {"bare": [], "kit": [], "kit data": []}
    tree = (a.tree or ROOT).resolve()
    # one session held open throughout: the tmux server would exit with the last one, and a
    # window started as it exits fails
    hold = f"paint-hold-{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", hold, "sleep", "86400"], check=True)
    try:
        _rounds(a.rounds, runs, f"KIT_HOME={shlex.quote(str(home))}", tree)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", hold], capture_output=True)
    (bw, bc), (kw, kc), (dw, dc) = (
        (statistics.median(w for w, _ in runs[k]), statistics.median(c for _, c in runs[k]))
        for k in ("bare", "kit", "kit data")
    )
    print(
        f"kit from {tree}; medians of {a.rounds} (load average {os.getloadavg()[0]:.1f}, "
        f"{os.cpu_count()} cores), wall / CPU seconds:\n"
        f"  bare Textual app, first paint {bw:.2f} / {bc:.2f}\n"
        f"  kit tui, first paint          {kw:.2f} / {kc:.2f}  (ratio {kw / bw:.2f} / "
        f"{kc / bc:.2f})\n"
        f"  kit tui, Setup's data shown   {dw:.2f} / {dc:.2f}  (ratio {dw / bw:.2f} / "
        f"{dc / bc:.2f})"
    )


def _rounds(rounds: int, runs: dict, env: str, tree: Path) -> None:
    python = sys.executable
    for r in range(rounds):
        for which in ("bare", "kit") if r % 2 == 0 else ("kit", "bare"):
            if which == "bare":
                runs["bare"] += _time([python, "-c", BARE], ("1 Setup",), env, tree)
            else:  # `kit tui` as the kit command runs it, the tree's kit
                paint, data = _time(
                    [python, "-m", "kit", "tui"], ("7 Compare", "Dataset synthetic"), env, tree
                )
                runs["kit"].append(paint)
                runs["kit data"].append(data)
        print(
            f"round {r + 1}: bare {runs['bare'][-1][0]:.2f} s, kit first paint "
            f"{runs['kit'][-1][0]:.2f} s, its data {runs['kit data'][-1][0]:.2f} s "
            f"(CPU {runs['bare'][-1][1]:.2f}, {runs['kit'][-1][1]:.2f}, "
            f"{runs['kit data'][-1][1]:.2f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()
