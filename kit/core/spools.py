"""Temporary folders a long command owns, and the sweep of those a killed command left.

A spool folder is named ``PREFIX<pid>-<random>`` and holds ``.owner``, on which its process
keeps an exclusive ``flock`` for as long as it uses the folder. The kernel drops the lock when
the process dies, however it dies, so the next command that makes a folder of that kind
removes the ones whose lock it can take: a live owner's folder is never touched, whatever its
age, and a reused pid does not keep a dead owner's folder alive. A folder without ``.owner``
(made by an older kit, or a process killed between making it and locking it) is removed once
its pid is gone, or, without a pid in its name, once it is older than ``STALE_S``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .paths import StrPath
from .processes import alive

OWNER = ".owner"
STALE_S = 3600.0  # an unlocked folder of unknown owner this old is a leftover
BUNDLE = ".bundle-"  # an import's (or a compare's) bundle, unpacked in the store's folder
EXPORT = ".export-"  # an export's image archives, written before they join the bundle


@contextmanager
def spool(parent: StrPath, prefix: str) -> Iterator[Path]:
    """A new folder ``parent/PREFIX<pid>-...`` for the block, locked as its owner's and removed
    afterwards; the leftovers of killed owners under ``parent`` are swept first."""
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    sweep(parent, prefix)
    sweep_trash(parent)
    d = Path(tempfile.mkdtemp(dir=parent, prefix=f"{prefix}{os.getpid()}-"))
    fd = os.open(d / OWNER, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield d
    finally:
        discard(d)
        os.close(fd)


def sweep(parent: StrPath, prefix: str) -> int:
    """Remove the folders ``parent/PREFIX*`` whose owner is gone; returns how many."""
    parent = Path(parent)
    try:
        found = [
            d
            for d in parent.iterdir()
            if d.name.startswith(prefix) and d.is_dir() and not d.is_symlink()
        ]
    except OSError:
        return 0
    removed = 0
    for d in found:
        pid = d.name[len(prefix) :].split("-")[0]
        if abandoned(d / OWNER, int(pid) if pid.isdigit() and len(pid) < 10 else None, d):
            discard(d)
            removed += 1
    return removed


def abandoned(lock: Path, pid: int | None, made: Path) -> bool:
    """The one rule of every sweep (a spool folder, an atomic write's temporary file and its
    note): is what ``made`` is its owner's to remove, now that the owner is gone? ``lock``: the
    file its owner held an flock on, ``pid``: the owner's process id, from its name."""
    if pid == os.getpid():
        return False
    state = held(lock)
    if state is None:  # no lock (an older kit's, or not locked yet): by pid, else age
        return not _alive(pid) if pid is not None else age(made) > STALE_S
    if state:  # its owner runs
        return False
    # unlocked: its owner is dead, unless it is between making the file and locking it
    return pid is None or not _alive(pid) or age(made) > STALE_S


def held(lock: Path) -> bool | None:
    """Whether a live process holds an flock on the file ``lock``: True, False, or None when
    there is no such file. One that cannot be opened (another user's, not a regular file)
    counts as held: it is never anyone's to remove."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError:
        return True
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return True
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # EWOULDBLOCK: its owner runs
        return True
    finally:
        os.close(fd)  # our probe's lock goes with it
    return False


def _alive(pid: int) -> bool:
    return alive(pid)


def age(d: Path) -> float:
    """Seconds since ``d`` was last changed (0 when it is gone)."""
    try:
        return time.time() - d.stat().st_mtime
    except OSError:
        return 0.0


def discard(path: StrPath) -> None:
    """Remove a folder, whatever is in it and whoever still writes there: it is first renamed
    aside (one step, so a half-removed folder is never taken for a whole one), then removed
    as far as it can be; what cannot be removed now is swept with ``.trash-`` later."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    aside = path.with_name(f".trash-{os.getpid()}-{time.monotonic_ns()}-{path.name}"[:200])
    try:
        os.rename(path, aside)
    except OSError:
        aside = path
    shutil.rmtree(aside, ignore_errors=True)
    if aside.exists():  # a writer still adding files: try once more, then leave it to a sweep
        shutil.rmtree(aside, ignore_errors=True)


def sweep_trash(parent: StrPath) -> int:
    """Remove what ``discard`` could not under ``parent`` (its process gone)."""
    return sweep(parent, ".trash-")
