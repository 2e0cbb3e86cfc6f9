"""Where kit keeps what it writes: ``$KIT_HOME``, else the platform's user data directory."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import KitError


def kit_home() -> Path:
    """The folder kit writes to; a one-line KitError when it cannot be that (KIT_HOME names a
    file, a folder without write permission, ...)."""
    env = os.environ.get("KIT_HOME")
    if env:
        home = Path(env).expanduser()
    else:
        import platformdirs

        home = Path(platformdirs.user_data_dir("kit", appauthor=False))
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KitError(f"KIT_HOME {home} cannot be used: {e.strerror or e}") from None
    if not os.access(home, os.W_OK | os.X_OK):
        raise KitError(f"KIT_HOME {home} is not writable by this user; set KIT_HOME to a folder "
                       "you can write")
    return home


def subdir(name: str) -> Path:
    d = kit_home() / name
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KitError(f"cannot create {d}: {e.strerror or e}") from None
    return d
