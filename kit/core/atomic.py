"""Write files so that a reader sees the old content or the whole new one, never a part."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(dest):
    """Yield a temporary path beside ``dest``; rename it onto ``dest`` only if the block succeeds."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix="." + dest.name + ".", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes(dest, data: bytes) -> None:
    """Write ``data`` to ``dest`` whole or not at all; a full disk is a one-line KitError."""
    try:
        with atomic_path(dest) as tmp:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
    except OSError as e:
        from .errors import KitError

        raise KitError(f"cannot write {dest}: {e.strerror or e}; nothing was changed") from None
