"""Is a process still running? (Stale claims and temporary folders belong to dead ones.)"""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """True while a process with this id runs on this machine (or we may not signal it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
