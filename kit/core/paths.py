"""Where kit keeps what it writes: ``$KIT_HOME``, else the platform's user data directory."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import KitError

# a path as callers hand it: a str from the command line or the environment, or a Path
StrPath = str | os.PathLike[str]


def kit_home(writing: bool = True) -> Path:
    """The folder kit writes to; a one-line KitError when it cannot be that (KIT_HOME names a
    file, a folder without write permission, ...). ``writing=False``: a folder that is there
    and can be read is enough (a reader of a read-only store, kit.runs.store)."""
    home = named_home()
    if not writing and home.is_dir() and os.access(home, os.R_OK | os.X_OK):
        return home
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KitError(f"KIT_HOME {home} cannot be used: {e.strerror or e}") from None
    if not writable(home):
        raise KitError(
            f"KIT_HOME {home} is not writable by this user; set KIT_HOME to a folder you can write"
        )
    return home


def named_home() -> Path:
    """The folder KIT_HOME names (else the platform's), as named: nothing is made or checked."""
    env = os.environ.get("KIT_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("kit", appauthor=False))


def writable(folder: Path) -> bool:
    """Can this user write in ``folder`` (the kernel's answer, os.access: as root, always)?"""
    return os.access(folder, os.W_OK | os.X_OK)


def subdir(name: str) -> Path:
    """A folder under KIT_HOME, made if it is not there. In a KIT_HOME this user cannot write
    it is not made: reading finds nothing there, and what writes is refused by the store
    (kit.runs.store) or by the system, as one line (kit.cli)."""
    home = kit_home(writing=False)
    d = home / name
    if d.is_dir() or not writable(home):  # a reader of a read-only store finds it or nothing
        return d
    d = kit_home() / name
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KitError(f"cannot create {d}: {e.strerror or e}") from None
    return d
