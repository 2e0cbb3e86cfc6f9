"""Processes on this machine: is one still running, how many cores may they use, which signal
handlers this one keeps, and who is in a process group (``kit.core.tether`` ends them)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def alive(pid: int) -> bool:
    """True while a process with this id runs on this machine (or we may not signal it); a
    zombie, which has ended and waits to be reaped, is not running (Linux says so in /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        pass
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
def keeping_signal_handlers() -> Iterator[None]:
    """The SIGINT and SIGTERM handlers as they were before the block, whatever it installed
    (a library's import may take them over). Only the main thread may set them."""
    main = threading.current_thread() is threading.main_thread()
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
