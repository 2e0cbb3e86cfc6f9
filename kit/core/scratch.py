"""Where a worker stands: a private folder of this user's outside KIT_HOME, so a lab's code is
handed no path into the store (kit.envs.launch gives it no such variable either).

``kit-UID`` in the system's temporary folder (TMPDIR), where a cluster node's runs already stand
(kit.runs.executing.on_node): each run's folder (``run-PID-...``, its ``work/`` the worker's
working folder), a warm worker's own folder, and the worker code every worker imports. A run's
outputs are moved into the store when it ends; what a killed command left is swept by pid.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from .errors import KitError
from .spools import sweep, sweep_trash

RUN = "run-"  # a run's folder, or a warm worker's: run-PID-...


def root() -> Path:
    """This user's folder in the temporary folder, made private (0700). A link, another user's
    folder or one others may write is refused in one line: a worker imports the code there."""
    d = Path(tempfile.gettempdir()) / f"kit-{os.geteuid()}"
    try:
        d.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise KitError(f"cannot create {d}, where runs' workers stand: {e.strerror or e}") from None
    st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise KitError(
            f"{d}, where kit's workers stand, is not a private folder of this user's "
            "(a link, another user's, or open to others); remove it, or set TMPDIR to "
            "another folder"
        )
    return d


def sweep_runs() -> int:
    """Remove the run folders of commands that no longer run (a kill -9); returns how many."""
    d = root()
    return sweep(d, RUN) + sweep(d, ".tmp-") + sweep_trash(d)
