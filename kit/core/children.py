"""Child tools (mmseqs, uv) run so that they end with kit, even after a kill -9 of kit.

A tool may start its own children (MMseqs2's workflows run a shell script that runs mmseqs
again; uv runs builds): killing the one process kit started leaves the rest running. So each
tool runs under a tether (``kit.core.tether``): a small process that leads the tool's session,
collects its orphans, and ends the whole family (its group and every process below it) when kit
dies, however it dies, and when the tool ends. kit itself ends the family when the call ends in
an exception (its SIGTERM and SIGINT handlers raise one), and at exit.
"""

from __future__ import annotations

import atexit
import subprocess
import threading
from collections.abc import Mapping
from typing import IO, Any

from . import tether
from .paths import StrPath

_running: set[subprocess.Popen[Any]] = set()  # tethered tools' Popen objects still running
_lock = threading.Lock()


def run(
    cmd: list[Any],
    *,
    cwd: StrPath | None = None,
    env: Mapping[str, str] | None = None,
    stdin: int | IO[Any] | None = subprocess.DEVNULL,
    stdout: int | IO[Any] | None = subprocess.PIPE,
    stderr: int | IO[Any] | None = subprocess.PIPE,
    text: bool = True,
    errors: str | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` of ``cmd``, tethered: the tool and every process it starts end with
    kit. An OSError (FileNotFoundError, PermissionError) when ``cmd[0]`` cannot be run, as
    ``subprocess.run`` would raise; ``subprocess.TimeoutExpired`` past ``timeout``, its family
    killed."""
    cmd = [str(c) for c in cmd]
    tether.check_runnable(cmd[0], cwd, env)
    proc = subprocess.Popen(
        tether.argv(cmd),
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        text=text,
        errors=errors,
        start_new_session=True,
    )
    with _lock:
        _running.add(proc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        tether.end(proc)
        proc.communicate()
        raise subprocess.TimeoutExpired(cmd, timeout or 0.0) from None  # set: it raised
    except BaseException:  # an interrupt, SIGTERM (kit.cli raises one): the family goes
        tether.end(proc)
        proc.wait()
        raise
    finally:  # ended, the tether left nothing behind (it ends the family before it exits)
        with _lock:
            _running.discard(proc)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@atexit.register
def _end_all() -> None:
    """At exit, the tools still running (a thread's, when the main thread ended)."""
    with _lock:
        left = list(_running)
    for proc in left:
        tether.end(proc)
