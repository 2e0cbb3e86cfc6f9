"""Reading a small file kit keeps under KIT_HOME: a regular file, not a link, read bounded."""

from __future__ import annotations

import os
import stat

SMALL = 1 << 20  # a record kit writes is a few KiB


def _read(path, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of ``path`` if it is a regular file and not a link, else None.
    The open neither blocks nor follows a link, whatever was put in the file's place between
    the look and the read."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return f.read(limit)


def read_small(path, limit: int = SMALL) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not a link) of at most ``limit`` bytes;
    None otherwise (missing, a FIFO or a device, a link, too big: not what kit wrote there)."""
    data = _read(path, limit + 1)
    return data if data is not None and len(data) <= limit else None


def read_head(path, limit: int = SMALL) -> bytes | None:
    """The first ``limit`` bytes of ``path`` if it is a regular file, not a link (a file a
    worker wrote: what follows its head is not read); None otherwise."""
    return _read(path, limit)
