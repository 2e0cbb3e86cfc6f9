"""Reading a small file kit keeps under KIT_HOME: a regular file, not a link, read bounded."""

from __future__ import annotations

import os
import stat

SMALL = 1 << 20  # a record kit writes is a few KiB


def read_small(path, limit: int = SMALL) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not a link) of at most ``limit`` bytes;
    None otherwise (missing, a FIFO or a device, a link, too big: not what kit wrote there).
    The open neither blocks nor follows a link, and the read is bounded, whatever was put in
    the file's place between the look and the read."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = f.read(limit + 1)
    return data if len(data) <= limit else None
