"""Reading a file kit keeps under KIT_HOME: a regular file, not a link, read bounded."""

from __future__ import annotations

import json
import os
import stat
from typing import Any

from .errors import Damaged
from .paths import StrPath

SMALL = 1 << 20  # a record kit writes is a few KiB
# a dataset's file: the records of at most 10,000,000 proteins kit imports from 512 MiB of text
DATASET = 1 << 31


class NotKits(Damaged):
    """A file in KIT_HOME that is not what kit wrote there: a link, a FIFO, a device, a folder,
    too large, or (read as JSON) not JSON. ``path`` names it; `kit store check --repair` moves
    it aside."""

    def __init__(self, path: StrPath, why: str) -> None:
        super().__init__(
            f"{path} {why}, not the file kit writes there; `kit store check "
            "--repair` moves it aside (kept)"
        )
        self.path, self.why = str(path), why


def _kind(path: StrPath, mode: int) -> str:
    if stat.S_ISLNK(mode):
        try:
            return f"is a link (to {os.readlink(path)[:200]!r})"
        except OSError:
            return "is a link"
    return {
        stat.S_IFIFO: "is a FIFO",
        stat.S_IFCHR: "is a device",
        stat.S_IFBLK: "is a device",
        stat.S_IFDIR: "is a folder",
        stat.S_IFSOCK: "is a socket",
    }.get(stat.S_IFMT(mode), "is not a regular file")


def shape_problem(path: StrPath, limit: int = SMALL) -> str | None:
    """Why ``path`` is not a file kit could have written there (None: a regular file, not a
    link, within ``limit`` bytes, or absent), from its lstat alone: nothing is opened."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, PermissionError):  # absent, or for the open to say
        return None
    if not stat.S_ISREG(st.st_mode):
        return _kind(path, st.st_mode)
    if st.st_size > limit:
        return f"holds {st.st_size:,} bytes, more than any such file kit writes ({limit:,})"
    return None


def read_home(path: StrPath, limit: int = SMALL) -> bytes | None:
    """The bytes of ``path``, a file kit keeps in its home; None when it is absent. Anything
    else there (a link, a FIFO or a device, a folder, more than ``limit`` bytes) is NotKits, in
    one line naming it. The open neither blocks nor follows a link, and the read is bounded,
    whatever was put in the file's place between the look and the read."""
    why = shape_problem(path, limit)
    if why:
        raise NotKits(path, why)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except PermissionError:  # this user's lot, not the file's: said as such by the CLI
        raise
    except OSError as e:  # replaced by a link or worse since the look
        raise NotKits(path, f"cannot be opened as a plain file ({e.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotKits(path, _kind(path, st.st_mode))
        data = f.read(limit + 1)
    if len(data) > limit:
        raise NotKits(path, f"holds more than {limit:,} bytes")
    return data


def read_home_json(path: StrPath, limit: int = SMALL) -> Any:
    """``path``'s JSON (read as ``read_home`` reads), or None when it is absent; empty, cut
    short or garbage is NotKits."""
    data = read_home(path, limit)
    if data is None:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise NotKits(
            path, "is empty" if not data.strip() else "is not JSON (cut short, or garbage)"
        ) from None


def read_small(path: StrPath, limit: int = SMALL) -> bytes | None:
    """``read_home``'s bytes, or None for anything but a file kit wrote (for a record that is
    only remembered, where absent and damaged mean the same: made again)."""
    try:
        return read_home(path, limit)
    except NotKits:
        return None


def read_head(path: StrPath, limit: int = SMALL) -> bytes | None:
    """The first ``limit`` bytes of ``path`` if it is a regular file, not a link (a file a
    worker wrote, whatever its size: what follows its head is not read); None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return f.read(limit)
