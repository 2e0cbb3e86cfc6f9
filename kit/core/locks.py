"""An exclusive lock on a file, held across processes (and across machines on a shared disk)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .paths import StrPath


@contextmanager
def file_lock(path: StrPath) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` for the block; waits for the holder to finish.

    Two builders of one stack (two `kit run`s, or two cluster workers sharing a KIT_HOME) take
    turns: the second finds the first one's finished build instead of deleting it half-made.
    The lock dies with its process, so a killed builder never leaves it held."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
