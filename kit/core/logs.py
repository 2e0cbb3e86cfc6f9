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



def bug_line(error: BaseException) -> str:
    """The one line a user is shown for an error kit did not expect (a bug), its traceback
    written by log_traceback: the CLI's and the TUI's line alike."""
    return (f"internal error: {type(error).__name__}: {error} (a bug in kit; the traceback is "
            f"in {log_traceback(error)})")

# the libraries under a cluster: their messages are the story of a failure, not the user's
# output (a job submission that fails logs a 37-line tornado traceback on stderr by default)
CLUSTER_LOGGERS = ("distributed", "dask", "dask_jobqueue", "tornado", "asyncio", "asyncssh",
                   "bokeh")


def cluster_logs_to_file() -> str:
    """Send Dask's, dask-jobqueue's, tornado's and asyncssh's logging to
    $KIT_HOME/logs/cluster.log instead of stderr; returns the file's path. Safe to call again
    (one file handler per logger); kit's own one-line errors stay on stderr."""
    import logging

    path = kit_home() / "logs" / "cluster.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s")
    loggers = logging.root.manager.loggerDict
    for name in CLUSTER_LOGGERS:
        # distributed puts a stderr handler on each logger its config names (distributed.client,
        # tornado.application, ...): a child keeps none and propagates to its parent's file
        for child in [n for n in loggers if n.startswith(name + ".")]:
            for h in list(getattr(loggers[child], "handlers", [])):
                loggers[child].removeHandler(h)
        log = logging.getLogger(name)
        for h in list(log.handlers):
            if not (isinstance(h, logging.FileHandler) and h.baseFilename == str(path)):
                log.removeHandler(h)  # distributed's own stderr handler, or a stale KIT_HOME's
        if not log.handlers:
            handler = logging.FileHandler(path, delay=True)
            handler.setFormatter(fmt)
            log.addHandler(handler)
        log.propagate = False  # the root logger (and Python's last resort) writes to stderr
    return str(path)
