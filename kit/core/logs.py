"""Where a bug's traceback goes: a file under $KIT_HOME/logs (else the temporary folder), so the
user sees one line and a bug report has the whole story."""

from __future__ import annotations

import tempfile
import traceback
from datetime import datetime
from pathlib import Path

from .paths import kit_home


def log_traceback(error: BaseException) -> str:
    """Write the traceback where a bug report can find it; returns the file's path."""
    text = "".join(traceback.format_exception(error))
    name = f"kit-error-{datetime.now():%Y%m%d-%H%M%S}.log"
    for folder in (lambda: kit_home() / "logs", tempfile.gettempdir):
        try:
            path = Path(folder()) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            return str(path)
        except Exception:  # noqa: BLE001 - KIT_HOME may be the problem: try the next folder
            continue
    return "nowhere (no writable folder)"
