"""Processes on this machine: is one still running, how many cores may they use, and which
signal handlers this one keeps."""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager


def alive(pid: int) -> bool:
    """True while a process with this id runs on this machine (or we may not signal it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cores() -> int:
    """The cores this process may run on (its CPU affinity; all of them where there is none)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


@contextmanager
def keeping_signal_handlers():
    """The SIGINT and SIGTERM handlers as they were before the block, whatever it installed
    (a library's import may take them over). Only the main thread may set them."""
    main = threading.current_thread() is threading.main_thread()
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def group_members(pgid: int) -> list:
    """The ids of the processes in process group ``pgid`` now (zombies left out: they hold no
    resources and end when reaped). Linux reads /proc; elsewhere ``ps``."""
    import subprocess
    from pathlib import Path

    found = []
    proc = Path("/proc")
    if (proc / "self" / "stat").exists():
        for d in proc.iterdir():
            if not d.name.isdigit():
                continue
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            # the name in parentheses may hold spaces and ')': the fields follow the last ')'
            fields = stat[stat.rfind(")") + 2:].split()
            if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
                found.append(int(d.name))
        return found
    out = subprocess.run(["ps", "-A", "-o", "pid=,pgid=,stat="], capture_output=True,
                         text=True).stdout
    for row in out.splitlines():
        parts = row.split()
        if len(parts) >= 3 and parts[1] == str(pgid) and not parts[2].startswith("Z"):
            found.append(int(parts[0]))
    return found


def end_group(pgid: int, keep: int | None = None, rounds: int = 20) -> int:
    """Kill every process of group ``pgid`` but ``keep`` (a warm worker that leads it and makes
    the next run); a process forked meanwhile is found by the next round. Returns how many."""
    import time

    killed = 0
    for _ in range(rounds):
        if keep is None:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        left = [p for p in group_members(pgid) if p != keep]
        if not left:
            return killed
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
    return killed
