"""Processes on this machine: is one still running, and how many cores may they use."""

from __future__ import annotations

import os


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
