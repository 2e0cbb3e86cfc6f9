"""Where a bug's traceback goes: a file under $KIT_HOME/logs (else the temporary folder), so the
user sees one line and a bug report has the whole story."""

from __future__ import annotations

import logging
import os
import tempfile
import traceback
import warnings
from datetime import datetime
from importlib.util import find_spec
from pathlib import Path
from typing import TextIO

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


def bug_line(error: BaseException) -> str:
    """The one line a user is shown for an error kit did not expect (a bug), its traceback
    written by log_traceback: the CLI's and the TUI's line alike."""
    return (
        f"internal error: {type(error).__name__}: {error} (a bug in kit; the traceback is "
        f"in {log_traceback(error)})"
    )


# the libraries under a cluster: their messages are the story of a failure, not the user's
# output (a job submission that fails logs a 37-line tornado traceback on stderr by default)
CLUSTER_LOGGERS = (
    "distributed",
    "dask",
    "dask_jobqueue",
    "tornado",
    "asyncio",
    "asyncssh",
    "bokeh",
)


class _ClusterFile(logging.FileHandler):
    """cluster.log, which keeps its level: a Dask cluster's ``silence_logs`` sets every stream
    handler of distributed's logger to ERROR (a local cluster's to CRITICAL) while it runs, as
    meant for a terminal; on this file it had kept nothing but errors."""

    def setLevel(self, level: int | str) -> None:
        pass


def cluster_logs_to_file() -> str:
    """Send Dask's, dask-jobqueue's, tornado's and asyncssh's logging, and the warnings their
    code raises, to $KIT_HOME/logs/cluster.log instead of stderr; returns the file's path. Safe
    to call again (one file handler per logger); kit's own one-line errors stay on stderr."""
    path = kit_home() / "logs" / "cluster.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s")
    loggers = logging.root.manager.loggerDict
    for name in CLUSTER_LOGGERS:
        # distributed puts a stderr handler on each logger its config names (distributed.client,
        # tornado.application, ...): a child keeps none and propagates to its parent's file
        for child in [n for n in loggers if n.startswith(name + ".")]:
            known = loggers[child]
            if isinstance(known, logging.Logger):  # not a PlaceHolder (a name's parent only)
                for h in list(known.handlers):
                    known.removeHandler(h)
        log = logging.getLogger(name)
        for h in list(log.handlers):
            if not (isinstance(h, logging.FileHandler) and h.baseFilename == str(path)):
                log.removeHandler(h)  # distributed's own stderr handler, or a stale KIT_HOME's
                if isinstance(h, logging.FileHandler):
                    h.close()
        if not log.handlers:
            handler = _ClusterFile(path, delay=True)
            handler.setFormatter(fmt)
            log.addHandler(handler)
        log.propagate = False  # the root logger (and Python's last resort) writes to stderr
    _warnings_to_logs()
    return str(path)


_SHOWING: list[object] = []  # the showwarning installed below (installed once)


def _warnings_to_logs() -> None:
    """Show a warning that these libraries raise (distributed's "Port 8787 is already in use",
    a version mismatch, ...) in their log, not on stderr; every other warning as before."""
    if warnings.showwarning in _SHOWING:
        return
    roots = _library_roots()
    shown = warnings.showwarning

    def showwarning(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        whose = next(
            (name for name, root in roots if str(filename).startswith(root)), None
        ) or next((n for n in CLUSTER_LOGGERS if category.__module__.split(".")[0] == n), None)
        if whose is None or file is not None:  # not theirs, or shown where its caller asked
            shown(message, category, filename, lineno, file, line)
            return
        # a logger of its own: a cluster's silence_logs raises the library's level to ERROR
        log = logging.getLogger(f"{whose}.warnings")
        log.setLevel(logging.WARNING)
        log.warning(warnings.formatwarning(message, category, filename, lineno, line).rstrip())

    _SHOWING.append(showwarning)
    warnings.showwarning = showwarning


def _library_roots() -> list[tuple[str, str]]:
    """[(logger name, the folder of its package + os.sep)] of the cluster libraries here."""
    out: list[tuple[str, str]] = []
    for name in CLUSTER_LOGGERS:
        try:
            spec = find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin:
            out.append((name, str(Path(spec.origin).parent) + os.sep))
    return out
