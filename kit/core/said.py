"""The one line a user reads for any exception, and its exit status: the CLI's and the TUI's."""

from __future__ import annotations

import errno
import tempfile
from dataclasses import dataclass
from typing import Literal

from .atomic import mount_of
from .errors import KitError
from .logs import bug_line
from .paths import named_home

RESUMES = "finished runs are stored, run the same command to resume"


@dataclass(frozen=True)
class Said:
    """``text``: the line, without a front end's lead (the CLI's "kit: error: ", a toast's
    red); ``exit_code``: the CLI's status for it; ``kind``: "error" (the user's or the
    machine's to fix), "interrupt", or "bug" (an exception kit did not expect, whose
    traceback's log file ``text`` names: the TUI ends on one)."""

    text: str
    exit_code: int = 1
    kind: Literal["error", "interrupt", "bug"] = "error"

    @property
    def bug(self) -> bool:
        return self.kind == "bug"

    @property
    def line(self) -> str:
        """The CLI's line on stderr."""
        return f"kit: error: {self.text}" if self.kind == "error" else f"kit: {self.text}"


def translate(e: BaseException, output: str | None = None) -> Said:
    """What the user reads for ``e``: a KitError's own line; a full disk, a read-only or
    another user's folder, a missing file (an OSError that is the machine's state) named with
    its path; no memory left; an interrupt; anything else a bug, its traceback logged.
    ``output``: the file standard output goes to, named where a write there filled the disk."""
    if isinstance(e, KitError):
        return Said(str(e), e.exit_code)
    if isinstance(e, KeyboardInterrupt):
        return Said(f"interrupted; {RESUMES}", 130, "interrupt")
    if isinstance(e, MemoryError) or (isinstance(e, OSError) and e.errno == errno.ENOMEM):
        return Said(
            "out of memory: this machine (or a limit set on kit) had no more for it; free "
            "memory or ask for less, and run the same command again (finished runs are stored)"
        )
    said = _machine_state(e, output) if isinstance(e, OSError) else None
    if said is not None:
        return Said(said)
    return Said(bug_line(e), 1, "bug")


def _machine_state(e: OSError, output: str | None = None) -> str | None:
    """The one line for ``e`` when it is the machine's state (a full disk or quota, a folder
    this user cannot write, a file or folder missing or of the other kind), naming where; None
    for any other OSError (a bug)."""
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and e.filename:
        return (
            f"{e.strerror}: {e.filename} (this user cannot write there; set KIT_HOME to a "
            "folder you can write)"
        )
    if e.errno in _WRONG_PATH and e.filename:
        return f"{e.strerror}: {e.filename}{_WRONG_PATH[e.errno]}"
    if e.errno not in (errno.ENOSPC, errno.EDQUOT):
        return None
    # name where to free space, and never advise moving kit's files (that loses runs, not bytes)
    where = e.filename or output
    if where is None:  # a write that did not say its file: kit writes in KIT_HOME and TMPDIR
        disks = dict.fromkeys([mount_of(named_home()), mount_of(tempfile.gettempdir())])
        return (
            f"{e.strerror}; free space on {' or '.join(map(str, disks))} (where KIT_HOME and "
            "the temporary folder are) and run the same command again (finished runs are stored)"
        )
    return (
        f"{e.strerror} ({where}); free space on {mount_of(where)} and run the same command "
        "again (finished runs are stored)"
    )


# a path that is not what kit needs there: what the user can do about it
_WRONG_PATH = {
    errno.ENOENT: "",
    errno.ENOTDIR: " (a file is where kit needs a folder: KIT_HOME, or a path given to kit)",
    errno.EISDIR: " (a folder is where kit needs a file)",
}
