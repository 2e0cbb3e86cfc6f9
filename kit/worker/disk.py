"""A full disk under the worker's writes, said as one line naming the disk and the folder."""

from __future__ import annotations

import errno
import os

_FULL = (errno.ENOSPC, errno.EDQUOT)


def mount_of(path: str) -> str:
    """The mount point of the file system holding ``path``: what a user frees space on."""
    p = os.path.abspath(path)
    while not os.path.exists(p) and p != os.path.dirname(p):
        p = os.path.dirname(p)
    while not os.path.ismount(p) and p != os.path.dirname(p):
        p = os.path.dirname(p)
    return p


def free_bytes(path: str) -> int:
    try:
        st = os.statvfs(path)
    except OSError:
        return -1
    return st.f_bavail * st.f_frsize


def full_disk(e: OSError, folder: str, what: str, need: int) -> str | None:
    """The line for ``e``, raised writing ``what`` (``need`` bytes) in ``folder``, when the
    disk is full; None for any other error. numpy's short write ("9600 requested and 1008
    written") carries no errno: it is a full disk when less than ``need`` is free."""
    if e.errno not in _FULL and not (e.errno is None and 0 <= free_bytes(folder) < need):
        return None
    return (
        f"no space left on the disk writing {what} ({need:,} bytes) in {folder}: free space "
        f"on {mount_of(folder)} and run the same command again"
    )
