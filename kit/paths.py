"""Where kit keeps what it writes: ``$KIT_HOME``, else the platform's user data directory."""

from __future__ import annotations

import os
from pathlib import Path


def kit_home() -> Path:
    env = os.environ.get("KIT_HOME")
    if env:
        home = Path(env).expanduser()
    else:
        import platformdirs

        home = Path(platformdirs.user_data_dir("kit", appauthor=False))
    home.mkdir(parents=True, exist_ok=True)
    return home


def subdir(name: str) -> Path:
    d = kit_home() / name
    d.mkdir(parents=True, exist_ok=True)
    return d
