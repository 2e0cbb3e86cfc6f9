"""An OSError that is the machine's state, not a bug: a full disk, a folder this user cannot write."""

from __future__ import annotations

import errno

from .atomic import mount_of


def machine_state(e: OSError, output: str | None = None) -> str | None:
    """The one line every front end says for ``e`` when it is the machine's state (a full disk
    or quota, a folder this user cannot write), naming where; None for any other OSError (a
    bug). ``output``: the file standard output goes to, where a write there failed."""
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and e.filename:
        return (
            f"{e.strerror}: {e.filename} (this user cannot write there; set KIT_HOME to a "
            "folder you can write)"
        )
    if e.errno not in (errno.ENOSPC, errno.EDQUOT):
        return None
    # name where to free space, and never advise moving kit's files (that loses runs, not bytes)
    where = e.filename or output
    return (
        f"{e.strerror} ({where or 'the output'}); free space on "
        f"{mount_of(where) if where else 'the disk of the output'} and run the same "
        "command again (finished runs are stored)"
    )
